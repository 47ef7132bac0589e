"""Cache invalidation: the release-lifecycle step that retires what the old identity built.

Every cache a serving or training stack keeps for a tokenizer is derived from that
tokenizer's identity (and the chat template's): prefix-cache blocks, prompt caches,
tokenization caches (text -> IDs), compiled graphs specialised to a vocabulary size, and
the tokenizer-derived datasets themselves. A release bundle names one cache namespace,
``cache_namespace(semantic_hash, template_hash)``; keeping every such cache under that
namespace (a key prefix, a directory named by it) is what makes invalidation mechanical.

When a release changes the tokenizer or the template, the namespace rotates, and the
bundle records, sealed with everything else, what the step retires::

    "cache_invalidation": {
        "reason": "append-only",                 # the bundle's declared transition
        "stale": {"cache_namespace": "tp-…",     # the previous release's namespace
                  "tokenizer_semantic_hash": "sha256:…", "template_hash": "sha256:…"},
        "caches": ["prefix", "prompt", "tokenization", "compiled-graph"],
        "datasets": [{"path": "data-v1.json", "hash": "sha256:…"}]}   # re-encode these

It is ``null`` for a first release and when the namespace did not change (a
byte-identical redeploy or a repackage: nothing built for the old identity is stale).
Appending tokens is no exception: old IDs keep their meaning, but old text can segment
differently, so encoded data and prefix caches are rebuilt for the new artifact.

The asymmetry of the lifecycle is recorded in the pointer file's ``invalidations`` log:
promoting retires the previous namespace (no request of the new release may read it;
discard it once nothing routes to the previous release), and rolling back invalidates
only the candidate's namespace; the restored release's namespace is never listed, so
its caches are not discarded by accident, and the candidate's never outlive it.

:func:`find_stale` finds, under directories a tool names, what a record makes stale:
encoded datasets and declarations bound to the old tokenizer hash, and files or
directories whose name holds the stale namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..contract import template_hash
from ..contract.dataset_files import read_dataset
from ..errors import ContractError

# What derives from a tokenizer/template identity at runtime (seed 0x0C2's list).
CACHE_KINDS = ("prefix", "prompt", "tokenization", "compiled-graph")
# Declarations larger than this are not dataset declarations (a scan reads only these).
_MAX_DECLARATION_BYTES = 4 << 20


def invalidation_record(
    previous: Mapping[str, Any] | None, bundle: Mapping[str, Any]
) -> dict[str, Any] | None:
    """What ``bundle``'s release retires of the ``previous`` bundle's caches (None: no
    previous release, or the cache namespace did not change).

    Both are bundle documents; the record depends on their recorded fields only, so
    ``check_release`` re-derives it exactly."""
    if previous is None or previous["cache_namespace"] == bundle["cache_namespace"]:
        return None
    template = previous.get("template")
    return {
        "reason": bundle.get("transition"),
        "stale": {
            "cache_namespace": previous["cache_namespace"],
            "tokenizer_semantic_hash": previous["tokenizer"]["semantic_hash"],
            "template_hash": template_hash(None) if template is None else template["hash"],
        },
        "caches": list(CACHE_KINDS),
        "datasets": [{"path": previous["dataset"]["path"], "hash": previous["dataset"]["hash"]}],
    }


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a well-formed ``cache_invalidation`` value (None: it is)."""
    if record is None:
        return None
    if not isinstance(record, dict) or set(record) != {"reason", "stale", "caches", "datasets"}:
        return "cache_invalidation must be null or {reason, stale, caches, datasets}"
    stale = record["stale"]
    names = ("cache_namespace", "tokenizer_semantic_hash", "template_hash")
    if not isinstance(stale, dict) or not all(_text(stale.get(n)) for n in names):
        return f"cache_invalidation.stale needs strings {list(names)}"
    caches = record["caches"]
    if not isinstance(caches, list) or not all(c in CACHE_KINDS for c in caches):
        return f"cache_invalidation.caches must list kinds of {list(CACHE_KINDS)}"
    datasets = record["datasets"]
    if not isinstance(datasets, list) or not all(
        isinstance(d, dict) and _text(d.get("path")) and _text(d.get("hash")) for d in datasets
    ):
        return "cache_invalidation.datasets must list {path, hash} objects"
    if record["reason"] is not None and not _text(record["reason"]):
        return "cache_invalidation.reason must be a transition name or null"
    return None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\0" not in value


def log_entry(step: str, bundle: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    """One ``invalidations`` entry of the pointer file: ``step`` (``promote`` retires
    the previous namespace, ``rollback`` invalidates the candidate's), the bundle the
    step acted for and the namespace to discard."""
    return {"step": step, "bundle": bundle["name"], "cache_namespace": namespace}


def find_stale(
    record: Mapping[str, Any] | None, roots: Iterable[str | os.PathLike[str]]
) -> dict[str, list[str]]:
    """What ``record`` makes stale under ``roots``: ``datasets`` (encoded datasets'
    ``dataset.json`` and declaration files bound to the stale tokenizer hash: re-encode
    them with :func:`tokenpact.data.reencode_dataset`) and ``caches`` (files and
    directories whose name holds the stale namespace: discard them). Paths are sorted;
    a directory named by the namespace is listed once, not its contents."""
    found: dict[str, list[str]] = {"datasets": [], "caches": []}
    if record is None:
        return found
    namespace = record["stale"]["cache_namespace"]
    old_hash = record["stale"]["tokenizer_semantic_hash"]
    for root in roots:
        base = Path(root)
        if not base.is_dir():
            raise ContractError(f"cannot search {base} for stale caches: not a directory")
        for folder, dirs, files in os.walk(base):
            here = Path(folder)
            for name in list(dirs):
                if namespace in name:
                    found["caches"].append(str(here / name))
                    dirs.remove(name)  # the whole directory goes; do not list its files
            for name in files:
                path = here / name
                if namespace in name:
                    found["caches"].append(str(path))
                elif name.endswith(".json") and _bound_to(path, old_hash):
                    found["datasets"].append(str(path))
    return {k: sorted(v) for k, v in found.items()}


def _bound_to(path: Path, tokenizer_hash: str) -> bool:
    """Whether ``path`` is a dataset declaration (or an encoded dataset's manifest)
    bound to ``tokenizer_hash``."""
    try:
        if path.stat().st_size > _MAX_DECLARATION_BYTES:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    if tokenizer_hash.encode("ascii") not in data or b"tokenpact." not in data:
        return False
    try:
        found = read_dataset(path)
    except ContractError:
        return False
    return bool(found.declaration.get("tokenizer_hash") == tokenizer_hash)
