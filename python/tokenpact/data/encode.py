"""Encoding a corpus into shards bound to the tokenizer.

Documents are encoded one by one (never joined), in ``doc_id`` order, and cut into
shards of ``records_per_shard`` documents. Shard ``k`` therefore holds the same documents
whatever the input order, the worker count or the engine, and its bytes are identical.
Each shard is encoded in chunks of about 4 Mi characters (one batch call each) that a
writer thread appends to the shard's files while the next chunk encodes.

:func:`encode_dataset` checks its arguments, reads and sorts the documents and builds an
:class:`~tokenpact.data.encode_plan.EncodePlan`; a chunk source
(:mod:`tokenpact.data.chunk_source`: local threads, or Ray with
:mod:`tokenpact.data.ray_encoder`) encodes the plan's chunks and the shard sink
(:mod:`tokenpact.data.shard_sink`) writes them, with the corpus manifest beside them.
``dataset.json`` records the tokenizer's semantic hash, the template hash, the ID dtype,
the maximum token ID, record and token counts, the mixture per source and role, and the
SHA-256 of every shard file; :func:`tokenpact.data.open_dataset` checks all of them.

>>> manifest = encode_dataset("corpus.jsonl.gz", tok, "out/", format="megatron")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract import CorpusManifest, DatasetDeclaration, template_hash
from ..contract.dataset_files import DATASET_MANIFEST, ENCODED_DATASET_KIND
from ..errors import ConfigError, InvalidInputError
from .chunk_encoding import EncodeOptions, encode_chunk
from .chunk_source import ChunkSource, LocalChunkSource
from .corpus_manifest import write_json_atomic
from .documents import Document, sort_documents
from .encode_plan import CORPUS_NAME, EncodePlan, shard_name
from .mixture import MixtureReport
from .ray_encoder import RayShardEncoder
from .shard_formats import PARQUET_COMPRESSIONS, token_dtype
from .shard_sink import ShardSink, Written
from .shard_writer import CHUNK_CHARS

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = [
    "BOUNDARY_POLICIES",
    "CORPUS_NAME",
    "DEFAULT_RECORDS_PER_SHARD",
    "MANIFEST_KIND",
    "MANIFEST_NAME",
    "SHARD_FORMATS",
    "EncodeOptions",
    "encode_chunk",
    "encode_dataset",
    "shard_name",
]

SHARD_FORMATS = ("parquet", "megatron")
BOUNDARY_POLICIES = ("eos_separate_documents", "none")
MANIFEST_NAME = DATASET_MANIFEST
MANIFEST_KIND = ENCODED_DATASET_KIND
DEFAULT_RECORDS_PER_SHARD = 100_000
_TEXT = attrgetter("text")


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


def _boundary_ids(
    tok: Tokenizer, *, add_bos: bool, append_eod: bool
) -> tuple[int | None, int | None]:
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
    tok: Tokenizer,
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
    tokenizer: Tokenizer,
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
    engine: str | ChunkSource = "local",
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

    ``engine`` picks the chunk source: ``"local"`` (this process's threads), ``"ray"``
    (a Ray cluster, configured by ``ray_options``) or a
    :class:`~tokenpact.data.chunk_source.ChunkSource` object, such as
    ``LocalChunkSource(encode_ahead=1, text_digests=False)``; every source writes the
    same bytes.
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
    if not isinstance(engine, ChunkSource) and engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {engine!r}; use 'local', 'ray' or a ChunkSource")
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
    chunk_source = _chunk_source(engine, tokenizer, ray_options)
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
    plan = EncodePlan(
        tokenizer=tokenizer,
        out=out,
        docs=docs,
        texts=texts,
        doc_ids=doc_ids,
        bounds=[
            (s, min(s + records_per_shard, len(docs)))
            for s in range(0, len(docs), records_per_shard)
        ],
        options=opts,
        corpus=corpus,
        corpus_revision=corpus_revision,
        roles=roles,
        source_digests=chunk_source.text_digests,
    )
    written = ShardSink(plan, progress=progress).write(chunk_source)
    policy = _checked_policy(
        boundary_policy,
        tokenizer,
        eod_id,
        add_special_tokens=add_special_tokens,
        truncated=sum(s.truncated for s in written.summaries),
    )
    manifest = _manifest(plan, written, policy, records_per_shard=records_per_shard)
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return manifest


def _chunk_source(
    engine: str | ChunkSource, tokenizer: Tokenizer, ray_options: Mapping[str, Any] | None
) -> ChunkSource:
    if not isinstance(engine, str):
        return engine
    if engine == "ray":
        return RayShardEncoder(tokenizer, **dict(ray_options or {}))
    return LocalChunkSource()


def _manifest(
    plan: EncodePlan, written: Written, policy: str, *, records_per_shard: int
) -> dict[str, Any]:
    """``dataset.json`` of a plan its sink has written."""
    opts, summaries = plan.options, written.summaries
    lengths = np.concatenate([s.lengths for s in summaries]) if summaries else np.zeros(0, np.int64)
    tops = [s.max_token_id for s in summaries if s.max_token_id is not None]
    max_id = max(tops) if tops else None
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
        corpus_hash=written.corpus_hash,
        tokenizer_hash=opts.tokenizer_hash,
        template_hash=opts.template_hash,
        record_count=len(plan.docs),
        max_token_id=max_id,
    )
    mixture: MixtureReport = written.tally.report(lengths)
    return {
        "kind": MANIFEST_KIND,
        "version": 1,
        "format": opts.format,
        "dtype": opts.dtype,
        "vocab_size": plan.tokenizer.vocab_size,
        "tokenizer_hash": opts.tokenizer_hash,
        "template_hash": opts.template_hash,
        "boundary_policy": policy,
        "add_special_tokens": opts.add_special_tokens,
        "append_eod": opts.eod_id is not None,
        "add_bos": opts.bos_id is not None,
        "eod_id": opts.eod_id,
        "bos_id": opts.bos_id,
        "allowed_special": list(opts.allowed_special),
        "max_length": opts.max_length,
        "compression": opts.compression if opts.format == "parquet" else "none",
        "order_policy": "sorted_by_doc_id",
        "records_per_shard": records_per_shard,
        "records": len(plan.docs),
        "tokens": int(lengths.sum()),
        "truncated": sum(s.truncated for s in summaries),
        "max_token_id": max_id,
        "corpus_hash": written.corpus_hash,
        "declaration": declaration.to_json(),
        "declaration_hash": declaration.hash,
        "mixture": _exact_shares(mixture.to_json()),
        "shards": shards,
    }
