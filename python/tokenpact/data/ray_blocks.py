"""Blocks of documents for the Ray engine's counting and MinHash steps.

A block is a run of consecutive documents packed as ONE UTF-8 buffer plus ``n + 1``
byte offsets (two numpy arrays). The object store holds them as two flat buffers that a
worker reads in place (no per-document objects on either side), and the worker hands
them straight to a native function that releases the GIL:

* :func:`count_block` returns the block's pre-token counts as a flat table (pieces in
  one buffer, offsets, counts) plus the corpus totals; the driver adds all tables in
  Rust (:func:`sum_counts`) and builds one :class:`~tokenpact.train.PretokenCounts`;
* :func:`band_keys_block` returns the block's LSH band keys ``[n, bands]`` (uint64).

Blocks are cut by size (about :data:`BLOCKS_PER_CPU` per CPU, so the two workers of a
small cluster finish together) and run as plain Ray tasks, submitted while the driver
packs the next block. ``ray_data=True`` runs the same blocks through Ray Data
``map_batches`` instead (the comparison in docs/PERFORMANCE.md). Results are taken by
block index, never by arrival, so they equal the local engine's.

This module is what a worker imports: numpy, the native extension and nothing else.
"""

from __future__ import annotations

import pickle
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..errors import ConfigError, InvalidInputError

BLOCKS_PER_CPU = 3
# A block's size bound (characters): what a worker holds at once on a large corpus.
MAX_BLOCK_CHARS = 32_000_000
_DIGEST_MOD = 1 << 256

Block = tuple[NDArray[np.uint8], NDArray[np.uint64]]

# ------------------------------------------------------------------ worker side


def count_block(block: Block, pattern: str, name: str | None) -> tuple[Any, ...]:
    """``(pieces, offsets, counts, documents, bytes, digest)`` of one block (one thread)."""
    buf, offsets = block
    return tuple(_native.count_pretokens_block(buf, offsets, pattern, name, 1))


def band_keys_block(
    block: Block, shingle: tuple[str, int, str], perms: tuple[Any, Any], bands: int, rows: int
) -> NDArray[np.uint64]:
    """LSH band keys ``[n, bands]`` of one block's documents (one thread)."""
    buf, offsets = block
    kind, n, scheme = shingle
    keys: NDArray[np.uint64] = _native.minhash_band_keys_block(
        buf, offsets, kind, n, scheme, perms[0], perms[1], bands, rows, 1
    )
    return keys


# ------------------------------------------------------------------ driver side


def block_bounds(
    texts: Sequence[str], *, parts: int, max_docs: int | None = None
) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of about equal size in characters
    (documents differ in length by orders of magnitude, so equal counts of documents
    would leave one worker waiting): ``parts`` of them, more when a block would exceed
    :data:`MAX_BLOCK_CHARS`, none over ``max_docs`` documents."""
    n = len(texts)
    max_docs = max(n, 1) if max_docs is None else max_docs
    if isinstance(max_docs, bool) or not isinstance(max_docs, int) or max_docs < 1:
        raise ConfigError(f"block_docs must be a positive integer, got {max_docs!r}")
    if n == 0:
        return []
    sizes = np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=n)
    ends = np.cumsum(sizes)
    parts = max(parts, -(-int(ends[-1]) // MAX_BLOCK_CHARS))
    targets = ends[-1] * np.arange(1, max(parts, 1)) / max(parts, 1)
    cuts = np.unique(np.concatenate(([0, n], np.searchsorted(ends, targets) + 1)))
    bounds: list[tuple[int, int]] = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        pieces = -(-(b - a) // max_docs)  # equal sub-blocks under the document limit
        edges = np.linspace(a, b, pieces + 1).round().astype(np.int64).tolist()
        bounds.extend((s, e) for s, e in zip(edges[:-1], edges[1:], strict=True) if e > s)
    return bounds


def pack_block(texts: Sequence[str], start: int, stop: int) -> Block:
    """Documents ``texts[start:stop]`` as one UTF-8 buffer and ``n + 1`` byte offsets."""
    block = texts[start:stop]
    try:
        buf, offsets = _native.pack_texts(block if isinstance(block, list) else list(block))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"a text contains a lone surrogate ({exc.object[exc.start]!r}); decode the "
            "source with errors='replace' or clean it"
        ) from None
    except TypeError:
        i = next((i for i in range(start, stop) if not isinstance(texts[i], str)), None)
        if i is None:
            raise
        raise InvalidInputError(f"text {i} is {type(texts[i]).__name__}, not str") from None
    return buf, offsets


@cache
def _remote(fn: Callable[..., Any]) -> Any:
    import ray

    return ray.remote(num_cpus=1)(fn)


def run_blocks(
    ray: Any,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    texts: Sequence[str],
    *,
    block_docs: int | None,
    ray_data: bool = False,
) -> Iterator[tuple[int, int, Any]]:
    """``(start, stop, fn(block, *args))`` for each block, in block order.

    Blocks are packed one at a time and submitted at once, so packing overlaps the
    workers' work; at most two blocks per CPU wait in the object store.
    """
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    bounds = block_bounds(texts, parts=BLOCKS_PER_CPU * cpus, max_docs=block_docs)
    if ray_data:
        yield from _run_on_ray_data(ray, fn, args, texts, bounds)
        return
    task = _remote(fn)
    pending: deque[tuple[int, int, Any]] = deque()
    for start, stop in bounds:
        pending.append((start, stop, task.remote(pack_block(texts, start, stop), *args)))
        if len(pending) >= 2 * cpus:
            start, stop, ref = pending.popleft()
            yield start, stop, ray.get(ref)
    while pending:
        start, stop, ref = pending.popleft()
        yield start, stop, ray.get(ref)


def _run_on_ray_data(
    ray: Any,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    texts: Sequence[str],
    bounds: list[tuple[int, int]],
) -> Iterator[tuple[int, int, Any]]:
    """The same blocks as a Ray Data dataset (one row per block, the buffers as Arrow
    binary values without a copy), ``fn`` in ``map_batches``; results pickled per row."""
    import pyarrow as pa

    def binary(data: NDArray[Any]) -> pa.Array:
        ends = np.asarray([0, data.nbytes], dtype=np.int64)
        return pa.Array.from_buffers(
            pa.large_binary(), 1, [None, pa.py_buffer(ends), pa.py_buffer(data)]
        )

    tables = []
    for k, (start, stop) in enumerate(bounds):
        buf, offsets = pack_block(texts, start, stop)
        tables.append(pa.table({"k": [k], "buf": binary(buf), "offsets": binary(offsets)}))

    def apply(batch: pa.Table) -> pa.Table:
        out = []
        for row in range(batch.num_rows):
            buf = np.frombuffer(batch["buf"][row].as_buffer(), dtype=np.uint8)
            offsets = np.frombuffer(batch["offsets"][row].as_buffer(), dtype=np.uint64)
            out.append(pickle.dumps(fn((buf, offsets), *args), protocol=5))
        return pa.table({"k": batch["k"], "result": pa.array(out, type=pa.large_binary())})

    ds = ray.data.from_arrow(tables).map_batches(
        apply, batch_format="pyarrow", batch_size=None, num_cpus=1
    )
    ds.context.enable_progress_bars = False
    ds.context.print_on_execution_start = False
    ds.context.enable_auto_log_stats = False
    results: dict[int, Any] = {}
    for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None):
        for k, blob in zip(batch["k"].to_pylist(), batch["result"].to_pylist(), strict=True):
            results[k] = pickle.loads(blob)
    for k, (start, stop) in enumerate(bounds):
        yield start, stop, results[k]


def sum_counts(tables: list[tuple[Any, ...]]) -> tuple[list[bytes], Any, int, int, str]:
    """The blocks' count tables added (in Rust, sorted by piece) and their totals:
    ``(pieces, counts, documents, bytes, digest)`` as ``count_pretokens`` returns them."""
    pieces, counts = _native.sum_count_tables(
        [t[0] for t in tables], [t[1] for t in tables], [t[2] for t in tables], None
    )
    digest = sum(int(t[5], 16) for t in tables) % _DIGEST_MOD
    documents = sum(int(t[3]) for t in tables)
    nbytes = sum(int(t[4]) for t in tables)
    return pieces, counts, documents, nbytes, f"{digest:064x}"
