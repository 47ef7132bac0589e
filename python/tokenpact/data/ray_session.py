"""The driver's Ray connection and the encoder actors kept on it.

:func:`connect` returns the ``ray`` module connected to a cluster (a running
``ray.init`` is reused; ``address`` names a cluster; else a local instance starts). Every
Ray step of :mod:`tokenpact.data` connects through it, and all but the shard encoder with
``keep_workers=True`` first stop the kept encoder actors (:func:`release_ray_workers`),
which would otherwise hold the CPUs the step needs. The kept actor pools live here, so
the steps and the Ray chunk source (:mod:`tokenpact.data.ray_encoder`) share them
without importing each other.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import ConfigError

# Actor pools kept by ``keep_workers=True``: (session, tokenizer hash, workers) -> actors.
_POOLS: dict[tuple[str, str, int], list[Any]] = {}
_POOLS_LOCK = threading.Lock()


def connect(address: str | None = None, num_cpus: int | None = None, *, keep: bool = False) -> Any:
    """The ``ray`` module, connected; ``keep=False`` releases the kept encoder actors."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigError(
            "engine='ray' needs Ray Data; pip install 'tokenpact[ray]' (ray[data])"
        ) from None
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=num_cpus if address is None else None,
            include_dashboard=False,
            log_to_driver=False,
        )
    if not keep:
        release_ray_workers()  # a kept encoder pool would hold the CPUs this step needs
    return ray


def session(ray: Any) -> str:
    """This driver's Ray job on this cluster: job IDs restart at 1 in a new cluster (a
    ``ray.shutdown()`` then ``ray.init()``), the driver's node ID does not repeat, so
    nothing cached for a cluster that is gone is handed to the next one."""
    context = ray.get_runtime_context()
    return f"{context.get_node_id()}/{context.get_job_id()}"


def release_ray_workers() -> None:
    """Stop the encoder actors kept by ``ray_options={"keep_workers": True}``."""
    with _POOLS_LOCK:
        pools = list(_POOLS.items())
        _POOLS.clear()
    if pools:
        import ray

        current = session(ray) if ray.is_initialized() else None
        for (pool_session, _, _), actors in pools:
            if pool_session == current:  # the others died with their cluster
                for actor in actors:
                    ray.kill(actor)
