"""Encoding a corpus into shards bound to the tokenizer.

Documents are encoded one by one (never joined), in ``doc_id`` order, and cut into
shards of ``records_per_shard`` documents. Shard ``k`` therefore holds the same documents
whatever the input order, the worker count or the engine, and its bytes are identical.
Each shard is encoded in chunks of about 4 Mi characters (one batch call each) that a
writer thread appends to the shard's files while the next chunk encodes
(:mod:`tokenpact.data.shard_writer`).
``dataset.json`` records the tokenizer's semantic hash, the template hash, the ID dtype,
the maximum token ID, record and token counts, the mixture per source and role, and the
SHA-256 of every shard file; :func:`tokenpact.data.open_dataset` checks all of them.

>>> manifest = encode_dataset("corpus.jsonl.gz", tok, "out/", format="megatron")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from .._stale_temps import remove_stale_temps
from ..contract import CorpusManifest, DatasetDeclaration, canonical_bytes, template_hash
from ..contract.dataset_files import DATASET_MANIFEST, ENCODED_DATASET_KIND
from ..contract.hashing import CORPUS as CORPUS_DOMAIN
from ..contract.hashing import framed_digest, framed_digest_parts
from ..errors import ConfigError, ContractError, InvalidInputError
from .corpus_manifest import (
    DigestedRecords,
    corpus_records_bytes,
    record_columns,
    utf8_sizes,
    write_json_atomic,
)
from .documents import Document, sort_documents
from .mixture import MixtureReport, MixtureTally
from .shard_formats import PARQUET_COMPRESSIONS, token_dtype
from .shard_writer import CHUNK_CHARS, EncodedChunk, ShardSummary, ShardWriter, chunk_bounds

SHARD_FORMATS = ("parquet", "megatron")
BOUNDARY_POLICIES = ("eos_separate_documents", "none")
MANIFEST_NAME = DATASET_MANIFEST
CORPUS_NAME = "corpus.json"
MANIFEST_KIND = ENCODED_DATASET_KIND
DEFAULT_RECORDS_PER_SHARD = 100_000
_MAX_PENDING = 2  # encoded chunks waiting for the writer thread
_ENCODE_AHEAD = 2  # chunk batch calls in flight on the encoder pool
_DIGESTS_IN_ENCODER = True  # False: the corpus thread hashes the texts (tests compare)
_TEXT = attrgetter("text")
_DOC_ID = attrgetter("doc_id")


@dataclass(frozen=True)
class EncodeOptions:
    """What every worker needs to encode a shard identically."""

    format: str
    dtype: str
    tokenizer_hash: str
    template_hash: str
    add_special_tokens: bool = False
    max_length: int | None = None
    threads: int | None = None
    compression: str = "none"
    chunk_chars: int = CHUNK_CHARS
    bos_id: int | None = None
    eod_id: int | None = None
    allowed_special: tuple[str, ...] = ()

    def metadata(self) -> dict[str, str]:
        return {
            "tokenpact.tokenizer_hash": self.tokenizer_hash,
            "tokenpact.template_hash": self.template_hash,
        }


def shard_name(index: int) -> str:
    return f"shard-{index:05d}"


def _encode_flat(
    tok: Any, texts: list[str], opts: EncodeOptions, digests: bool = False
) -> tuple[Any, Any, Any, Any]:
    allowed = opts.allowed_special
    if digests and not opts.add_special_tokens:
        return tok.encode_batch_flat_digests(texts, allowed_special=allowed, threads=opts.threads)  # type: ignore[no-any-return]
    if opts.add_special_tokens:
        lists = tok.encode_batch(
            texts, allowed_special=allowed, add_special_tokens=True, threads=opts.threads
        )
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=offsets[1:])
        ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(offsets[-1]))
        return ids, offsets, None, None
    ids, offsets = tok.encode_batch_flat(texts, allowed_special=allowed, threads=opts.threads)
    return ids, np.asarray(offsets, dtype=np.int64), None, None


def _add_boundaries(ids: Any, offsets: Any, bos: int | None, eod: int | None) -> tuple[Any, Any]:
    """Each record with ``bos`` before it and ``eod`` after it (either may be ``None``),
    as Megatron's preprocessing appends EOD: one flat gather, no per-record Python."""
    lengths = np.diff(offsets)
    extra = (bos is not None) + (eod is not None)
    if not extra or not lengths.size:
        return ids, offsets
    new_lengths = lengths + extra
    new_offsets = np.zeros_like(offsets)
    np.cumsum(new_lengths, out=new_offsets[1:])
    out = np.empty(int(new_offsets[-1]), dtype=ids.dtype)
    body = np.ones(out.shape[0], dtype=bool)
    if bos is not None:
        out[new_offsets[:-1]] = bos
        body[new_offsets[:-1]] = False
    if eod is not None:
        out[new_offsets[1:] - 1] = eod
        body[new_offsets[1:] - 1] = False
    out[body] = ids
    return out, new_offsets


def _truncate(ids: Any, offsets: Any, max_length: int | None) -> tuple[Any, Any, Any]:
    lengths = np.diff(offsets)
    if max_length is None or not lengths.size or int(lengths.max()) <= max_length:
        return ids, offsets, np.zeros(lengths.shape[0], dtype=bool)
    kept = np.minimum(lengths, max_length)
    starts = offsets[:-1]
    new_offsets = np.zeros_like(offsets)
    np.cumsum(kept, out=new_offsets[1:])
    gather = np.repeat(starts - new_offsets[:-1], kept) + np.arange(int(new_offsets[-1]))
    return ids[gather], new_offsets, lengths > max_length


def encode_chunk(
    tok: Any, texts: list[str], opts: EncodeOptions, *, shard: int, digests: bool = False
) -> EncodedChunk:
    """Encode consecutive documents of shard ``shard`` into the dataset's dtype; with
    ``digests`` (and no special tokens added), also hash each text for the corpus
    manifest while the encoder has it in cache."""
    try:
        ids, offsets, text_digests, text_sizes = _encode_flat(tok, texts, opts, digests)
    except (UnicodeEncodeError, InvalidInputError) as exc:
        raise InvalidInputError(
            f"a document in shard {shard} is not valid Unicode: {exc}"
        ) from None
    extra = (opts.bos_id is not None) + (opts.eod_id is not None)
    # The boundary tokens survive truncation: the text is cut to leave room for them.
    limit = None if opts.max_length is None else max(opts.max_length - extra, 0)
    ids, offsets, truncated = _truncate(ids, offsets, limit)
    ids, offsets = _add_boundaries(ids, offsets, opts.bos_id, opts.eod_id)
    dtype = np.dtype(opts.dtype)
    top = int(ids.max()) if ids.size else None
    if top is not None and top > np.iinfo(dtype).max:
        raise ContractError(f"token ID {top} does not fit the dataset's {dtype} IDs")
    return EncodedChunk(
        ids.astype(dtype, copy=False), offsets, truncated, top, text_digests, text_sizes
    )


def _local_chunks(
    tok: Any,
    texts: list[str],
    bounds: Sequence[tuple[int, int]],
    opts: EncodeOptions,
    started: Callable[[], None] | None = None,
    digests: bool = False,
) -> Iterator[tuple[int, EncodedChunk]]:
    """Encoded chunks in shard order, ``_ENCODE_AHEAD`` batch calls in flight at once.

    One call at a time leaves the pool idle at every chunk boundary: its last documents
    run on one worker while the others wait, then the pool waits for this thread to
    prepare the next call. With the next call already queued, a worker that runs out
    of documents takes the next chunk's, so the cores stay busy across the boundary
    (the calls release the GIL). The chunks, their order and their bytes are unchanged.
    ``started()`` runs once the first call is queued (work that can wait that long).
    """
    plan: Iterator[tuple[int, int, int]] = (
        (k, a + c0, a + c1)
        for k, (a, b) in enumerate(bounds)
        for c0, c1 in chunk_bounds(texts[a:b], opts.chunk_chars)
    )
    pool = ThreadPoolExecutor(max_workers=_ENCODE_AHEAD, thread_name_prefix="tokenpact-encode")
    in_flight: deque[tuple[int, Future[EncodedChunk]]] = deque()
    try:
        for k, a, b in plan:
            in_flight.append(
                (k, pool.submit(encode_chunk, tok, texts[a:b], opts, shard=k, digests=digests))
            )
            if started is not None:
                go, started = started, None
                go()
            if len(in_flight) >= _ENCODE_AHEAD:
                shard, future = in_flight.popleft()
                yield shard, future.result()
        while in_flight:
            shard, future = in_flight.popleft()
            yield shard, future.result()
    finally:
        # Closed early (a writer error) or failed: queued calls are dropped, a running
        # one is waited for (it cannot be interrupted) before the caller cleans up.
        pool.shutdown(wait=True, cancel_futures=True)


def _write_shards(
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
    ``_MAX_PENDING`` chunks wait, so memory stays bounded.
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
            while len(pending) > _MAX_PENDING:
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


def _check_doc_ids(doc_ids: Sequence[str]) -> None:
    joined = "".join(doc_ids)  # one C-speed scan; the culprit is looked up only on failure
    if "\t" in joined or "\n" in joined or "\r" in joined:
        bad = next(d for d in doc_ids if "\t" in d or "\n" in d or "\r" in d)
        raise InvalidInputError(f"doc_id {bad!r} contains a tab or newline; use plain IDs")
    try:
        joined.encode("utf-8")  # the shard files and manifests hold the IDs as UTF-8
    except UnicodeEncodeError:
        bad = next(d for d in doc_ids if not _is_utf8(d))
        raise InvalidInputError(
            f"doc_id {bad!r} contains a lone surrogate (no UTF-8 form); decode the source "
            "with errors='replace' or fix the ID"
        ) from None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    """What needs the documents but not their tokens, made while the shards encode:
    the corpus manifest written to ``tmp`` and its hash, and the mixture tally with
    everything but the token counts.

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
    """The corpus thread's first step when the encoder hashes the texts: the manifest's
    header and record columns, and the mixture tally but for the bytes."""
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
    """The corpus thread's last step: the manifest's tail and hash, the tally's bytes
    (or the reference path, when the native formatter could not spell a record)."""
    done = digested.finish()
    if done is None:
        return reference()
    parts, sizes = done
    prepared = tally.result()
    prepared.count_bytes(sizes)
    return "sha256:" + framed_digest_parts(CORPUS_DOMAIN, parts).hex(), prepared


def _feeding_records(
    chunks: Iterator[tuple[int, EncodedChunk]],
    pool: ThreadPoolExecutor,
    digested: DigestedRecords,
    last: Callable[[], None],
) -> Iterator[tuple[int, EncodedChunk]]:
    """``chunks`` unchanged; each chunk's digests go to the corpus thread, which formats
    their records while the next chunks encode; ``last()`` runs once all are sent (while
    the writer still writes the last chunk)."""
    try:
        for k, chunk in chunks:
            assert chunk.text_digests is not None and chunk.text_sizes is not None
            pool.submit(digested.add, chunk.text_digests, chunk.text_sizes)
            yield k, chunk
        last()
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _boundary_ids(tok: Any, *, add_bos: bool, append_eod: bool) -> tuple[int | None, int | None]:
    bos = eod = None
    if add_bos:
        bos = tok.bos_id
        if bos is None:
            raise ConfigError(
                "add_bos: the tokenizer declares no BOS token; declare one (a special token "
                "with the bos role) or leave BOS out"
            )
    if append_eod:
        eod = tok.eos_id
        if eod is None:
            raise ConfigError(
                "append_eod: the tokenizer declares no EOS token; declare one (a special "
                "token with the eos role) or leave EOD out"
            )
    return bos, eod


def _checked_policy(
    declared: str | None,
    tok: Any,
    eod: int | None,
    *,
    add_special_tokens: bool,
    truncated: int,
) -> str:
    """The boundary policy the shards hold; a declared one they do not hold is refused.

    Without ``append_eod`` the records end with EOS only when the post-processor appends
    it (it does the same to every record, so one probe tells) and nothing was cut off.
    """
    held = "none"
    if eod is not None:
        held = "eos_separate_documents"
    elif add_special_tokens and not truncated and tok.eos_id is not None:
        probe = tok.encode("a", add_special_tokens=True)
        if probe and probe[-1] == tok.eos_id:
            held = "eos_separate_documents"
    if declared is not None and declared != held:
        raise ConfigError(
            f"boundary_policy {declared!r} does not describe the shards: they hold "
            f"{held!r}; add the EOS with append_eod=True (--append-eod) or drop the policy"
        )
    return held


def _exact_shares(mixture: dict[str, Any]) -> dict[str, Any]:
    """The mixture with each token share as a decimal string: the manifest is read back
    by the canonical-JSON reader (``verify``, ``release``), which refuses floats because
    their spelling is not one value everywhere."""
    shares = mixture.get("token_share") or {}
    return {**mixture, "token_share": {k: repr(float(v)) for k, v in shares.items()}}


def _documents(source: Any, reader_options: Mapping[str, Any] | None) -> list[Document]:
    from .readers import read_documents

    if isinstance(source, (str, os.PathLike)) or (
        isinstance(source, (list, tuple)) and source and isinstance(source[0], (str, os.PathLike))
    ):
        return list(read_documents(source, **dict(reader_options or {})))
    docs = list(source)
    if docs and not isinstance(docs[0], Document):
        raise ConfigError("source must be a path, a list of paths or an iterable of Documents")
    return docs


def encode_dataset(
    source: Any,
    tokenizer: Any,
    out_dir: str | os.PathLike[str],
    *,
    format: str = "parquet",
    records_per_shard: int = DEFAULT_RECORDS_PER_SHARD,
    add_special_tokens: bool = False,
    append_eod: bool = False,
    add_bos: bool = False,
    allowed_special: Sequence[str] | str = (),
    max_length: int | None = None,
    boundary_policy: str | None = None,
    roles: Mapping[str, str] | None = None,
    corpus: CorpusManifest | None = None,
    corpus_revision: str = "unversioned",
    template: Mapping[str, Any] | None = None,
    reader_options: Mapping[str, Any] | None = None,
    compression: str = "none",
    engine: str = "local",
    threads: int | None = None,
    ray_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Encode ``source`` (paths or Documents) with ``tokenizer`` into shards in ``out_dir``.

    Returns the dataset manifest (also written to ``out_dir/dataset.json``). ``roles``
    maps ``doc_id`` to a split role for the mixture table; ``corpus`` binds the dataset to
    an existing corpus manifest (else one is built from the documents as read).
    ``compression`` applies to Parquet shards (``"none"`` by default: the writer must
    keep up with the encoder; ``"snappy"`` or ``"zstd"`` halve the files).

    ``append_eod`` ends every record with the tokenizer's EOS ID and ``add_bos`` starts
    it with its BOS ID (what Megatron's ``--append-eod`` does), whatever the
    post-processor adds; ``max_length`` then counts them. ``allowed_special`` lets those
    spellings in the text through as control IDs ("all" for every one); by default a
    control spelling in text stays ordinary text. ``boundary_policy`` (default: derived)
    says what separates documents in the shards: ``"eos_separate_documents"`` when every
    record ends with EOS, else ``"none"``; a declared policy the shards do not hold is an
    error.
    """
    if format not in SHARD_FORMATS:
        raise ConfigError(f"unknown shard format {format!r}; use one of {SHARD_FORMATS}")
    if (
        isinstance(records_per_shard, bool)
        or not isinstance(records_per_shard, int)
        or records_per_shard < 1
    ):
        raise ConfigError(
            f"records_per_shard must be a positive integer, got {records_per_shard!r}"
        )
    if max_length is not None and (isinstance(max_length, bool) or max_length < 1):
        raise ConfigError(f"max_length must be a positive integer or None, got {max_length!r}")
    if engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {engine!r}; use 'local' or 'ray'")
    if compression not in PARQUET_COMPRESSIONS:
        raise ConfigError(
            f"unknown Parquet compression {compression!r}; use one of {PARQUET_COMPRESSIONS}"
        )
    bos_id, eod_id = _boundary_ids(tokenizer, add_bos=add_bos, append_eod=append_eod)
    extra = (bos_id is not None) + (eod_id is not None)
    if max_length is not None and max_length <= extra:
        raise ConfigError(
            f"max_length {max_length} leaves no room for text after the {extra} boundary "
            "token(s); raise max_length"
        )
    if boundary_policy is not None and boundary_policy not in BOUNDARY_POLICIES:
        raise ConfigError(
            f"unknown boundary_policy {boundary_policy!r}; use one of {BOUNDARY_POLICIES}"
        )
    allowed: tuple[str, ...] = (
        tuple(sorted(tokenizer.special_tokens))
        if allowed_special == "all"
        else tuple(allowed_special)  # fmt: skip
    )
    out = Path(out_dir)
    if (out / MANIFEST_NAME).exists() and not overwrite:
        raise ConfigError(f"{out} already holds a dataset; pass overwrite=True or another out_dir")
    # Ray's workers start and load the tokenizer while the driver reads the documents.
    ray_encoder = None
    if engine == "ray":
        from .ray_encoder import RayShardEncoder

        ray_encoder = RayShardEncoder(tokenizer, **dict(ray_options or {}))
    docs, doc_ids = sort_documents(_documents(source, reader_options))
    texts = list(map(_TEXT, docs))  # map(attrgetter): no Python frame per document
    _check_doc_ids(doc_ids)
    if corpus is not None and sorted(d.document_id for d in corpus.documents) != doc_ids:
        raise ConfigError(
            "the corpus manifest lists other documents than the ones encoded; pass the "
            "manifest of exactly these documents (or none: one is built from them)"
        )
    opts = EncodeOptions(
        format=format,
        dtype=token_dtype(tokenizer.vocab_size, format).name,
        tokenizer_hash=tokenizer.semantic_hash,
        template_hash=template_hash(template),
        add_special_tokens=add_special_tokens,
        max_length=max_length,
        threads=threads,
        compression=compression,
        chunk_chars=CHUNK_CHARS,
        bos_id=bos_id,
        eod_id=eod_id,
        allowed_special=allowed,
    )
    bounds = [
        (s, min(s + records_per_shard, len(docs))) for s in range(0, len(docs), records_per_shard)
    ]
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)  # what killed runs left (their processes are gone)
    # The old manifest goes first: an interrupted overwrite then leaves no manifest that
    # names missing or half-replaced shards (open_dataset fails closed without one).
    (out / MANIFEST_NAME).unlink(missing_ok=True)
    corpus_tmp = out / f".{CORPUS_NAME}.tmp{os.getpid()}"
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenpact-corpus")
    corpus_job: Future[tuple[str, MixtureTally]] | None = None
    tally_job: Future[MixtureTally] | None = None
    # The local encoder hashes each text for the corpus records while it has it in
    # cache; the corpus thread then formats each chunk's records (no second read of the
    # texts, which in doc_id order is a cache miss per document).
    digested = (
        DigestedRecords(
            docs, corpus_tmp, revision=corpus_revision, roles=roles, texts=texts, doc_ids=doc_ids
        )
        if _DIGESTS_IN_ENCODER
        and corpus is None
        and ray_encoder is None
        and not add_special_tokens
        and docs
        else None
    )
    reference = functools.partial(
        _corpus_side,
        corpus_tmp,
        docs,
        texts,
        doc_ids,
        corpus,
        revision=corpus_revision,
        roles=roles,
    )

    def submit_corpus_side() -> None:
        nonlocal corpus_job
        if digested is None:
            corpus_job = pool.submit(reference)
        else:
            assert tally_job is not None  # started with the first chunk
            corpus_job = pool.submit(_digested_finish, digested, tally_job, reference)
        pool.shutdown(wait=False)

    def start_side_work() -> None:
        # The corpus manifest (a digest per document) and the mixture's per-document
        # side are made on a second thread while the shards encode (the encoder
        # releases the GIL). Started once the first chunk is queued, so the encoder
        # does not wait for it; stale shards go before any new shard is moved in.
        nonlocal tally_job
        if digested is None:
            submit_corpus_side()
        else:  # the header and columns now; each chunk's records as it is encoded
            tally_job = pool.submit(_digested_start, digested, doc_ids, roles)
        for stale in out.glob("shard-*"):
            stale.unlink()

    try:
        chunks: Iterable[tuple[int, EncodedChunk]]
        if ray_encoder is not None:
            start_side_work()
            chunks = ray_encoder.chunks(docs, bounds, opts)
        elif digested is not None:
            chunks = _feeding_records(
                _local_chunks(
                    tokenizer, texts, bounds, opts, started=start_side_work, digests=True
                ),
                pool,
                digested,
                last=submit_corpus_side,
            )
        elif docs:
            chunks = _local_chunks(tokenizer, texts, bounds, opts, started=start_side_work)
        else:
            start_side_work()
            chunks = ()
        summaries = _write_shards(out, doc_ids, bounds, chunks, opts, progress)
        assert corpus_job is not None
        corpus_hash, tally = corpus_job.result()
        os.replace(corpus_tmp, out / CORPUS_NAME)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # nothing runs before its file goes
        if digested is not None:
            digested.close()
        corpus_tmp.unlink(missing_ok=True)
        raise
    lengths = np.concatenate([s.lengths for s in summaries]) if summaries else np.zeros(0, np.int64)
    tops = [s.max_token_id for s in summaries if s.max_token_id is not None]
    max_id = max(tops) if tops else None
    policy = _checked_policy(
        boundary_policy,
        tokenizer,
        eod_id,
        add_special_tokens=add_special_tokens,
        truncated=sum(s.truncated for s in summaries),
    )
    shards = [
        {
            "files": s.files,
            "records": len(s.doc_ids),
            "tokens": int(s.lengths.sum()),
            "first_doc_id": s.doc_ids[0],
            "last_doc_id": s.doc_ids[-1],
        }
        for s in summaries
    ]
    declaration = DatasetDeclaration(
        corpus_hash=corpus_hash,
        tokenizer_hash=opts.tokenizer_hash,
        template_hash=opts.template_hash,
        record_count=len(docs),
        max_token_id=max_id,
    )
    mixture: MixtureReport = tally.report(lengths)
    manifest = {
        "kind": MANIFEST_KIND,
        "version": 1,
        "format": format,
        "dtype": opts.dtype,
        "vocab_size": tokenizer.vocab_size,
        "tokenizer_hash": opts.tokenizer_hash,
        "template_hash": opts.template_hash,
        "boundary_policy": policy,
        "add_special_tokens": add_special_tokens,
        "append_eod": eod_id is not None,
        "add_bos": bos_id is not None,
        "eod_id": eod_id,
        "bos_id": bos_id,
        "allowed_special": list(allowed),
        "max_length": max_length,
        "compression": compression if format == "parquet" else "none",
        "order_policy": "sorted_by_doc_id",
        "records_per_shard": records_per_shard,
        "records": len(docs),
        "tokens": int(lengths.sum()),
        "truncated": sum(s.truncated for s in summaries),
        "max_token_id": max_id,
        "corpus_hash": corpus_hash,
        "declaration": declaration.to_json(),
        "declaration_hash": declaration.hash,
        "mixture": _exact_shares(mixture.to_json()),
        "shards": shards,
    }
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return manifest
