"""The data journey with ``--engine ray`` (a 2-CPU loopback instance): every file the
steps write (cleaned records, their manifest, deduplicated records, shards and
``dataset.json``) is byte-identical to the local journey's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_data_journey import _walk

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A 2-CPU loopback Ray instance, as tests/data/local_ray.py starts it."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=200_000_000,
        _node_ip_address="127.0.0.1",
    )
    yield
    ray.shutdown()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.usefixtures("cluster")
def test_ray_journey_equals_local(tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "ray").mkdir()
    local = _walk(tmp_path / "local", engine="local")
    ray = _walk(tmp_path / "ray", engine="ray")
    a, b = _tree(local["root"]), _tree(ray["root"])
    assert set(a) == set(b)
    different = sorted(name for name in a if a[name] != b[name])
    assert different == [], different
