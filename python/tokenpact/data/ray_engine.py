"""The Ray engine: the same steps as the local engine, spread over a Ray cluster.

* pre-token counting for BPE training: blocks of documents, each one UTF-8 buffer +
  offsets (:mod:`tokenpact.data.ray_blocks`), counted in Rust by Ray tasks and returned
  as flat tables; the driver adds them in Rust (commutative) and trains once, so the
  merges equal local ones;
* MinHash signatures and LSH band keys: computed per block in one native call, placed
  by row index; the driver groups and verifies candidates exactly as the local engine
  does. ``ray_data=True`` runs both through Ray Data ``map_batches`` instead of tasks;
* shard encoding (:mod:`tokenpact.data.ray_encoder`, the Ray chunk source of
  ``encode_dataset``): Ray tasks encode the local engine's chunks with the tokenizer
  their worker process holds (shipped once as its pickled spec, checked against the
  semantic hash); the driver's writer thread writes the returned IDs in chunk order
  with the local engine's writer. ``keep_workers=True`` uses a kept pool of dedicated
  actors instead; the other Ray steps release it first (:mod:`tokenpact.data.ray_session`),
  so idle encoders never hold the CPUs they need;
* cleaning (:mod:`tokenpact.data.cleaning`): blocks of documents as Ray tasks sharing
  the prepared step workers through the object store, results taken in block order.

Results are byte-identical to ``engine="local"`` because every unit of work (a document,
a shard) is computed by the same function and ordered by index, never by arrival.

Connect to a running cluster with ``ray_options={"address": "ray://head:10001"}``
(CLI ``--engine ray --address ...``); without an address a running ``ray.init`` is
reused, else a local Ray instance is started. Every function takes the same options
(``address``, ``num_cpus``, ``block_docs``, ``ray_data``, ``workers``, ``keep_workers``)
and ignores those it does not use, so one ``ray_options`` dict serves the whole pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from .minhash import MinHashParams
from .ray_encoder import RayShardEncoder, ray_encode_shards
from .ray_session import connect as _ray
from .ray_session import release_ray_workers

__all__ = [
    "RayShardEncoder",
    "ray_band_keys",
    "ray_count_pretokens",
    "ray_encode_shards",
    "ray_map_blocks",
    "release_ray_workers",
]


def ray_band_keys(
    texts: Sequence[str],
    params: MinHashParams,
    bands: int,
    rows: int,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    block_docs: int | None = None,
    workers: int | None = None,
    keep_workers: bool = False,
    ray_data: bool = False,
) -> NDArray[np.uint64]:
    """LSH band keys ``[len(texts), bands]`` computed on Ray, rows in input order.

    Each block of documents travels as one UTF-8 buffer + offsets; a worker computes its
    signatures and band keys in one native call (:mod:`tokenpact.data.ray_blocks`).
    """
    from .ray_blocks import band_keys_block, run_blocks

    ray = _ray(address, num_cpus)
    keys = np.zeros((len(texts), bands), dtype=np.uint64)
    a, b = params.permutations
    args = ((params.shingle, params.n, params.scheme), (a, b), bands, rows)
    for start, stop, block_keys in run_blocks(
        ray, band_keys_block, args, texts, block_docs=block_docs, ray_data=ray_data
    ):
        keys[start:stop] = block_keys
    return keys


def ray_count_pretokens(
    texts: Sequence[str],
    *,
    pattern: str = "gpt4",
    address: str | None = None,
    num_cpus: int | None = None,
    block_docs: int | None = None,
    workers: int | None = None,
    keep_workers: bool = False,
    ray_data: bool = False,
) -> Iterator[Any]:
    """The :class:`~tokenpact.train.PretokenCounts` of ``texts``, counted on Ray.

    Each block is counted by a worker in Rust and comes back as a flat table; the driver
    adds the tables in Rust and yields ONE ``PretokenCounts`` (equal to
    ``count_pretokens(texts)``), so training reads the same input as a local run.
    """
    from ..patterns import resolve_pattern
    from ..train import PretokenCounts
    from .ray_blocks import count_block, run_blocks, sum_counts

    name, source = resolve_pattern(pattern)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ConfigError(f"document {i} is {type(t).__name__}, not str")
    ray = _ray(address, num_cpus)
    tables = [
        table
        for _, _, table in run_blocks(
            ray, count_block, (source, name), texts, block_docs=block_docs, ray_data=ray_data
        )
    ]
    pieces, counts, documents, nbytes, digest = sum_counts(tables)
    yield PretokenCounts(
        pattern=pattern,
        pieces=tuple(pieces),
        counts=np.asarray(counts, dtype=np.uint64),
        documents=documents,
        bytes=nbytes,
        digest=digest,
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
    ray_data: bool = False,
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
