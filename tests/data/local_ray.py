"""The local Ray instance the Ray tests start."""

from __future__ import annotations


def start_local_ray() -> None:
    """A 2-CPU Ray instance on loopback, as the Ray tests use it (the caller shuts it down)."""
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=200_000_000,
        _node_ip_address="127.0.0.1",
    )
