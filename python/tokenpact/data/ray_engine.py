"""The Ray Data engine: the same steps as the local engine, spread over a Ray cluster.

* pre-token counting for BPE training: each block counts its documents in Rust; the
  driver adds the counts (commutative) and trains once, so the merges equal local ones;
* MinHash signatures and LSH band keys: computed per block, returned by row index; the
  driver groups and verifies candidates exactly as the local engine does;
* shard encoding (:mod:`tokenpact.data.ray_encoder`): Ray tasks encode the local
  engine's chunks with the tokenizer their worker process holds (shipped once as its
  pickled spec, checked against the semantic hash); the driver's writer thread writes
  the returned IDs in chunk order with the local engine's writer. ``keep_workers=True``
  uses a kept pool of dedicated actors instead; the other Ray steps release it first,
  so idle encoders never hold the CPUs they need;
* cleaning (:mod:`tokenpact.data.cleaning`): blocks of documents as Ray tasks sharing
  the prepared step workers through the object store, results taken in block order.

Results are byte-identical to ``engine="local"`` because every unit of work (a document,
a shard) is computed by the same function and ordered by index, never by arrival.

Connect to a running cluster with ``ray_options={"address": "ray://head:10001"}``
(CLI ``--engine ray --address ...``); without an address a running ``ray.init`` is
reused, else a local Ray instance is started. Every function takes the same options
(``address``, ``num_cpus``, ``block_docs``, ``workers``, ``keep_workers``) and ignores
those it does not use, so one ``ray_options`` dict serves the whole pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from .minhash import MinHashParams
from .ray_encoder import RayShardEncoder, ray_encode_shards, release_ray_workers

__all__ = [
    "RayShardEncoder",
    "ray_band_keys",
    "ray_count_pretokens",
    "ray_encode_shards",
    "ray_map_blocks",
    "release_ray_workers",
]

DEFAULT_BLOCK_DOCS = 4096


def _ray(address: str | None = None, num_cpus: int | None = None, *, keep: bool = False) -> Any:
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


def _text_dataset(ray: Any, texts: Sequence[str], block_docs: int) -> Any:
    """``{"i", "text"}`` rows in blocks of ``block_docs``, one Arrow table per block
    (no repartition: that would be an all-to-all shuffle through the object store)."""
    import pyarrow as pa

    tables = [
        pa.table(
            {
                "i": np.arange(a, min(a + block_docs, len(texts)), dtype=np.int64),
                "text": pa.array(texts[a : a + block_docs], type=pa.large_string()),
            }
        )
        for a in range(0, len(texts), block_docs)
    ]
    return ray.data.from_arrow(tables)


def _quiet(ds: Any) -> Any:
    """No progress bars or start banner for this dataset (the user's context is kept)."""
    ds.context.enable_progress_bars = False
    ds.context.print_on_execution_start = False
    ds.context.enable_auto_log_stats = False
    return ds


def ray_band_keys(
    texts: Sequence[str],
    params: MinHashParams,
    bands: int,
    rows: int,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    block_docs: int = DEFAULT_BLOCK_DOCS,
    workers: int | None = None,
    keep_workers: bool = False,
) -> NDArray[np.uint64]:
    """LSH band keys ``[len(texts), bands]`` computed on Ray, rows in input order."""
    ray = _ray(address, num_cpus)
    if not texts:
        return np.zeros((0, bands), dtype=np.uint64)

    def keys_of(batch: dict[str, Any]) -> dict[str, Any]:
        from tokenpact import _native
        from tokenpact.data.minhash import minhash_signatures

        sigs = minhash_signatures(list(batch["text"]), params, threads=1)
        return {"i": batch["i"], "keys": _native.lsh_band_keys(sigs, bands, rows, 1)}

    ds = _text_dataset(ray, texts, block_docs).map_batches(
        keys_of, batch_format="numpy", batch_size=None, num_cpus=1
    )
    _quiet(ds)
    keys = np.zeros((len(texts), bands), dtype=np.uint64)
    for batch in ds.iter_batches(batch_format="numpy", batch_size=None):
        keys[np.asarray(batch["i"])] = np.asarray(batch["keys"], dtype=np.uint64)
    return keys


def ray_count_pretokens(
    texts: Sequence[str],
    *,
    pattern: str = "gpt4",
    address: str | None = None,
    num_cpus: int | None = None,
    block_docs: int = DEFAULT_BLOCK_DOCS,
    workers: int | None = None,
    keep_workers: bool = False,
) -> Iterator[Any]:
    """Per-block :class:`~tokenpact.train.PretokenCounts`, counted on Ray."""
    import pyarrow as pa

    ray = _ray(address, num_cpus)

    def count(batch: pa.Table) -> pa.Table:
        from tokenpact.train import count_pretokens

        c = count_pretokens(batch.column("text").to_pylist(), pattern=pattern, threads=1)
        return pa.table(
            {
                "pieces": pa.array([list(c.pieces)], type=pa.list_(pa.binary())),
                "counts": pa.array([c.counts], type=pa.list_(pa.uint64())),
                "documents": [c.documents],
                "bytes": [c.bytes],
                "digest": [c.digest],
            }
        )

    from ..train import PretokenCounts

    ds = _text_dataset(ray, texts, block_docs).map_batches(
        count, batch_format="pyarrow", batch_size=None, num_cpus=1
    )
    _quiet(ds)
    for batch in ds.iter_batches(batch_format="pyarrow", batch_size=1):
        for row in batch.to_pylist():
            yield PretokenCounts(
                pattern=pattern,
                pieces=tuple(row["pieces"]),
                counts=np.asarray(row["counts"], dtype=np.uint64),
                documents=row["documents"],
                bytes=row["bytes"],
                digest=row["digest"],
            )


def ray_map_blocks(
    fn: Any,
    shared: Any,
    blocks: Sequence[Any],
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    workers: int | None = None,
    block_docs: int | None = None,
    in_flight: int | None = None,
    keep_workers: bool = False,
) -> Iterator[Any]:
    """``fn(shared, block)`` for each block as Ray tasks; results in block order.

    ``shared`` (prepared cleaning workers, an n-gram index) is put in the object store
    once; every task reads the same copy. At most ``in_flight`` tasks (default: twice the
    cluster's CPUs) are pending, so the object store never holds the whole corpus, and
    results are yielded in submission order, never by which worker finished first.
    """
    from collections import deque

    ray = _ray(address, num_cpus)
    if not blocks:
        return
    limit = in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    shared_ref = ray.put(shared)
    task = ray.remote(num_cpus=1)(fn)
    pending: deque[Any] = deque()
    for block in blocks:
        pending.append(task.remote(shared_ref, block))
        if len(pending) >= limit:
            yield ray.get(pending.popleft())
    while pending:
        yield ray.get(pending.popleft())
