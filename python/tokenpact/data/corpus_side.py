"""The corpus manifest and the mixture tally, made on a second thread while the shards
encode: what needs the documents but not their tokens.

:class:`CorpusSideJob` writes ``corpus.json`` under a temporary name beside the shards
and hashes it, and tallies the mixture's per-document side (sources, roles, UTF-8
bytes); only the token counts are added at the end. It works one of two ways:

* from the encoder's digests (``from_digests``): the chunk source hashed each text while
  encoding it, and the job formats each chunk's records as the chunk passes
  (:meth:`CorpusSideJob.add`), so the texts are not read again (in ``doc_id`` order that
  read is a cache miss per document); only the manifest's last bytes and hash are left
  when the last chunk is encoded;
* from the texts (the reference): the whole manifest in one step, started with the
  first chunk. A given corpus manifest is always written this way, and the digest way
  falls back to it when its native formatter cannot spell a record.

Both write the same bytes and raise the same errors (tests/data/test_shard_pipeline.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import repeat
from operator import attrgetter
from pathlib import Path

from ..contract import CorpusManifest, canonical_bytes
from ..contract.hashing import CORPUS as CORPUS_DOMAIN
from ..contract.hashing import framed_digest, framed_digest_parts
from .corpus_manifest import DigestedRecords, corpus_records_bytes, record_columns, utf8_sizes
from .documents import Document
from .encode_plan import CORPUS_NAME, EncodePlan
from .mixture import MixtureTally
from .shard_writer import EncodedChunk

Chunks = Iterator[tuple[int, EncodedChunk]]


def _corpus_side(
    tmp: Path,
    docs: Sequence[Document],
    texts: list[str],
    doc_ids: list[str],
    corpus: CorpusManifest | None,
    *,
    revision: str,
    roles: Mapping[str, str] | None,
) -> tuple[str, MixtureTally]:
    """The reference job: the corpus manifest written to ``tmp`` and its hash, and the
    mixture tally with everything but the token counts.

    One canonical serialization serves both the file and its hash (it is the hashed
    payload), instead of three passes over a million document records.
    """
    if corpus is not None:
        data, sizes = canonical_bytes(corpus.to_json()), utf8_sizes(texts)
        sources = list(map(attrgetter("source"), docs))
    else:
        columns = record_columns(docs, texts=texts, doc_ids=doc_ids)
        data, sizes = corpus_records_bytes(docs, revision=revision, roles=roles, columns=columns)
        sources = columns.sources
    with open(tmp, "wb") as handle:  # two writes: no copy of a 10 MB manifest for "\n"
        handle.write(data)
        handle.write(b"\n")
    tally = MixtureTally(
        sources,
        map(roles.get, doc_ids, repeat("all")) if roles is not None else repeat("all"),
        sizes,
    )
    return "sha256:" + framed_digest(CORPUS_DOMAIN, data).hex(), tally


def _digested_start(
    digested: DigestedRecords, doc_ids: list[str], roles: Mapping[str, str] | None
) -> MixtureTally:
    """The digest way's first step: the manifest's header and record columns, and the
    mixture tally but for the bytes."""
    digested.prepare()
    return MixtureTally(
        digested.columns.sources,
        map(roles.get, doc_ids, repeat("all")) if roles is not None else repeat("all"),
    )


def _digested_finish(
    digested: DigestedRecords,
    tally: Future[MixtureTally],
    reference: Callable[[], tuple[str, MixtureTally]],
) -> tuple[str, MixtureTally]:
    """The digest way's last step: the manifest's tail and hash, the tally's bytes (or
    the reference job, when the native formatter could not spell a record)."""
    done = digested.finish()
    if done is None:
        return reference()
    parts, sizes = done
    prepared = tally.result()
    prepared.count_bytes(sizes)
    return "sha256:" + framed_digest_parts(CORPUS_DOMAIN, parts).hex(), prepared


class CorpusSideJob:
    """``corpus.json`` and the mixture tally of ``plan``, on one thread of its own.

    Call :meth:`start` once (when the first chunk is under way), :meth:`add` with each
    encoded chunk in order when ``from_digests``, :meth:`all_added` after the last one,
    then :meth:`result` and :meth:`commit`; :meth:`abort` after an error.
    """

    def __init__(self, plan: EncodePlan) -> None:
        self.plan = plan
        self.from_digests = plan.text_digests
        self.tmp = plan.out / f".{CORPUS_NAME}.tmp{os.getpid()}"
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenpact-corpus")
        self._job: Future[tuple[str, MixtureTally]] | None = None
        self._tally: Future[MixtureTally] | None = None
        self._reference = functools.partial(
            _corpus_side,
            self.tmp,
            plan.docs,
            plan.texts,
            plan.doc_ids,
            plan.corpus,
            revision=plan.corpus_revision,
            roles=plan.roles,
        )
        self._digested = (
            DigestedRecords(
                plan.docs,
                self.tmp,
                revision=plan.corpus_revision,
                roles=plan.roles,
                texts=plan.texts,
                doc_ids=plan.doc_ids,
            )
            if self.from_digests
            else None
        )

    def start(self) -> None:
        if self._digested is None:
            self._submit_last()
        else:  # the header and columns now; each chunk's records as it is encoded
            self._tally = self._pool.submit(
                _digested_start, self._digested, self.plan.doc_ids, self.plan.roles
            )

    def add(self, chunk: EncodedChunk) -> None:
        """Format and write ``chunk``'s records (from its digests) on the job's thread."""
        assert self._digested is not None
        assert chunk.text_digests is not None and chunk.text_sizes is not None
        self._pool.submit(self._digested.add, chunk.text_digests, chunk.text_sizes)

    def all_added(self) -> None:
        if self._digested is not None:
            self._submit_last()

    def _submit_last(self) -> None:
        if self._digested is None:
            self._job = self._pool.submit(self._reference)
        else:
            assert self._tally is not None  # started with the first chunk
            self._job = self._pool.submit(
                _digested_finish, self._digested, self._tally, self._reference
            )
        self._pool.shutdown(wait=False)

    def feeding(self, chunks: Chunks) -> Chunks:
        """``chunks`` unchanged; with ``from_digests`` each one's records go to the job's
        thread as it passes, and :meth:`all_added` runs once all are sent (while the
        writer still writes the last chunk)."""
        if self._digested is None:
            return chunks
        return self._feed(chunks)

    def _feed(self, chunks: Chunks) -> Chunks:
        try:
            for k, chunk in chunks:
                self.add(chunk)
                yield k, chunk
            self.all_added()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def result(self) -> tuple[str, MixtureTally]:
        """The corpus hash and the tally (waits for the job)."""
        assert self._job is not None
        return self._job.result()

    def commit(self) -> None:
        """Move ``corpus.json`` into place."""
        os.replace(self.tmp, self.plan.out / CORPUS_NAME)

    def abort(self) -> None:
        """Stop the job (nothing runs before its file goes) and remove its file."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._digested is not None:
            self._digested.close()
        self.tmp.unlink(missing_ok=True)
