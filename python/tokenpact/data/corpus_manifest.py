"""The corpus manifest the pipeline writes: :class:`tokenpact.contract.CorpusManifest`.

Each kept document is recorded with its source, split, licence class and the digests
of its text before and after cleanup; the manifest also records the pipeline step
versions, the seed and the order policy (documents are listed in ``doc_id`` order).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _native
from .._stale_temps import remove_stale_temps
from ..contract import CorpusDocument, CorpusManifest, canonical_bytes
from ..contract.canonical import nesting_depth
from ..errors import ContractError
from .documents import Document, sort_by_id

# The corpus declaration knows three splits; common role names map onto them.
DEFAULT_SPLIT_NAMES = {
    "fit": "train",
    "train": "train",
    "validation": "validation",
    "valid": "validation",
    "dev": "validation",
    "test": "test",
}
ORDER_POLICY = "sorted_by_doc_id"


@dataclass(frozen=True)
class RecordColumns:
    """The fields of ordered documents that a corpus record holds, one list each."""

    texts: list[str]
    doc_ids: list[str]
    license_classes: list[str]
    sources: list[str]


def record_columns(
    ordered: Sequence[Document], *, texts: list[str] | None = None, doc_ids: list[str] | None = None
) -> RecordColumns:
    """The record fields of ``ordered`` (``texts`` / ``doc_ids`` reused when given),
    read with map(attrgetter): no Python frame per document."""
    return RecordColumns(
        texts=texts if texts is not None else list(map(attrgetter("text"), ordered)),
        doc_ids=doc_ids if doc_ids is not None else list(map(attrgetter("doc_id"), ordered)),
        license_classes=list(map(attrgetter("license_class"), ordered)),
        sources=list(map(attrgetter("source"), ordered)),
    )


def build_corpus_manifest(
    documents: Iterable[Document],
    *,
    revision: str,
    roles: Mapping[str, str] | None = None,
    clean: Callable[[str], str] | None = None,
    pipeline: Mapping[str, str] | None = None,
    seed: int | None = None,
    decontamination: Mapping[str, Any] | None = None,
    split_names: Mapping[str, str] | None = None,
) -> CorpusManifest:
    """Describe ``documents`` (the text as read) and their cleaned text (``clean(text)``).

    ``roles`` maps ``doc_id`` to a role; ``split_names`` maps role names onto the
    declaration's ``train``/``validation``/``test`` (defaults cover fit/valid/dev).
    """
    names = {**DEFAULT_SPLIT_NAMES, **(split_names or {})}
    records = []
    for doc in sort_by_id(documents):
        role = (roles or {}).get(doc.doc_id, "train")
        split = names.get(role)
        if split is None:
            raise ContractError(
                f"role {role!r} has no corpus split; pass split_names={{{role!r}: 'train'}} "
                "(or 'validation' / 'test')"
            )
        records.append(
            CorpusDocument.from_text(
                doc.text,
                clean(doc.text) if clean is not None else None,
                source_id=doc.source,
                document_id=doc.doc_id,
                license_class=doc.license_class,
                split=split,
            )
        )
    manifest = CorpusManifest(
        revision=revision,
        documents=tuple(records),
        order_policy=ORDER_POLICY,
        seed=seed,
        pipeline=dict(pipeline or {}),
        decontamination=dict(decontamination) if decontamination is not None else None,
    )
    # Schema-check the header; the per-document records are valid by construction
    # (from_text digests, non-empty IDs and sources), and checking 10^6 of them with
    # jsonschema would cost more than encoding them.
    CorpusManifest.from_json({**manifest.to_json(), "documents": []})
    return manifest


def corpus_manifest_bytes(
    documents: Iterable[Document], *, revision: str, roles: Mapping[str, str] | None = None
) -> bytes:
    """Canonical JSON of ``build_corpus_manifest(documents, revision=..., roles=...)``
    (no cleanup step), built without a Python object per document.

    The header is checked by the schema and the canonical writer; document records hold
    only digests and already-validated strings, so sorted compact ``json.dumps`` is their
    canonical form (a lone surrogate falls back to the reference writer, which names it).
    """
    return corpus_records_bytes(sort_by_id(documents), revision=revision, roles=roles)[0]


def corpus_records_bytes(
    ordered: Sequence[Document],
    *,
    revision: str,
    roles: Mapping[str, str] | None = None,
    columns: RecordColumns | None = None,
) -> tuple[bytes, NDArray[np.int64]]:
    """:func:`corpus_manifest_bytes` of documents already in ``doc_id`` order, and the
    UTF-8 size of each (the digest pass reads every text anyway).

    ``columns`` are the documents' fields when the caller already listed them
    (``record_columns(ordered)``): each pass over a million documents in ``doc_id``
    order is a cache miss per document."""
    _checked_header(revision)  # a bad header fails first, whatever the records hold
    try:
        # Every record in its canonical form (keys sorted, compact, strings escaped
        # like json's own encoder), formatted natively straight from the strings' UTF-8:
        # a Python step per document cost as much CPU as the Parquet writer beside the
        # encoder. Tests compare the bytes with the reference writer's.
        cols, splits = _columns_and_splits(ordered, roles, columns)
        body, sizes = _native.corpus_records_json(
            cols.texts, cols.doc_ids, cols.license_classes, cols.sources, splits
        )
        data = _manifest_with_records(revision, body)
    except UnicodeEncodeError:  # a lone surrogate: the reference writer below
        data = None
    if data is not None:
        return data, sizes
    return _reference_records_bytes(ordered, revision=revision, roles=roles)


def _columns_and_splits(
    ordered: Sequence[Document], roles: Mapping[str, str] | None, columns: RecordColumns | None
) -> tuple[RecordColumns, list[str]]:
    """The record columns (listed here unless given) and each document's split."""
    cols = columns if columns is not None else record_columns(ordered)
    if roles is None:
        return cols, ["train"] * len(ordered)
    names = DEFAULT_SPLIT_NAMES
    role_of = list(map(roles.get, cols.doc_ids, repeat("train")))
    unknown = next((r for r in role_of if r not in names), None)
    if unknown is not None:
        raise ContractError(
            f"role {unknown!r} has no corpus split; build the manifest with "
            "build_corpus_manifest(split_names=...) and pass it as corpus="
        )
    return cols, [names[r] for r in role_of]


def _checked_header(revision: str) -> dict[str, Any]:
    """The manifest without documents, checked by the schema."""
    header = CorpusManifest(revision=revision, documents=(), order_policy=ORDER_POLICY).to_json()
    CorpusManifest.from_json(header)
    return header


def _manifest_parts(revision: str) -> tuple[bytes, bytes] | None:
    """The manifest's canonical bytes before and after its document records (joined by
    ``,``); None when the header's own strings need the reference writer."""
    header = _checked_header(revision)
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    empty = b'"documents":[]'
    data = head.encode("utf-8")  # UnicodeEncodeError for a lone surrogate
    if data.count(empty) != 1:
        return None
    at = data.index(empty) + len(empty) - 1  # before the closing bracket
    return data[:at], data[at:]


def _manifest_with_records(revision: str, body: bytes) -> bytes | None:
    """The manifest's canonical bytes with ``body`` (records joined by ``,``) as its
    document list; None when the header needs the reference writer."""
    parts = _manifest_parts(revision)
    return None if parts is None else parts[0] + body + parts[1]


class DigestedRecords:
    """The corpus manifest of :func:`corpus_records_bytes`, written to ``path`` chunk by
    chunk from digests the encoder made (``chunk_encoding.encode_flat_digests``): the
    texts are not read again, and little is left once the last chunk is encoded.

    Runs on one thread in call order: :meth:`prepare` (writes the bytes before the
    records), :meth:`add` per encoded chunk of consecutive documents (formats and writes
    their records), then :meth:`finish`. Only :meth:`finish` raises; whatever the native
    formatter cannot spell (a lone surrogate in an ID or field) is left to the reference
    writer (:meth:`finish` returns None), so the bytes and the errors are those of
    :func:`corpus_records_bytes`.
    """

    def __init__(
        self,
        ordered: Sequence[Document],
        path: Path,
        *,
        revision: str,
        roles: Mapping[str, str] | None,
        texts: list[str],
        doc_ids: list[str],
    ) -> None:
        self._ordered, self._path, self._revision, self._roles = ordered, path, revision, roles
        self._texts, self._doc_ids = texts, doc_ids
        self._columns: RecordColumns | None = None
        self._splits: list[str] = []
        self._parts: list[bytes] = []
        self._tail = b""
        self._sizes: list[NDArray[np.int64]] = []
        self._done = 0
        self._error: ContractError | None = None
        self._fallback = False
        self._file: Any = None

    @property
    def columns(self) -> RecordColumns:
        if self._columns is None:
            self._columns = record_columns(self._ordered, texts=self._texts, doc_ids=self._doc_ids)
        return self._columns

    def prepare(self) -> None:
        """Check the header, list the record columns and splits and write the bytes
        before the records (while the first chunk encodes)."""
        try:
            parts = _manifest_parts(self._revision)
            _, self._splits = _columns_and_splits(self._ordered, self._roles, self.columns)
        except ContractError as exc:
            self._error = exc
            return
        except UnicodeEncodeError:
            parts = None
        if parts is None:
            self._fallback = True
            return
        self._parts.append(parts[0])
        self._tail = parts[1]
        self._file = open(self._path, "wb")  # noqa: SIM115 (closed in finish/close)
        self._file.write(parts[0])

    def add(self, digests: NDArray[np.uint8], sizes: NDArray[np.int64]) -> None:
        """Format and write the records of the next ``len(digests)`` documents."""
        a, b = self._done, self._done + int(digests.shape[0])
        self._done = b
        self._sizes.append(sizes)
        if self._error is not None or self._fallback:
            return
        cols = self.columns
        try:
            body = _native.corpus_records_json_digested(
                digests,
                cols.doc_ids[a:b],
                cols.license_classes[a:b],
                cols.sources[a:b],
                self._splits[a:b],
            )
        except UnicodeEncodeError:
            self._fallback = True
            return
        if not body:
            return
        if len(self._parts) > 1:  # records before these ones
            self._parts.append(b",")
            self._file.write(b",")
        self._parts.append(body)
        self._file.write(body)

    def finish(self) -> tuple[list[bytes], NDArray[np.int64]] | None:
        """The manifest written (plus a newline), as the pieces of its bytes, and each
        text's UTF-8 size; None when the reference writer must write it."""
        if self._error is not None or self._fallback or self._done != len(self._ordered):
            self.close()
            if self._error is not None:
                raise self._error
            return None
        self._parts.append(self._tail)
        self._file.write(self._tail + b"\n")
        self.close()
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.int64)
        return self._parts, sizes.astype(np.int64, copy=False)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _reference_records_bytes(
    ordered: Sequence[Document], *, revision: str, roles: Mapping[str, str] | None
) -> tuple[bytes, NDArray[np.int64]]:
    header = _checked_header(revision)
    # The reference writer names a lone surrogate in an ID or field; texts are hashed
    # from their surrogatepass bytes.
    sizes = np.fromiter(
        (len(d.text.encode("utf-8", "surrogatepass")) for d in ordered),
        dtype=np.int64,
        count=len(ordered),
    )
    document = {**header, "documents": _record_dicts(ordered, roles)}
    return canonical_bytes(document), sizes


def _record_dicts(ordered: Sequence[Document], roles: Mapping[str, str] | None) -> list[Any]:
    out = []
    for doc in ordered:
        role = roles.get(doc.doc_id, "train") if roles is not None else "train"
        digest = "sha256:" + hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest()
        out.append(
            {
                "clean_sha256": digest,
                "document_id": doc.doc_id,
                "license_class": doc.license_class,
                "raw_sha256": digest,
                "source_id": doc.source,
                "split": DEFAULT_SPLIT_NAMES[role],
            }
        )
    return out


def utf8_sizes(texts: Iterable[str]) -> NDArray[np.int64]:
    """UTF-8 byte length of each text (an ASCII string's length is its size)."""
    return np.fromiter(
        (len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in texts),
        dtype=np.int64,
    )


def write_json_atomic(path: str | os.PathLike[str], document: Any) -> Path:
    """Write sorted-key JSON to ``path`` through a temporary file and ``os.replace``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent, [target.name])
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    tmp.write_bytes(text.encode("utf-8"))
    os.replace(tmp, target)
    return target


def write_jsonl_atomic(
    path: str | os.PathLike[str],
    records: Iterable[Mapping[str, Any]],
    *,
    sort_keys: bool = True,
) -> Path:
    """Write one JSON object per line via a ``.NAME.tmpPID`` sibling and a rename.

    ``sort_keys=False`` keeps each record's field order (a user's records passed through).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent, [target.name])
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=sort_keys) + "\n")
    os.replace(tmp, target)
    return target


MAX_JSON_DEPTH = 64  # the manifests we write nest a handful of levels


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file we wrote; unreadable, malformed or absurdly nested is a
    :class:`~tokenpact.errors.ContractError` (never a ``RecursionError``)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ContractError(f"{path} does not exist") from None
    except OSError as exc:
        raise ContractError(f"cannot read {path}: {exc}") from None
    return parse_json(data, path)


def parse_json(data: bytes, path: str | os.PathLike[str]) -> Any:
    """:func:`read_json` of the bytes ``data`` already read from ``path``."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ContractError(f"{path} is not valid JSON ({why})") from None
    if nesting_depth(value) > MAX_JSON_DEPTH:
        raise ContractError(f"{path} nests deeper than {MAX_JSON_DEPTH} levels; not one we wrote")
    return value
