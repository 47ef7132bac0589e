"""Checking an encoded-dataset manifest (``dataset.json``) against itself, fail closed.

The manifest is untrusted when read back: every field :func:`open_dataset
<tokenpact.data.open_dataset>` relies on is type-checked here, and the fields that say
the same thing twice must agree (the declaration and its hash, the declaration's
record count, maximum ID, corpus and tokenizer hashes and the manifest's own; the
totals and the per-shard counts; the ID dtype and the vocabulary). The shard list is
bound by position: entry ``k`` must name exactly shard ``k``'s files, hold
``records_per_shard`` records (the last one the remainder), so an entry dropped,
swapped or repeated, with the totals adjusted, no longer matches. What the shard files
themselves hold is checked against these counts when the shards are read
(:mod:`tokenpact.data.dataset`).

>>> checked = checked_manifest(read_json(root / "dataset.json"), root)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import DatasetDeclaration
from ..contract.hashing import CORPUS, HASH_PREFIX, framed_hasher
from ..errors import ContractError
from .chat_shards import MASK_SUFFIX
from .corpus_stream import document_ids
from .encode import CORPUS_NAME, MANIFEST_KIND, MANIFEST_NAME, SHARD_FORMATS, shard_name

MANIFEST_VERSIONS = (1,)
_DTYPES = {"parquet": ("uint16", "uint32"), "megatron": ("uint16", "int32")}
_MAX_CORPUS_BYTES = 1 << 34  # a corpus.json beyond this is not one we wrote
_CORPUS_BLOCK = 1 << 20  # corpus.json is read, hashed and walked a block at a time


@dataclass(frozen=True)
class ShardEntry:
    """One checked shard entry: its files (name to digest) and declared counts."""

    index: int
    files: dict[str, str]
    records: int
    tokens: int
    first_doc_id: str | None
    last_doc_id: str | None


@dataclass(frozen=True)
class CheckedManifest:
    """The fields of a manifest that passed :func:`checked_manifest`."""

    format: str
    dtype: np.dtype[Any]
    vocab_size: int
    records: int
    tokens: int
    truncated: int
    max_token_id: int | None
    supervised: bool
    corpus_hash: str
    shards: tuple[ShardEntry, ...]


def _bad(root: Path, what: str) -> ContractError:
    return ContractError(
        f"{root / MANIFEST_NAME}: {what}; the manifest was edited or damaged: re-encode the "
        "dataset or restore the file"
    )


def _int(manifest: dict[str, Any], key: str, root: Path, *, minimum: int = 0) -> int:
    value = manifest.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(root, f"{key} is {value!r}, not an integer >= {minimum}")
    return value


def _str(manifest: dict[str, Any], key: str, root: Path) -> str:
    value = manifest.get(key)
    if not isinstance(value, str):
        raise _bad(root, f"{key} is {value!r}, not a string")
    return value


def expected_files(fmt: str, index: int, supervised: bool) -> set[str]:
    """The file names shard ``index`` has in a dataset of format ``fmt``."""
    base = shard_name(index)
    names = {f"{base}.parquet"} if fmt == "parquet" else {f"{base}.{e}" for e in ("bin", "idx")}
    if fmt == "megatron":
        names.add(f"{base}.docs.tsv")
    if supervised:
        names.add(f"{base}{MASK_SUFFIX}")
    return names


def _shard_entry(
    entry: Any, k: int, root: Path, *, fmt: str, supervised: bool, records: int
) -> ShardEntry:
    if not isinstance(entry, dict):
        raise _bad(root, f"shard entry {k} is not an object")
    files = entry.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(name, str) and isinstance(digest, str) for name, digest in files.items()
    ):
        raise _bad(root, f"shard entry {k} has no file digests")
    if set(files) != expected_files(fmt, k, supervised):
        raise _bad(
            root,
            f"shard entry {k} lists {sorted(files)}, expected "
            f"{sorted(expected_files(fmt, k, supervised))} (entries are in shard order)",
        )
    if entry.get("records") != records or isinstance(entry.get("records"), bool):
        raise _bad(root, f"shard entry {k} says {entry.get('records')!r} records, not {records}")
    tokens = _int(entry, "tokens", root)
    first, last = entry.get("first_doc_id"), entry.get("last_doc_id")
    if not (isinstance(first, str) and isinstance(last, str)) or (records and first > last):
        raise _bad(root, f"shard entry {k} has no valid first_doc_id/last_doc_id")
    return ShardEntry(k, dict(files), records, tokens, first, last)


def checked_manifest(manifest: Any, root: Path) -> CheckedManifest:
    """Every field check that needs no shard data and no tokenizer; a failure is a
    ContractError (the caller compares the tokenizer's hash and vocabulary size)."""
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise ContractError(f"{root / MANIFEST_NAME} is not a tokenpact encoded-dataset manifest")
    version = manifest.get("version")
    if isinstance(version, bool) or version not in MANIFEST_VERSIONS:
        raise ContractError(
            f"{root / MANIFEST_NAME} has manifest version {version!r}; this tokenpact reads "
            f"{list(MANIFEST_VERSIONS)}: upgrade tokenpact or re-encode the dataset"
        )
    fmt = manifest.get("format")
    if fmt not in SHARD_FORMATS:
        raise ContractError(f"unsupported dataset shard format {fmt!r} in {root}")
    vocab = _int(manifest, "vocab_size", root, minimum=1)
    dtype_name = _str(manifest, "dtype", root)
    # The writer picks the narrowest (token_dtype); a wider one of the format holds the IDs too.
    if dtype_name not in _DTYPES[fmt] or np.iinfo(np.dtype(dtype_name)).max < vocab - 1:
        raise _bad(root, f"dtype {dtype_name!r} is not a {fmt} dtype that holds {vocab} IDs")
    records = _int(manifest, "records", root)
    tokens = _int(manifest, "tokens", root)
    truncated = _int(manifest, "truncated", root)
    per_shard = _int(manifest, "records_per_shard", root, minimum=1)
    top = manifest.get("max_token_id")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int)):
        raise _bad(root, f"max_token_id is {top!r}, not an integer")
    if (top is None) != (tokens == 0) or (top is not None and not 0 <= top < vocab):
        raise _bad(root, f"max_token_id {top!r} is impossible for {tokens} tokens of {vocab} IDs")
    if truncated > records:
        raise _bad(root, f"{truncated} records truncated of {records}")
    tokenizer_hash = _str(manifest, "tokenizer_hash", root)
    template_hash = _str(manifest, "template_hash", root)
    corpus_hash = _str(manifest, "corpus_hash", root)
    try:
        declaration = DatasetDeclaration.from_json(manifest.get("declaration"))
    except (ContractError, KeyError, TypeError, ValueError) as exc:
        raise _bad(root, f"the declaration is malformed ({exc})") from None
    if manifest.get("declaration_hash") != declaration.hash:
        raise _bad(root, "declaration_hash is not the hash of the declaration")
    for key, mine in (
        ("tokenizer_hash", tokenizer_hash),
        ("template_hash", template_hash),
        ("corpus_hash", corpus_hash),
        ("record_count", records),
        ("max_token_id", top),
    ):
        theirs = getattr(declaration, key)
        if theirs != mine or isinstance(theirs, bool):
            raise _bad(root, f"the declaration's {key} {theirs!r} is not the manifest's {mine!r}")
    supervised = manifest.get("supervision") is not None
    if supervised and not isinstance(manifest.get("supervision"), dict):
        raise _bad(root, "supervision is not an object")
    entries = manifest.get("shards")
    if not isinstance(entries, list):
        raise _bad(root, "shards is not a list")
    n_shards = -(-records // per_shard)
    if len(entries) != n_shards:
        raise _bad(
            root,
            f"{len(entries)} shard entries for {records} records of {per_shard} per shard "
            f"(expected {n_shards})",
        )
    shards = tuple(
        _shard_entry(
            entry,
            k,
            root,
            fmt=fmt,
            supervised=supervised,
            records=min(per_shard, records - k * per_shard),
        )
        for k, entry in enumerate(entries)
    )
    if sum(s.tokens for s in shards) != tokens:
        raise _bad(root, "the shard entries' token counts do not add up to tokens")
    for before, after in zip(shards, shards[1:], strict=False):
        assert before.last_doc_id is not None and after.first_doc_id is not None
        if not before.last_doc_id < after.first_doc_id:
            raise _bad(root, f"shard entries {before.index} and {after.index} are out of order")
    return CheckedManifest(
        format=fmt,
        dtype=np.dtype(dtype_name),
        vocab_size=vocab,
        records=records,
        tokens=tokens,
        truncated=truncated,
        max_token_id=top,
        supervised=supervised,
        corpus_hash=corpus_hash,
        shards=shards,
    )


def check_corpus_file(root: Path, corpus_hash: str, doc_ids: list[str]) -> None:
    """``corpus.json`` must be the corpus manifest ``corpus_hash`` names (its canonical
    bytes and a newline, hashed as written), and list exactly the documents ``doc_ids``
    (the dataset's, strictly ascending).

    The file is read once, as a stream of blocks that are hashed and walked for their
    document IDs together (:mod:`~tokenpact.data.corpus_stream`): memory is a block, one
    record and a bit per document, at any corpus size. Each ID is looked up in
    ``doc_ids`` as it passes; a tampered file is refused by its hash first, then by its
    IDs (what the walk found is reported only once the hash matched)."""
    path = root / CORPUS_NAME
    try:
        handle = path.open("rb")
    except OSError:
        raise ContractError(
            f"{CORPUS_NAME} is missing from {root}; it binds the dataset to its corpus: "
            "restore it or re-encode the dataset"
        ) from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > _MAX_CORPUS_BYTES:
            raise ContractError(f"{path} is {size} bytes, too large for a corpus manifest")
        hasher = framed_hasher(CORPUS, max(size - 1, 0))  # the payload: all but the "\n"
        read, last = 0, b""

        def blocks() -> Iterator[bytes]:
            nonlocal read, last
            while block := handle.read(_CORPUS_BLOCK):
                # Hash the payload bytes only (the file's first size - 1), whatever the
                # file grows to while it is read.
                hasher.update(block[: max(size - 1 - read, 0)])
                read += len(block)
                last = block[-1:]
                yield block

        stream = blocks()
        problem: ContractError | None = None
        try:
            _check_ids(document_ids(stream, str(path)), doc_ids, path)
        except ContractError as exc:
            problem = exc
        for _ in stream:  # the rest of the file still decides the hash
            pass
    whole = read == size and size > 0 and last == b"\n"
    if not whole or HASH_PREFIX + hasher.hexdigest() != corpus_hash:
        raise ContractError(
            f"{path} is not the corpus manifest {corpus_hash} the dataset was encoded from; "
            "restore it or re-encode the dataset"
        )
    if problem is not None:
        raise problem


def _check_ids(listed: Iterator[str], doc_ids: list[str], path: Path) -> None:
    """Every ID of ``listed`` is one of ``doc_ids`` (sorted, unique), none twice, and
    every one of ``doc_ids`` is listed."""
    marked = bytearray(len(doc_ids))
    count = following = 0
    for ident in listed:
        # encode_dataset lists the documents in doc_id order: the next one is checked
        # first, any other one is found by bisection.
        if following < len(doc_ids) and doc_ids[following] == ident:
            at = following
        else:
            at = bisect_left(doc_ids, ident)
        if at == len(doc_ids) or doc_ids[at] != ident or marked[at]:
            twice = at < len(doc_ids) and doc_ids[at] == ident
            raise ContractError(
                f"{path} lists the document {ident!r} "
                + ("twice" if twice else "that the shards do not hold")
                + "; records were dropped or added after encoding: re-encode the dataset"
            )
        marked[at] = 1
        count += 1
        following = at + 1
    if count != len(doc_ids):
        raise ContractError(
            f"{path} lists {count} documents, the shards hold {len(doc_ids)} others; records "
            "were dropped or added after encoding: re-encode the dataset"
        )
