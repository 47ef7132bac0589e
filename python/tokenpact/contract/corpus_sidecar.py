"""Compact corpus manifests: the per-document records in a sidecar file, not inline.

A corpus manifest lists every kept document (its digests before and after cleanup) and,
from ``data clean``, every dropped one; on a large corpus that list dwarfs the rest of
the manifest (19,817 documents made a 5.3 MB ``corpus.json``). Past ``inline_limit``
records the manifest keeps its header and names a sidecar instead::

    "documents": [],
    "documents_file": {"path": "corpus.documents.jsonl", "sha256": "sha256:...",
                       "documents": 19817, "dropped": 0}

The sidecar holds one canonical-JSON record per line: the ``documents`` records, then the
``cleaning.dropped`` records, in the manifest's order. :func:`read_corpus_manifest`
checks the sidecar's digest and counts and returns the full manifest, so the corpus hash
(``tokenpact hash``) is the hash of the same document whether its records are inline or
not. Both files are written atomically (temporary file + rename), the sidecar first, so
a manifest never names a sidecar that is not complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .._io import atomic_write_bytes
from .._stale_temps import remove_stale_temps
from ..errors import ContractError
from .canonical import canonical_bytes
from .hashing import HASH_PREFIX

SIDECAR_KEY = "documents_file"
DEFAULT_INLINE_LIMIT = 10_000


def sidecar_name(manifest: Path) -> str:
    """``corpus.json`` -> ``corpus.documents.jsonl`` (beside the manifest)."""
    stem = manifest.name[: -len(".json")] if manifest.name.endswith(".json") else manifest.name
    return f"{stem}.documents.jsonl"


def _dropped(document: dict[str, Any]) -> list[Any]:
    cleaning = document.get("cleaning")
    dropped = cleaning.get("dropped") if isinstance(cleaning, dict) else None
    return dropped if isinstance(dropped, list) else []


def write_corpus_manifest(
    path: str | os.PathLike[str],
    document: dict[str, Any],
    *,
    inline_limit: int | None = DEFAULT_INLINE_LIMIT,
) -> list[Path]:
    """Write the corpus manifest ``document`` (``CorpusManifest.to_json()``, possibly
    with ``cleaning``) to ``path``: inline up to ``inline_limit`` records (None: always
    inline), else with a sidecar. Returns the paths written."""
    target = Path(path)
    # What killed runs left beside the manifest and its sidecar (their processes are gone).
    remove_stale_temps(target.parent, [target.name, sidecar_name(target)])
    documents = document.get("documents") or []
    dropped = _dropped(document)
    if SIDECAR_KEY in document:
        raise ContractError(f"the manifest already names a sidecar ({SIDECAR_KEY})")
    if inline_limit is not None and inline_limit < 0:
        raise ContractError(f"the inline limit must be >= 0, got {inline_limit}")
    if inline_limit is None or len(documents) + len(dropped) <= inline_limit:
        _write_json(target, document)
        return [target]
    lines = [canonical_bytes(r) + b"\n" for r in [*documents, *dropped]]
    body = b"".join(lines)
    name = sidecar_name(target)
    compact = dict(document)
    compact["documents"] = []
    if isinstance(document.get("cleaning"), dict) and "dropped" in document["cleaning"]:
        compact["cleaning"] = {**document["cleaning"], "dropped": []}
    compact[SIDECAR_KEY] = {
        "path": name,
        "sha256": HASH_PREFIX + hashlib.sha256(body).hexdigest(),
        "documents": len(documents),
        "dropped": len(dropped),
    }
    sidecar = target.with_name(name)
    atomic_write_bytes(sidecar, body)
    _write_json(target, compact)
    return [target, sidecar]


def _write_json(target: Path, document: Any) -> None:
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    atomic_write_bytes(target, text.encode("utf-8"))


def is_compact(document: Any) -> bool:
    return isinstance(document, dict) and SIDECAR_KEY in document


def expand_corpus_manifest(document: dict[str, Any], manifest_path: Path) -> dict[str, Any]:
    """The full manifest of a compact ``document`` read from ``manifest_path``: its
    sidecar read, its digest and record counts checked, the records put back inline."""
    ref = document.get(SIDECAR_KEY)
    where = f"{manifest_path} ({SIDECAR_KEY})"
    if not isinstance(ref, dict) or set(ref) != {"path", "sha256", "documents", "dropped"}:
        raise ContractError(f"{where} must hold path, sha256, documents and dropped")
    name, digest, n_docs, n_dropped = ref["path"], ref["sha256"], ref["documents"], ref["dropped"]
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name[0] == ".":
        raise ContractError(f"{where}: path must be a file name beside the manifest, got {name!r}")
    if not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (n_docs, n_dropped)
    ):
        raise ContractError(f"{where}: documents and dropped must be counts")
    if document.get("documents"):
        raise ContractError(f"{where}: a manifest with a sidecar lists no documents inline")
    sidecar = manifest_path.with_name(name)
    try:
        body = sidecar.read_bytes()
    except OSError as exc:
        raise ContractError(
            f"{manifest_path} keeps its document records in {sidecar}, which cannot be read "
            f"({exc.strerror or exc}); keep the two files together"
        ) from None
    actual = HASH_PREFIX + hashlib.sha256(body).hexdigest()
    if actual != digest:
        raise ContractError(
            f"{sidecar} does not match {manifest_path}: its SHA-256 is {actual}, the manifest "
            f"records {digest}; the sidecar was changed or belongs to another manifest"
        )
    try:
        records = [json.loads(line) for line in body.decode("utf-8").splitlines()]
    except (UnicodeDecodeError, ValueError) as exc:
        raise ContractError(f"{sidecar} is not JSON Lines ({exc})") from None
    if len(records) != n_docs + n_dropped:
        raise ContractError(
            f"{sidecar} holds {len(records)} records, the manifest counts "
            f"{n_docs} documents and {n_dropped} dropped"
        )
    full = {k: v for k, v in document.items() if k != SIDECAR_KEY}
    full["documents"] = records[:n_docs]
    cleaning = full.get("cleaning")
    if isinstance(cleaning, dict) and "dropped" in cleaning:
        full["cleaning"] = {**cleaning, "dropped": records[n_docs:]}
    elif n_dropped:
        raise ContractError(f"{where}: dropped records without a cleaning.dropped list")
    return full


def read_corpus_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The corpus manifest at ``path`` with every record inline (a sidecar checked and
    read back when the manifest names one)."""
    p = Path(path)
    try:
        document = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ContractError(f"{p} cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ContractError(f"{p} is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ContractError(f"{p} is not a corpus manifest (a JSON object)")
    return expand_corpus_manifest(document, p) if is_compact(document) else document
