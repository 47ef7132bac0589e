"""Shard encoding on Ray: the tokenizer travels once as its pickled spec, and Ray's own
worker processes keep it.

The driver puts the tokenizer's :class:`~tokenpact.core.TokenizerSpec` in the object
store once per tokenizer (~0.1 MB pickled for a 16k BPE, milliseconds; a
``tokenpact.json`` round trip took 1-2 s). Each chunk of documents (the local engine's
:func:`~tokenpact.data.shard_writer.chunk_bounds`) is encoded by a Ray task that reuses
the tokenizer its worker process already holds, keyed by semantic hash; a worker that
has none rebuilds it from the spec and refuses it unless its semantic hash equals the
driver's. Ray keeps its worker processes between tasks and calls, so after the first
call a new ``encode_dataset`` starts no process and ships no tokenizer, and idle
workers hold no CPU.

:class:`RayShardEncoder` starts before the driver reads and sorts the documents: it
connects, ships the spec and sends one warm-up task per worker, so worker start-up and
tokenizer loading overlap the driver's own work.

``keep_workers=True`` uses dedicated actors instead, kept (per tokenizer) for the next
call; they hold their CPUs, so the other Ray steps release them first
(:func:`release_ray_workers`).

This module is what a worker imports: it keeps its imports light (no readers, cleaning
or trainers; see the lazy ``tokenpact.data`` package).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ContractError
from .chunk_encoding import EncodeOptions, encode_chunk
from .documents import Document
from .ray_session import _POOLS, _POOLS_LOCK, connect, release_ray_workers, session
from .shard_writer import EncodedChunk, chunk_bounds

if TYPE_CHECKING:
    from ..core import Tokenizer, TokenizerSpec
    from .encode_plan import EncodePlan

__all__ = ["RayShardEncoder", "ray_encode_shards", "release_ray_workers"]

# ------------------------------------------------------------------ worker side
# The tokenizer this worker process holds: (semantic hash, Tokenizer). One is enough for a
# pipeline that encodes its splits with one tokenizer, and bounds a worker's memory.
_WORKER_TOKENIZER: tuple[str, Tokenizer] | None = None


def tokenizer_from_spec(spec: TokenizerSpec, expected_hash: str) -> Tokenizer:
    """The tokenizer that runs ``spec``; refused unless its semantic hash is
    ``expected_hash`` (the driver's), so a worker never encodes with another one."""
    from ..core import Tokenizer

    tok = Tokenizer(spec)
    if tok.semantic_hash != expected_hash:
        raise ContractError(
            f"the worker's tokenizer hash {tok.semantic_hash} differs from the driver's "
            f"{expected_hash}; install the same tokenpact version on every node"
        )
    return tok


def worker_tokenizer(expected_hash: str, spec_box: Sequence[Any]) -> Tokenizer:
    """This process's tokenizer with ``expected_hash``, built from the spec in
    ``spec_box[0]`` (an object reference, boxed so that Ray fetches it only on a miss)."""
    global _WORKER_TOKENIZER
    held = _WORKER_TOKENIZER
    if held is not None and held[0] == expected_hash:
        return held[1]
    import ray

    try:
        spec = ray.get(spec_box[0])
    except Exception as exc:  # unpickling a spec of another tokenpact version
        raise ContractError(
            f"the worker cannot read the driver's tokenizer spec ({exc}); install the "
            "same tokenpact version on every node"
        ) from None
    tok = tokenizer_from_spec(spec, expected_hash)
    _WORKER_TOKENIZER = (expected_hash, tok)
    return tok


def _warm(expected_hash: str, spec_box: Sequence[Any]) -> int:
    worker_tokenizer(expected_hash, spec_box)
    return os.getpid()


def _encode(
    expected_hash: str,
    spec_box: Sequence[Any],
    shard: int,
    texts: list[str],
    options: dict[str, Any],
) -> EncodedChunk:
    tok = worker_tokenizer(expected_hash, spec_box)
    return encode_chunk(tok, texts, EncodeOptions(**options), shard=shard)


class _ChunkEncoder:
    """A dedicated Ray actor (``keep_workers=True``): holds one tokenizer for its life."""

    def __init__(self, spec: TokenizerSpec, expected_hash: str) -> None:
        self.tok = tokenizer_from_spec(spec, expected_hash)

    def encode(self, shard: int, texts: list[str], options: dict[str, Any]) -> EncodedChunk:
        return encode_chunk(self.tok, texts, EncodeOptions(**options), shard=shard)


# ------------------------------------------------------------------ driver side
# The spec in the object store per (session, tokenizer hash), so a driver that encodes
# several splits puts it once; the last few tokenizers only. (The kept actor pools are
# :mod:`tokenpact.data.ray_session`'s: every Ray step releases them.)
_SPEC_REFS: dict[tuple[str, str], Any] = {}
_MAX_SPEC_REFS = 4


def _spec_ref(ray: Any, tokenizer: Tokenizer) -> Any:
    key = (session(ray), tokenizer.semantic_hash)
    with _POOLS_LOCK:
        ref = _SPEC_REFS.get(key)
        if ref is None:
            while len(_SPEC_REFS) >= _MAX_SPEC_REFS:
                _SPEC_REFS.pop(next(iter(_SPEC_REFS)))
            ref = _SPEC_REFS[key] = ray.put(tokenizer.spec)
    return ref


class RayShardEncoder:
    """The Ray :class:`~tokenpact.data.chunk_source.ChunkSource`: encodes chunks of
    documents on a Ray cluster with one tokenizer.

    Created before the documents are read (``encode_dataset(engine="ray")`` does): the
    constructor connects, ships the tokenizer and starts the workers loading it, and
    :meth:`encoded_chunks` (or :meth:`chunks`) then deals the chunks. Options are
    ``ray_options``' (``address``, ``num_cpus``, ``workers``, ``keep_workers``;
    ``block_docs`` and ``ray_data`` are not used here). The workers do not hash the
    texts (``text_digests`` is False): the digests would cross the object store for
    the driver's corpus thread, which reads the texts itself instead.
    """

    text_digests = False

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        workers: int = 2,
        block_docs: int | None = None,
        keep_workers: bool = False,
        ray_data: bool = False,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"workers must be a positive integer, got {workers!r}")
        # Without kept actors this is a plain Ray step: kept pools would hold its CPUs.
        self._ray = ray = connect(address, num_cpus, keep=keep_workers)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        # An actor reserves a CPU: more actors than the cluster has CPUs would wait
        # forever; tasks beyond the CPUs would only queue.
        self.workers = min(workers, cpus)
        self.keep_workers = keep_workers
        self._hash = tokenizer.semantic_hash
        self._spec_ref = _spec_ref(ray, tokenizer)
        self._pool: list[Any] = []
        self._warmups: list[Any] = []
        if keep_workers:
            self._pool = self._actor_pool(ray)
            # Round-robin over actors, up to two calls each (the next one waits queued).
            self._in_flight = 2 * len(self._pool)
        else:
            self._task = ray.remote(num_cpus=1)(_encode)
            # One warm-up task per worker: Ray runs them on distinct worker processes,
            # which import this module and build the tokenizer while the driver reads.
            warm = ray.remote(num_cpus=1)(_warm)
            self._warmups = [warm.remote(self._hash, [self._spec_ref]) for _ in range(self.workers)]
            # Twice the workers keeps the next chunk queued where the CPUs allow no more
            # running; with fewer workers than CPUs, ``workers`` bounds the parallelism.
            self._in_flight = 2 * self.workers if self.workers >= cpus else self.workers

    def _actor_pool(self, ray: Any) -> list[Any]:
        key = (session(ray), self._hash, self.workers)
        with _POOLS_LOCK:
            stale = [k for k in _POOLS if k != key]
            pool = _POOLS.get(key)
        if stale:
            release_ray_workers()
            pool = None
        if pool is None:
            actor_cls = ray.remote(num_cpus=1)(_ChunkEncoder)
            pool = [actor_cls.remote(self._spec_ref, self._hash) for _ in range(self.workers)]
            with _POOLS_LOCK:
                _POOLS[key] = pool
        return pool

    def _submit(self, j: int, shard: int, texts: list[str], options_ref: Any) -> Any:
        if self._pool:
            actor = self._pool[j % len(self._pool)]
            return actor.encode.remote(shard, texts, options_ref)
        return self._task.remote(self._hash, [self._spec_ref], shard, texts, options_ref)

    def encoded_chunks(
        self, plan: EncodePlan, started: Callable[[], None]
    ) -> Iterator[tuple[int, EncodedChunk]]:
        """The plan's chunks encoded on the cluster, in shard order (``started()`` runs
        first: the workers are already loading the tokenizer)."""
        if plan.options.tokenizer_hash != self._hash:
            raise ContractError(
                f"this Ray encoder holds tokenizer {self._hash}, the plan encodes with "
                f"{plan.options.tokenizer_hash}; create one per tokenizer"
            )
        started()
        return self._encoded(plan.chunk_bounds(), plan.texts, plan.options)

    def chunks(
        self, docs: Sequence[Document], bounds: Sequence[tuple[int, int]], opts: EncodeOptions
    ) -> Iterator[tuple[int, EncodedChunk]]:
        """Every shard's chunks encoded on the cluster; yields ``(shard, chunk)`` in
        submission order (the driver writes chunk ``j`` after chunk ``j - 1``, whichever
        worker finished first), so the output equals the local engine's."""
        texts = [d.text for d in docs]
        cuts = (
            (k, a + c0, a + c1)
            for k, (a, b) in enumerate(bounds)
            for c0, c1 in chunk_bounds(texts[a:b], opts.chunk_chars)
        )
        return self._encoded(cuts, texts, opts)

    def _encoded(
        self, cuts: Iterator[tuple[int, int, int]], texts: list[str], opts: EncodeOptions
    ) -> Iterator[tuple[int, EncodedChunk]]:
        ray = self._ray
        options = asdict(opts)
        if options["threads"] is None:
            options["threads"] = 1  # one core per worker: Ray schedules the cores
        options_ref = ray.put(options)
        pending: deque[tuple[int, Any]] = deque()
        try:
            for j, (k, a, b) in enumerate(cuts):
                pending.append((k, self._submit(j, k, texts[a:b], options_ref)))
                while len(pending) >= self._in_flight:
                    shard, ref = pending.popleft()
                    yield shard, ray.get(ref)
            while pending:
                shard, ref = pending.popleft()
                yield shard, ray.get(ref)
        except BaseException:
            if self.keep_workers:  # a failed or abandoned pool is not handed on
                release_ray_workers()
            else:
                for _, ref in pending:
                    ray.cancel(ref)
            raise
        finally:
            self._collect_warmups()

    def _collect_warmups(self) -> None:
        """Take the finished warm-ups' results: a failed one (the encoding tasks failed
        the same way and raised) is then not reported again as an unhandled Ray error."""
        if not self._pool and self._warmups:
            done, self._warmups = self._ray.wait(
                self._warmups, num_returns=len(self._warmups), timeout=0
            )
            for ref in done:
                try:
                    self._ray.get(ref)
                except Exception:  # noqa: BLE001, S112 - already raised by an encoding task
                    continue


def ray_encode_shards(
    docs: Sequence[Document],
    bounds: Sequence[tuple[int, int]],
    tokenizer: Tokenizer,
    opts: EncodeOptions,
    **ray_options: Any,
) -> Iterator[tuple[int, EncodedChunk]]:
    """:meth:`RayShardEncoder.chunks` of a new encoder (started now, not overlapped)."""
    return RayShardEncoder(tokenizer, **ray_options).chunks(docs, bounds, opts)
