"""Where a dataset's encoded chunks go: the shard files, written by one writer thread,
and the corpus manifest beside them.

:func:`write_shards` feeds chunks (in shard order) to a writer thread that appends them
to each shard's files (:class:`~tokenpact.data.shard_writer.ShardWriter`) while the
caller encodes the next chunk; ``encode_conversations`` uses it too.
:class:`ShardSink` runs one :class:`~tokenpact.data.encode_plan.EncodePlan`: it prepares
the output directory, takes a chunk source's chunks through :func:`write_shards` and
runs the corpus side job (:class:`~tokenpact.data.corpus_side.CorpusSideJob`) beside it;
files appear under their final names only when complete, and an error leaves nothing
half-written behind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._stale_temps import remove_stale_temps
from ..contract.dataset_files import DATASET_MANIFEST
from .chunk_encoding import EncodeOptions
from .chunk_source import ChunkSource
from .corpus_side import CorpusSideJob
from .encode_plan import EncodePlan, shard_name
from .mixture import MixtureTally
from .shard_writer import EncodedChunk, ShardSummary, ShardWriter

MAX_PENDING = 2
"""Encoded chunks waiting for the writer thread."""


def write_shards(
    out: Path,
    doc_ids: Sequence[str],
    bounds: Sequence[tuple[int, int]],
    chunks: Iterable[tuple[int, EncodedChunk]],
    opts: EncodeOptions,
    progress: bool,
) -> list[ShardSummary]:
    """Feed encoded chunks (in shard order) to one writer thread; return the summaries.

    The writer thread builds and writes chunk ``i`` while the caller encodes chunk
    ``i + 1`` (pyarrow, file writes and SHA-256 release the GIL); at most
    :data:`MAX_PENDING` chunks wait, so memory stays bounded.
    """
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(doc_ids), desc="encoding shards", unit="doc", leave=False)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenpact-shard-writer")
    writers: list[ShardWriter] = []
    pending: deque[Future[None]] = deque()
    finished: list[Future[ShardSummary]] = []
    try:
        for k, chunk in chunks:
            if len(writers) <= k:
                if writers:
                    finished.append(pool.submit(writers[-1].finish))
                a, b = bounds[k]
                writers.append(
                    ShardWriter(
                        out,
                        shard_name(k),
                        list(doc_ids[a:b]),
                        format=opts.format,
                        dtype=np.dtype(opts.dtype),
                        metadata=opts.metadata(),
                        compression=opts.compression,
                    )
                )
            pending.append(pool.submit(writers[-1].add, chunk))
            while len(pending) > MAX_PENDING:
                pending.popleft().result()
            if bar is not None:
                bar.update(len(chunk))
        if writers:
            finished.append(pool.submit(writers[-1].finish))
        while pending:
            pending.popleft().result()
        return [f.result() for f in finished]
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for writer in writers:
            writer.abort()
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # a Ray chunk stream stops its actors now, not at garbage collection
        raise
    finally:
        pool.shutdown(wait=True)
        if bar is not None:
            bar.close()


@dataclass(frozen=True, eq=False)
class Written:
    """What a sink wrote: each shard's summary, the corpus hash and the mixture tally
    (all but the token counts)."""

    summaries: list[ShardSummary]
    corpus_hash: str
    tally: MixtureTally


class ShardSink:
    """Writes ``plan``'s shards and its corpus manifest into ``plan.out``."""

    def __init__(self, plan: EncodePlan, *, progress: bool = False) -> None:
        self.plan = plan
        self.progress = progress

    def write(self, source: ChunkSource) -> Written:
        """Take ``source``'s chunks into the shard files; ``corpus.json`` is made beside
        them and moved into place last. The dataset manifest is the caller's."""
        plan, out = self.plan, self.plan.out
        out.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(out)  # what killed runs left (their processes are gone)
        # The old manifest goes first: an interrupted overwrite then leaves no manifest
        # that names missing or half-replaced shards (open_dataset fails closed without).
        (out / DATASET_MANIFEST).unlink(missing_ok=True)
        side = CorpusSideJob(plan)

        def started() -> None:
            # The corpus side starts once the first chunk is under way, so the encoder
            # does not wait for it; stale shards go before any new shard is moved in.
            side.start()
            for stale in out.glob("shard-*"):
                stale.unlink()

        try:
            chunks = side.feeding(source.encoded_chunks(plan, started))
            summaries = write_shards(
                out, plan.doc_ids, plan.bounds, chunks, plan.options, self.progress
            )
            corpus_hash, tally = side.result()
            side.commit()
        except BaseException:
            side.abort()
            raise
        return Written(summaries, corpus_hash, tally)
