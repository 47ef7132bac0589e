"""The Ray Data engine: the same steps as the local engine, spread over a Ray cluster.

* pre-token counting for BPE training: each block counts its documents in Rust; the
  driver adds the counts (commutative) and trains once, so the merges equal local ones;
* MinHash signatures and LSH band keys: computed per block, returned by row index; the
  driver groups and verifies candidates exactly as the local engine does;
* shard encoding: a pool of actors, each loading the tokenizer once (from the bytes of
  its ``tokenpact.json``, checked against the semantic hash) and encoding chunks of
  documents (the same chunks as the local engine); the driver's writer thread writes
  the returned IDs in chunk order with the local engine's writer. ``keep_workers=True``
  keeps the pool (per tokenizer) for the next ``encode_dataset`` call; the other Ray
  steps release it first, so idle encoders never hold the CPUs they need;
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

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from .documents import Document
from .encode import EncodeOptions, encode_chunk, load_tokenizer_files, tokenizer_files
from .minhash import MinHashParams
from .shard_writer import EncodedChunk, chunk_bounds

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


class _ChunkEncoder:
    """A Ray actor: loads the tokenizer once, then encodes chunks of documents."""

    def __init__(self, files: dict[str, bytes], expected_hash: str) -> None:
        self.tok = load_tokenizer_files(files, expected_hash)

    def encode(self, shard: int, texts: list[str], options: dict[str, Any]) -> EncodedChunk:
        return encode_chunk(self.tok, texts, EncodeOptions(**options), shard=shard)


# Encoder pools kept by ``keep_workers=True``: (Ray job, tokenizer hash, workers) -> actors.
_POOLS: dict[tuple[str, str, int], list[Any]] = {}
_POOLS_LOCK = threading.Lock()
# The tokenizer's files per semantic hash: serializing a trained tokenizer costs about a
# second, and a driver that encodes several splits needs it once.
_TOKENIZER_FILES: dict[str, dict[str, bytes]] = {}


def release_ray_workers() -> None:
    """Stop the encoder actors kept by ``ray_options={"keep_workers": True}``."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    if pools:
        import ray

        for actors in pools:
            for actor in actors:
                ray.kill(actor)


def _encoder_pool(ray: Any, tokenizer: Any, workers: int, keep: bool) -> list[Any]:
    key = (ray.get_runtime_context().get_job_id(), tokenizer.semantic_hash, workers)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
    if pool is not None:
        return pool
    files = _TOKENIZER_FILES.get(tokenizer.semantic_hash)
    if files is None:
        files = _TOKENIZER_FILES[tokenizer.semantic_hash] = tokenizer_files(tokenizer)
    files_ref = ray.put(files)
    actor_cls = ray.remote(num_cpus=1)(_ChunkEncoder)
    pool = [actor_cls.remote(files_ref, tokenizer.semantic_hash) for _ in range(workers)]
    if keep:
        with _POOLS_LOCK:
            _POOLS[key] = pool
    return pool


def ray_encode_shards(
    docs: Sequence[Document],
    bounds: Sequence[tuple[int, int]],
    tokenizer: Any,
    opts: EncodeOptions,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    workers: int = 2,
    block_docs: int | None = None,
    keep_workers: bool = False,
) -> Iterator[tuple[int, EncodedChunk]]:
    """Encode every shard's chunks on ``workers`` actors; yields ``(shard, chunk)`` in
    order.

    The chunks are the local engine's (:func:`~tokenpact.data.shard_writer.chunk_bounds`
    of each shard), dealt round-robin with up to two per actor in flight (an actor runs
    its calls one after the other, so the next one is already waiting), and taken back
    in submission order: the driver writes chunk ``j`` after chunk ``j - 1`` whichever
    actor finished first.
    """
    ray = _ray(address, num_cpus, keep=True)
    if not bounds:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    # An actor reserves a CPU: more actors than the cluster has CPUs would wait forever.
    workers = min(workers, max(1, int(ray.cluster_resources().get("CPU", 1))))
    options = asdict(opts)
    if options["threads"] is None:
        options["threads"] = 1  # one core per actor: Ray schedules the cores
    # Pools are kept only when asked: idle actors hold their CPUs.
    with _POOLS_LOCK:
        stale = [k for k in _POOLS if k[1] != tokenizer.semantic_hash or k[2] != workers]
    if stale:
        release_ray_workers()
    pool = _encoder_pool(ray, tokenizer, workers, keep_workers)
    options_ref = ray.put(options)
    pending: deque[Any] = deque()
    j = 0
    try:
        for k, (a, b) in enumerate(bounds):
            texts = [d.text for d in docs[a:b]]
            for c0, c1 in chunk_bounds(texts, opts.chunk_chars):
                actor = pool[j % len(pool)]
                j += 1
                pending.append((k, actor.encode.remote(k, texts[c0:c1], options_ref)))
                while len(pending) >= 2 * len(pool):
                    shard, ref = pending.popleft()
                    yield shard, ray.get(ref)
        while pending:
            shard, ref = pending.popleft()
            yield shard, ray.get(ref)
    except BaseException:
        if keep_workers:  # a failed or abandoned pool is not handed to the next call
            release_ray_workers()
        raise
    finally:
        if not keep_workers:
            for actor in pool:
                ray.kill(actor)


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
