"""SFT data: conversations rendered with a chat template into shards bound to the
tokenizer and the template, with the supervision mask beside the IDs.

Each conversation is one record (``render_columns`` in training mode: the IDs of
``apply_chat_template`` and ``assistant_mask`` by the rule of
:mod:`tokenpact.chat.supervision`). The shards are those of
:func:`tokenpact.data.encode_dataset` (Parquet or Megatron, the same ``dataset.json``),
plus one ``shard-NNNNN.mask`` file per shard: a byte per token, bit 0 set where the
token is supervised, bit 1 where it is a control token. The manifest lists the mask
files with their SHA-256 like every shard file, and :func:`tokenpact.data.open_dataset`
reads them back as ``EncodedDataset.assistant_mask`` (the record table's supervised
targets, for packing or padding).

>>> manifest = encode_conversations("chats.jsonl", template, "sft/")  # doctest: +SKIP
>>> ds = open_dataset("sft/", tokenizer=tok, template_hash=template.template_hash)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._stale_temps import remove_stale_temps
from ..contract import DatasetDeclaration, canonical_bytes
from ..contract.hashing import HASH_PREFIX
from ..errors import ConfigError, InvalidInputError
from .corpus_manifest import write_json_atomic
from .encode import (
    DEFAULT_RECORDS_PER_SHARD,
    MANIFEST_KIND,
    MANIFEST_NAME,
    SHARD_FORMATS,
    EncodeOptions,
    shard_name,
)
from .shard_formats import token_dtype
from .shard_sink import write_shards
from .shard_writer import CHUNK_CHARS, EncodedChunk

MASK_SUFFIX = ".mask"
SUPERVISED_BIT = 1
CONTROL_BIT = 2
SUPERVISION_RULE = "generated_turns"  # tokenpact.chat.supervision: the prefix property


def read_conversations(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, Any]]:
    """``(doc_id, record)`` per line of JSONL files: a record is a message list or
    ``{"messages": [...], "tools": [...], "documents": [...]}`` (an ``"id"`` string, if
    present, is the record's doc_id and is not passed to the template). Records without
    an id get their position (``000000000017``) so that they keep the files' order."""
    out: list[tuple[str, Any]] = []
    for path in paths:
        try:
            handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
        with handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise InvalidInputError(
                        f"{path} line {line_no} is not JSON ({exc}); write one conversation "
                        'per line: a list of messages or {"messages": [...]}'
                    ) from None
                doc_id = f"{len(out):012d}"
                if isinstance(record, dict) and "id" in record:
                    record = dict(record)
                    given = record.pop("id")
                    if not isinstance(given, str) or not given:
                        raise InvalidInputError(
                            f'{path} line {line_no}: "id" must be a non-empty string'
                        )
                    doc_id = given
                out.append((doc_id, record))
    return out


def encode_conversations(
    source: Sequence[str | os.PathLike[str]] | Iterable[tuple[str, Any]],
    template: Any,
    out_dir: str | os.PathLike[str],
    *,
    format: str = "parquet",
    records_per_shard: int = DEFAULT_RECORDS_PER_SHARD,
    supervise: str = "turns",
    on_error: str = "raise",
    threads: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
    **template_kwargs: Any,
) -> dict[str, Any]:
    """Render conversations (JSONL paths, or ``(doc_id, record)`` pairs) with ``template``
    (a ``tokenpact.chat.ChatTemplate``) into shards in ``out_dir``; returns the manifest.

    ``supervise`` and ``on_error`` are those of ``render_columns``; with
    ``on_error="skip"`` the manifest's ``skipped`` lists each record left out (doc_id,
    error type, message).
    """
    if format not in SHARD_FORMATS:
        raise ConfigError(f"unknown shard format {format!r}; use one of {SHARD_FORMATS}")
    if isinstance(records_per_shard, bool) or not isinstance(records_per_shard, int):
        raise ConfigError(
            f"records_per_shard must be a positive integer, not {records_per_shard!r}"
        )
    if records_per_shard < 1:
        raise ConfigError(f"records_per_shard must be a positive integer, not {records_per_shard}")
    out = Path(out_dir)
    if (out / MANIFEST_NAME).exists() and not overwrite:
        raise ConfigError(f"{out} already holds a dataset; pass overwrite=True or another out_dir")
    items = list(source)
    pairs: list[tuple[str, Any]]
    if all(isinstance(s, (str, os.PathLike)) for s in items):
        pairs = read_conversations(cast("list[str | os.PathLike[str]]", items))
    else:
        pairs = [(str(d), r) for d, r in cast("list[tuple[str, Any]]", items)]
    pairs.sort(key=lambda p: p[0])
    ids = [d for d, _ in pairs]
    if len(set(ids)) != len(ids):
        raise InvalidInputError('conversation ids repeat; give each record a distinct "id"')
    records = [r for _, r in pairs]
    cols = template.render_columns(
        records, threads=threads, supervise=supervise, on_error=on_error, **template_kwargs
    )
    kept = list(range(len(records))) if cols.record_index is None else cols.record_index.tolist()
    doc_ids = [ids[k] for k in kept]
    tokenizer = template.tokenizer
    opts = EncodeOptions(
        format=format,
        dtype=token_dtype(tokenizer.vocab_size, format).name,
        tokenizer_hash=tokenizer.semantic_hash,
        template_hash=template.template_hash,
        threads=threads,
        chunk_chars=CHUNK_CHARS,
    )
    dtype = np.dtype(opts.dtype)
    bounds = [
        (s, min(s + records_per_shard, len(doc_ids)))
        for s in range(0, len(doc_ids), records_per_shard)
    ]
    flags = cols.assistant_mask.astype(np.uint8) * SUPERVISED_BIT
    flags |= cols.special_tokens_mask.astype(np.uint8) * CONTROL_BIT

    def chunks() -> Iterable[tuple[int, EncodedChunk]]:
        for k, (a, b) in enumerate(bounds):
            lo, hi = int(cols.offsets[a]), int(cols.offsets[b])
            yield (
                k,
                EncodedChunk(
                    cols.input_ids[lo:hi].astype(dtype),
                    (cols.offsets[a : b + 1] - lo).astype(np.int64),
                    np.zeros(b - a, dtype=bool),
                ),
            )

    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)  # what killed runs left (their processes are gone)
    (out / MANIFEST_NAME).unlink(missing_ok=True)  # no manifest naming half-written shards
    summaries = write_shards(out, doc_ids, bounds, chunks(), opts, progress)
    shards = []
    for k, ((a, b), summary) in enumerate(zip(bounds, summaries, strict=True)):
        lo, hi = int(cols.offsets[a]), int(cols.offsets[b])
        name = f"{shard_name(k)}{MASK_SUFFIX}"
        data = flags[lo:hi].tobytes()
        tmp = out / f".{name}.tmp{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, out / name)
        files = dict(summary.files)
        files[name] = HASH_PREFIX + hashlib.sha256(data).hexdigest()
        shards.append(
            {
                "files": files,
                "records": b - a,
                "tokens": hi - lo,
                "first_doc_id": summary.doc_ids[0],
                "last_doc_id": summary.doc_ids[-1],
            }
        )
    tops = [s.max_token_id for s in summaries if s.max_token_id is not None]
    max_id = max(tops) if tops else None
    corpus_hash = HASH_PREFIX + hashlib.sha256(canonical_bytes(pairs)).hexdigest()
    declaration = DatasetDeclaration(
        corpus_hash=corpus_hash,
        tokenizer_hash=opts.tokenizer_hash,
        template_hash=opts.template_hash,
        record_count=len(doc_ids),
        max_token_id=max_id,
    )
    lengths = np.diff(cols.offsets)
    manifest = {
        "kind": MANIFEST_KIND,
        "version": 1,
        "format": format,
        "dtype": opts.dtype,
        "vocab_size": tokenizer.vocab_size,
        "tokenizer_hash": opts.tokenizer_hash,
        "template_hash": opts.template_hash,
        "boundary_policy": "one_conversation_per_record",
        "add_special_tokens": False,
        "max_length": None,
        "compression": "none",
        "order_policy": "sorted_by_doc_id",
        "records_per_shard": records_per_shard,
        "records": len(doc_ids),
        "tokens": int(lengths.sum()),
        "truncated": 0,
        "max_token_id": max_id,
        "corpus_hash": corpus_hash,
        "declaration": declaration.to_json(),
        "declaration_hash": declaration.hash,
        "supervision": {
            "rule": SUPERVISION_RULE,
            "supervise": supervise,
            "mask_suffix": MASK_SUFFIX,
            "supervised_bit": SUPERVISED_BIT,
            "control_bit": CONTROL_BIT,
            "supervised_tokens": int(cols.assistant_mask.sum()),
        },
        "skipped": [
            {"doc_id": ids[s.index], "error": s.error, "message": s.message} for s in cols.skipped
        ],
        "shards": shards,
    }
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return manifest
