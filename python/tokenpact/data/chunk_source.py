"""Where a dataset's encoded chunks come from: the :class:`ChunkSource` interface and
the local source.

A source encodes a plan's chunks (:meth:`EncodePlan.chunk_bounds
<tokenpact.data.encode_plan.EncodePlan.chunk_bounds>`, each with
:func:`~tokenpact.data.chunk_encoding.encode_chunk`) and yields them in shard order, so
the shard sink writes the same bytes whatever the source. Two exist:
:class:`LocalChunkSource` (threads of this process, the default) and
:class:`~tokenpact.data.ray_encoder.RayShardEncoder` (Ray tasks or kept actors);
``encode_dataset(engine=...)`` takes either name or a source object.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import ConfigError
from .chunk_encoding import encode_chunk
from .shard_writer import EncodedChunk

if TYPE_CHECKING:
    from .encode_plan import EncodePlan

Chunks = Iterator[tuple[int, EncodedChunk]]
"""``(shard, chunk)`` pairs in shard order, each shard's chunks in document order."""

ENCODE_AHEAD = 2
"""Chunk batch calls the local source keeps in flight."""


@runtime_checkable
class ChunkSource(Protocol):
    """Encodes a plan's chunks and yields them in order.

    ``text_digests`` says whether the source can hash each text while encoding it (the
    plan then asks it to, when the corpus manifest is built from the documents and no
    special tokens are added). :meth:`encoded_chunks` calls ``started()`` once, as soon
    as its first chunk is under way (or at once when there is none): the sink starts
    its side work then, so that work does not delay the first chunk. Closing the
    iterator early stops the source's work.
    """

    text_digests: bool

    def encoded_chunks(self, plan: EncodePlan, started: Callable[[], None]) -> Chunks: ...


class LocalChunkSource:
    """Encodes chunks on this process's threads, ``encode_ahead`` batch calls in flight.

    One call at a time leaves the engine's pool idle at every chunk boundary: its last
    documents run on one worker while the others wait, then the pool waits for this
    thread to prepare the next call. With the next call already queued, a worker that
    runs out of documents takes the next chunk's, so the cores stay busy across the
    boundary (the calls release the GIL). The chunks, their order and their bytes are
    the same for any ``encode_ahead``, and with or without ``text_digests`` (the
    encoder hashing each text for the corpus manifest while it has it in cache).
    """

    def __init__(self, *, encode_ahead: int = ENCODE_AHEAD, text_digests: bool = True) -> None:
        if isinstance(encode_ahead, bool) or not isinstance(encode_ahead, int) or encode_ahead < 1:
            raise ConfigError(f"encode_ahead must be a positive integer, got {encode_ahead!r}")
        self.encode_ahead = encode_ahead
        self.text_digests = text_digests

    def encoded_chunks(self, plan: EncodePlan, started: Callable[[], None]) -> Chunks:
        tok, texts, opts = plan.tokenizer, plan.texts, plan.options
        digests = plan.text_digests
        go: Callable[[], None] | None = started
        pool = ThreadPoolExecutor(
            max_workers=self.encode_ahead, thread_name_prefix="tokenpact-encode"
        )
        in_flight: deque[tuple[int, Future[EncodedChunk]]] = deque()
        try:
            for k, a, b in plan.chunk_bounds():
                in_flight.append(
                    (k, pool.submit(encode_chunk, tok, texts[a:b], opts, shard=k, digests=digests))
                )
                if go is not None:
                    first, go = go, None
                    first()
                if len(in_flight) >= self.encode_ahead:
                    shard, future = in_flight.popleft()
                    yield shard, future.result()
            if go is not None:  # nothing to encode
                go()
            while in_flight:
                shard, future = in_flight.popleft()
                yield shard, future.result()
        finally:
            # Closed early (a writer error) or failed: queued calls are dropped, a running
            # one is waited for (it cannot be interrupted) before the caller cleans up.
            pool.shutdown(wait=True, cancel_futures=True)
