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
from ..contract import CorpusDocument, CorpusManifest, canonical_bytes
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
    names = DEFAULT_SPLIT_NAMES
    header = CorpusManifest(revision=revision, documents=(), order_policy=ORDER_POLICY).to_json()
    CorpusManifest.from_json(header)
    if roles is not None:
        if columns is None:
            columns = record_columns(ordered)
        role_of = list(map(roles.get, columns.doc_ids, repeat("train")))
        unknown = next((r for r in role_of if r not in names), None)
        if unknown is not None:
            raise ContractError(
                f"role {unknown!r} has no corpus split; build the manifest with "
                "build_corpus_manifest(split_names=...) and pass it as corpus="
            )
        splits = [names[r] for r in role_of]
    else:
        splits = ["train"] * len(ordered)
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    empty = b'"documents":[]'
    try:
        # Every record in its canonical form (keys sorted, compact, strings escaped
        # like json's own encoder), formatted natively straight from the strings' UTF-8:
        # a Python step per document cost as much CPU as the Parquet writer beside the
        # encoder. Tests compare the bytes with the reference writer's.
        cols = columns if columns is not None else record_columns(ordered)
        body, sizes = _native.corpus_records_json(
            cols.texts, cols.doc_ids, cols.license_classes, cols.sources, splits
        )
        data = head.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the reference writer below
        pass
    else:
        if data.count(empty) == 1:
            at = data.index(empty) + len(empty) - 1  # before the closing bracket
            return data[:at] + body + data[at:], sizes
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
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    tmp.write_bytes(text.encode("utf-8"))
    os.replace(tmp, target)
    return target


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ContractError(f"{path} does not exist") from None
    except ValueError as exc:
        raise ContractError(f"{path} is not valid JSON ({exc})") from None
