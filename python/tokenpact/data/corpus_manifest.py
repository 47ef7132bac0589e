"""The corpus manifest the pipeline writes: :class:`tokenpact.contract.CorpusManifest`.

Each kept document is recorded with its source, split, licence class and the digests
of its text before and after cleanup; the manifest also records the pipeline step
versions, the seed and the order policy (documents are listed in ``doc_id`` order).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

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
    names = DEFAULT_SPLIT_NAMES
    records = []
    for doc in sort_by_id(documents):
        role = (roles or {}).get(doc.doc_id, "train")
        split = names.get(role)
        if split is None:
            raise ContractError(
                f"role {role!r} has no corpus split; build the manifest with "
                "build_corpus_manifest(split_names=...) and pass it as corpus="
            )
        digest = "sha256:" + hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest()
        records.append(
            {
                "clean_sha256": digest,
                "document_id": doc.doc_id,
                "license_class": doc.license_class,
                "raw_sha256": digest,
                "source_id": doc.source,
                "split": split,
            }
        )
    header = CorpusManifest(revision=revision, documents=(), order_policy=ORDER_POLICY).to_json()
    CorpusManifest.from_json(header)
    document = {**header, "documents": records}
    try:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return canonical_bytes(document)


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
