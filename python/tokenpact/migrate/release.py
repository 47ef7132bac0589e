"""Release bundles: a tokenizer is released only together with everything bound to it.

A bundle file (``*.bundle.json``) names, by hash, every component of one release::

    {"kind": "tokenpact.release", "version": 2, "name": "balanced-272",
     "tokenizer": {"path": "tok", "semantic_hash": "sha256:..", "release_hash": "sha256:.."},
     "template": {"path": "template.json", "hash": "sha256:.."} | null,
     "dataset": {"path": "dataset.json", "hash": "sha256:.."},
     "checkpoint": {"path": "ckpt", "hash": "sha256:.."},
     "cache_namespace": "tp-3f2a...",
     "transition": "append-only",
     "canary": {"path": "canary.jsonl", "hash": "sha256:..",
                "max_token_ratio": {"default": "1.0"}} | null,
     "previous": {"path": "old.bundle.json", "name": "..", "bundle_sha256": "sha256:.."} | null,
     "cache_invalidation": {"reason": .., "stale": {"cache_namespace": .., ...},
                            "caches": [..], "datasets": [..]} | null,
     "seal": "sha256:.."}

``seal`` hashes every other field, so the name, the transition, the canary limits and
every component hash are bound together; the canary set is bound by the SHA-256 of its
file (emptying it after sealing fails the check). Version 1 bundles (written before the
seal and the canary hash existed) are still read as the promoted baseline and as a
rollback target (the pointer binds their bytes), but are not admitted as a new release:
re-seal them. Unknown versions are refused.

``dataset.path`` names an encoded dataset (its directory or ``dataset.json``, whose
declaration is hashed and whose shard digests are checked) or a bare declaration file.

Paths are relative to the bundle file. ``check_release`` re-derives every hash and runs
every admission check (reconcile's dataset and checkpoint checks, golden vectors, the
prefix proof against the promoted release, cache-namespace rotation, canary slices);
all must pass. ``promote`` switches the pointer file by rename; ``rollback`` switches it
back to the previous bundle, which names every component, so no component is ever
rolled back alone.

Cache invalidation is a recorded step (:mod:`.caches`): a bundle sealed against a
previous release records which cache namespace, tokenizer and template identity it
retires and which dataset must be re-encoded (``cache_invalidation``, sealed);
``check_release`` re-derives the record; ``promote`` and ``rollback`` append what they
retire or invalidate to the pointer's ``invalidations`` log.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract import (
    Report,
    checkpoint_from_safetensors,
    file_sha256,
    framed_hash,
    template_hash,
)
from ..contract.bindings import BINDING_KEY
from ..contract.dataset_files import read_dataset, shard_digest_problems
from ..contract.hashing import bytes_sha256, dataset_hash
from ..contract.reconcile import check_checkpoint, check_dataset
from ..contract.semantics import max_id, special_policy
from ..core import Tokenizer
from ..errors import ConfigError, ContractError, TokenpactError
from .caches import invalidation_record, log_entry, record_problem
from .diff import TRANSITIONS, diff
from .files import atomic_write_json

KIND = "tokenpact.release"
POINTER_KIND = "tokenpact.release-pointer"
CHECKPOINT_FILES = "checkpoint-files-v1"
CACHE_NAMESPACE = "cache-namespace-v1"
BUNDLE_SEAL = "release-bundle-v2"
BUNDLE_VERSIONS = (1, 2)
REQUIRED = ("name", "tokenizer", "dataset", "checkpoint", "cache_namespace")


def cache_namespace(semantic: str, template: str) -> str:
    """A cache namespace derived from the tokenizer and template identities: it changes
    whenever either changes, so no prefix or tokenization cache outlives its contract."""
    digest = framed_hash(CACHE_NAMESPACE, {"tokenizer": semantic, "template": template})
    return "tp-" + digest.split(":", 1)[1][:24]


def checkpoint_hash(folder: str | os.PathLike[str]) -> str:
    """Identity of a checkpoint directory: the raw SHA-256 of every file, by path."""
    root = Path(folder)
    if not root.is_dir():
        raise ContractError(f"checkpoint {root} is not a directory")
    files = [
        {"path": p.relative_to(root).as_posix(), "sha256": file_sha256(p)}
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]
    return framed_hash(CHECKPOINT_FILES, files)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ContractError(f"cannot read the {what} {path}: JSON nested too deep") from None
    except (OSError, ValueError) as exc:
        raise ContractError(f"cannot read the {what} {path}: {exc}") from None


def _bad_bundle(path: Any, problem: str) -> ContractError:
    return ContractError(f"release bundle {path} {problem}; re-seal it (tokenpact release seal)")


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\0" not in value


def _fields(path: Any, bundle: dict[str, Any], key: str, names: tuple[str, ...]) -> None:
    """``bundle[key]`` is an object whose ``names`` are non-empty strings."""
    part = bundle.get(key)
    if not isinstance(part, dict) or not all(_text(part.get(n)) for n in names):
        raise _bad_bundle(path, f"has a malformed {key!r} (needs strings {list(names)})")


def _ratio(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    try:
        number = float(value)
    except ValueError:
        return False
    return 0 < number < float("inf")


def bundle_seal(bundle: Mapping[str, Any]) -> str:
    """The hash a version-2 bundle carries in ``seal``: every other field, framed."""
    return framed_hash(BUNDLE_SEAL, {k: v for k, v in bundle.items() if k != "seal"})


def _seal_or_none(bundle: Mapping[str, Any]) -> str | None:
    try:
        return bundle_seal(bundle)
    except TokenpactError:  # a value canonical JSON refuses (a float): nothing sealed it
        return None


def validate_bundle(bundle: Any, path: Any = "") -> dict[str, Any]:
    """Check a bundle's structure (every field's type, a known version, the seal) and
    return it; raise ContractError naming the first problem."""
    if not isinstance(bundle, dict) or bundle.get("kind") != KIND:
        raise ContractError(f"{path} is not a release bundle (kind must be {KIND!r})")
    missing = [k for k in REQUIRED if k not in bundle]
    if missing:
        raise _bad_bundle(path, f"lacks {missing}")
    version = bundle.get("version")
    if isinstance(version, bool) or version not in BUNDLE_VERSIONS:
        raise ContractError(
            f"release bundle {path} has version {version!r}; this tokenpact reads versions "
            f"{list(BUNDLE_VERSIONS)} (upgrade tokenpact, or re-seal the bundle)"
        )
    if not _text(bundle["name"]) or not _text(bundle["cache_namespace"]):
        raise _bad_bundle(path, "has a malformed name or cache_namespace")
    _fields(path, bundle, "tokenizer", ("path", "semantic_hash", "release_hash"))
    _fields(path, bundle, "dataset", ("path", "hash"))
    _fields(path, bundle, "checkpoint", ("path", "hash"))
    if bundle.get("template") is not None:
        _fields(path, bundle, "template", ("path", "hash"))
    if bundle.get("previous") is not None:
        _fields(path, bundle, "previous", ("path", "name", "bundle_sha256"))
    transition = bundle.get("transition")
    if transition is not None and transition not in TRANSITIONS:
        raise _bad_bundle(path, f"declares an unknown transition {transition!r}")
    canary = bundle.get("canary")
    if canary is not None:
        _fields(path, bundle, "canary", ("path", "hash") if version >= 2 else ("path",))
        limits = canary.get("max_token_ratio") or {}
        if not isinstance(limits, dict) or not all(
            isinstance(k, str) and _ratio(v) for k, v in limits.items()
        ):
            raise _bad_bundle(path, "has max_token_ratio limits that are not positive numbers")
    problem = record_problem(bundle.get("cache_invalidation"))
    if problem is not None:
        raise _bad_bundle(path, f"has a malformed cache_invalidation ({problem})")
    if version >= 2 and bundle.get("seal") != _seal_or_none(bundle):
        raise ContractError(
            f"release bundle {path} does not match its seal: a field (name, hashes, "
            "limits, ...) changed after sealing; re-seal it"
        )
    return bundle


def load_bundle(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a bundle file (see :func:`validate_bundle`)."""
    return validate_bundle(_read_json(Path(path), "release bundle"), path)


def seal_release(
    out: str | os.PathLike[str],
    *,
    name: str,
    tokenizer: str | os.PathLike[str],
    dataset: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str],
    template: str | os.PathLike[str] | None = None,
    canary: str | os.PathLike[str] | None = None,
    max_token_ratio: Mapping[str, float] | None = None,
    transition: str | None = None,
    previous: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Write a bundle file naming the current hashes of the given components.

    ``transition`` (what the release claims relative to ``previous``) defaults to the
    class ``diff`` finds; ``check_release`` re-derives it and fails on a mismatch.
    """
    target = Path(out)
    base = target.parent

    def rel(p: str | os.PathLike[str]) -> str:
        return os.path.relpath(Path(p).resolve(), base.resolve())

    if max_token_ratio and canary is None:
        raise ConfigError(
            "max_token_ratio limits need a canary set to measure; pass canary= or drop them"
        )
    tok = Tokenizer.load(tokenizer)
    tmpl = _read_json(Path(template), "template") if template is not None else None
    semantic, thash = tok.semantic_hash, template_hash(tmpl)
    old = None if previous is None else load_bundle(previous)
    if transition is None and previous is not None and old is not None:
        old_tok = Tokenizer.load(Path(previous).parent / old["tokenizer"]["path"])
        transition = diff(old_tok, tok).transition
    bundle: dict[str, Any] = {
        "kind": KIND,
        "version": 2,
        "name": name,
        "tokenizer": {
            "path": rel(tokenizer),
            "semantic_hash": semantic,
            "release_hash": tok.release_hash,
        },
        "template": None if template is None else {"path": rel(template), "hash": thash},
        "dataset": {
            "path": rel(dataset),
            "hash": dataset_hash(read_dataset(dataset).declaration),
        },
        "checkpoint": {"path": rel(checkpoint), "hash": checkpoint_hash(checkpoint)},
        "cache_namespace": cache_namespace(semantic, thash),
        "transition": transition,
        "canary": None
        if canary is None
        else {
            "path": rel(canary),
            "hash": file_sha256(canary),
            # Decimal strings: the bundle is read back by the canonical-JSON reader
            # (reconcile), which refuses floats.
            "max_token_ratio": {
                k: repr(float(v)) for k, v in (max_token_ratio or {"default": 1.0}).items()
            },
        },
        "previous": None
        if previous is None or old is None
        else {
            "path": rel(previous),
            "name": old["name"],
            "bundle_sha256": file_sha256(previous),
        },
    }
    # The lifecycle step: what the old identity built that this release retires.
    record = invalidation_record(old, bundle)
    if record is not None and old is not None and previous is not None:
        # The stale dataset's path, relative to this bundle (it was the previous one's).
        old_dataset = Path(previous).parent / old["dataset"]["path"]
        record["datasets"] = [{"path": rel(old_dataset), "hash": old["dataset"]["hash"]}]
    bundle["cache_invalidation"] = record
    bundle["seal"] = bundle_seal(bundle)
    atomic_write_json(target, bundle)
    return bundle


class _Loaded:
    """The components of a bundle, loaded once (each failure becomes a check)."""

    def __init__(self, path: Path, bundle: dict[str, Any], report: Report) -> None:
        self.path, self.bundle = path, bundle
        base = path.parent
        self.tok: Tokenizer | None = None
        try:
            # Loading an artifact directory verifies its manifest and golden vectors.
            self.tok = Tokenizer.load(base / bundle["tokenizer"]["path"])
            report.passed("tokenizer.golden", "manifest and golden vectors verified on load")
        except TokenpactError as exc:
            report.failed("tokenizer.golden", f"the tokenizer does not load cleanly: {exc}")
        self.template = None
        if bundle.get("template") is not None:
            self.template = _read_json(base / bundle["template"]["path"], "template")
        self.template_hash = template_hash(self.template)
        found = read_dataset(base / bundle["dataset"]["path"])
        self.dataset = found.declaration
        self.dataset_files = (found.root, found.manifest) if found.manifest else None
        self.checkpoint_dir = base / bundle["checkpoint"]["path"]


def _check_identities(c: _Loaded, report: Report) -> None:
    b = c.bundle
    if c.tok is not None:
        for key, actual in (
            ("semantic_hash", c.tok.semantic_hash),
            ("release_hash", c.tok.release_hash),
        ):
            report.expect(
                f"hashes.tokenizer_{key}",
                b["tokenizer"][key] == actual,
                f"bundle names {b['tokenizer'][key]}, the files give {actual}",
            )
    if b.get("template") is not None:
        report.expect(
            "hashes.template",
            b["template"]["hash"] == c.template_hash,
            "the template changed after the bundle was sealed",
        )
    report.expect(
        "hashes.dataset",
        b["dataset"]["hash"] == dataset_hash(c.dataset),
        "the dataset declaration changed after the bundle was sealed",
    )
    if c.dataset_files is not None:
        root, manifest = c.dataset_files
        problems = shard_digest_problems(root, manifest)  # type: ignore[arg-type]
        report.expect("hashes.dataset_shards", not problems, "; ".join(problems[:5]))
    actual = checkpoint_hash(c.checkpoint_dir)
    report.expect(
        "hashes.checkpoint",
        b["checkpoint"]["hash"] == actual,
        f"checkpoint files hash to {actual}, bundle names {b['checkpoint']['hash']}",
    )


def _check_bindings(c: _Loaded, report: Report) -> None:
    if c.tok is None:
        report.skipped("bindings", "the tokenizer did not load")
        return
    semantic = c.tok.semantic_hash
    config = c.tok.to_config()
    check_dataset(
        report, c.dataset, semantic=semantic, top_id=max_id(config), template=c.template_hash
    )
    cfg_path = c.checkpoint_dir / "config.json"
    cfg = _read_json(cfg_path, "model config") if cfg_path.is_file() else {}
    binding = cfg.get(BINDING_KEY) or {}
    declaration = checkpoint_from_safetensors(
        c.checkpoint_dir,
        tokenizer_hash=binding.get("tokenizer_semantic_hash"),
        template_hash=binding.get("template_hash", c.template_hash),
    )
    check_checkpoint(
        report,
        declaration.to_json(),
        semantic=semantic,
        template=c.template_hash,
        policy=special_policy(config),
        top_id=max_id(config),
    )
    expected = cache_namespace(semantic, c.template_hash)
    report.expect(
        "cache.namespace",
        c.bundle["cache_namespace"] == expected,
        f"cache namespace {c.bundle['cache_namespace']!r} is not the one derived "
        f"from this tokenizer and template ({expected!r}); re-seal the bundle",
    )


def _check_against_previous(c: _Loaded, prev: _Loaded | None, report: Report) -> None:
    declared = c.bundle.get("transition")
    if prev is None:
        needs = [k for k in ("transition", "previous") if c.bundle.get(k) is not None]
        if needs:
            report.failed(
                "transition.previous_missing",
                f"the bundle declares {', '.join(needs)}, which compare against the "
                "previous release, but none was given: pass previous= (--previous BUNDLE) "
                "or the promoted pointer (--pointer FILE)",
            )
        else:
            report.passed("transition.first_release", "no previous release declared")
            if c.bundle.get("canary") is not None:
                report.passed(
                    "canary.first_release",
                    "a first release has nothing to compare with; its canary set is "
                    "measured when the next release is checked against it",
                )
        return
    if prev.tok is None or c.tok is None:
        report.failed("transition", "a tokenizer did not load; the transition is unknown")
        return
    result = diff(prev.tok, c.tok, old_template=prev.template, new_template=c.template)
    report.expect(
        "transition.declared",
        declared == result.transition,
        f"bundle declares {declared!r} but the change is {result.transition!r}",
    )
    report.expect(
        "transition.known",
        result.transition in TRANSITIONS[:4] or declared == "incompatible",
        "the tokenizer change is incompatible; declare it and retrain",
    )
    if result.transition == "append-only":
        report.expect(
            "transition.prefix_proof",
            result.prefix_proof["holds"],
            "; ".join(result.prefix_proof["problems"][:3]),
        )
    rotated = c.bundle["cache_namespace"] != prev.bundle["cache_namespace"]
    changed = result.transition not in ("byte-identical", "repackage")
    report.expect(
        "cache.rotated",
        rotated or not changed,
        "the tokenizer or template changed but the cache namespace did not; "
        "caches built for the old contract would be served",
    )
    _check_invalidation(c, prev, report)
    old_roles, new_roles = special_policy(prev.tok.to_config()), special_policy(c.tok.to_config())
    moved = [
        r
        for r in ("bos", "eos", "pad", "eot")
        if old_roles[r] is not None and old_roles[r] != new_roles[r]
    ]
    report.expect(
        "canary.stop_ids",
        not moved and old_roles["stop"] == new_roles["stop"],
        f"control IDs moved for roles {moved or ['stop']}",
    )
    _check_canary(c, prev, report)


def _check_invalidation(c: _Loaded, prev: _Loaded, report: Report) -> None:
    """The bundle records the cache-invalidation step against the release it replaces:
    the previous namespace, tokenizer and template identities, and its dataset."""
    if "cache_invalidation" not in c.bundle:
        report.failed(
            "cache.invalidation",
            "the bundle records no cache-invalidation step (sealed by an older tokenpact); "
            "re-seal it against the promoted release",
        )
        return
    recorded = c.bundle["cache_invalidation"]
    expected = invalidation_record(prev.bundle, c.bundle)
    if expected is not None and recorded is not None:
        # Dataset paths are relative to each bundle; compare what they name by hash.
        recorded = {**recorded, "datasets": [d["hash"] for d in recorded["datasets"]]}
        expected = {**expected, "datasets": [d["hash"] for d in expected["datasets"]]}
    stale = None if expected is None else expected["stale"]["cache_namespace"]
    report.expect(
        "cache.invalidation",
        recorded == expected,
        f"the bundle's cache_invalidation does not record retiring the replaced release's "
        f"caches ({stale or 'nothing: the namespace did not change'}); re-seal it "
        "against the promoted release",
        f"retires {stale}" if stale else "nothing to invalidate (namespace unchanged)",
    )


def _check_canary(c: _Loaded, prev: _Loaded, report: Report) -> None:
    spec = c.bundle.get("canary")
    if spec is None:
        report.failed("canary", "the bundle declares no canary set; add canary= when sealing")
        return
    if c.tok is None or prev.tok is None:
        return
    canary = c.path.parent / spec["path"]
    try:
        data = canary.read_bytes()
    except OSError as exc:
        report.failed("hashes.canary", f"cannot read the canary set {canary}: {exc.strerror}")
        return
    if spec.get("hash") is not None:
        if bytes_sha256(data) != spec["hash"]:
            report.failed("hashes.canary", "the canary set changed after the bundle was sealed")
            return
    slices: dict[str, list[str]] = defaultdict(list)
    n = -1
    try:
        for n, line in enumerate(data.decode("utf-8").splitlines()):  # noqa: B007 - n names the failing line
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                    raise ValueError("needs an object {'slice', 'text'}")
                slices[str(row.get("slice", "default"))].append(row["text"])
    except (ValueError, RecursionError) as exc:
        where = f"line {n + 1}" if n >= 0 else "its bytes"
        report.failed("canary.readable", f"canary set {canary} {where}: {exc}")
        return
    if not slices:
        report.failed("canary.readable", f"the canary set {canary} holds no text")
        return
    limits = spec.get("max_token_ratio") or {}
    for name in sorted(slices):
        texts = slices[name]
        old = sum(len(x) for x in prev.tok.encode_batch(texts))
        new = sum(len(x) for x in c.tok.encode_batch(texts))
        limit = float(limits.get(name, limits.get("default", 1.0)))
        ratio = new / old if old else 1.0
        report.expect(
            f"canary.{name}",
            ratio <= limit,
            f"tokens new/old = {ratio:.4f} exceeds the declared limit {limit}",
            f"tokens new/old = {ratio:.4f} <= {limit}",
        )


def check_release(
    bundle_path: str | os.PathLike[str], *, previous: str | os.PathLike[str] | None = None
) -> Report:
    """Run every admission check of a bundle; ``previous`` is the promoted bundle (the
    transition, cache rotation and canary compare against it)."""
    return _check_release(bundle_path, previous=previous, legacy=False)


def _check_release(
    bundle_path: str | os.PathLike[str],
    *,
    previous: str | os.PathLike[str] | None,
    legacy: bool,
    previous_sha256: str | None = None,
) -> Report:
    path = Path(bundle_path)
    report = Report("release")
    bundle = load_bundle(path)
    if bundle["version"] < 2 and not legacy:
        report.failed(
            "bundle.seal",
            f"the bundle is version {bundle['version']}: its name and canary set are not "
            "bound by a seal; re-seal it (tokenpact release seal) before promoting",
        )
    current = _Loaded(path, bundle, report)
    _check_identities(current, report)
    _check_bindings(current, report)
    prev = None
    recorded = bundle.get("previous")
    if previous is None and recorded is not None:
        found = path.parent / recorded["path"]
        same = found.is_file() and file_sha256(found) == recorded["bundle_sha256"]
        report.expect(
            "previous.recorded",
            same,
            f"the previous bundle recorded at seal time ({found}) is missing or changed",
        )
        previous = found if same else None
    if previous is not None:
        if previous_sha256 is not None and _sha256(Path(previous)) != previous_sha256:
            raise ContractError(
                f"the promoted bundle {previous} changed since it was promoted; restore it"
            )
        prev_report = Report("previous")
        prev = _Loaded(Path(previous), load_bundle(previous), prev_report)
    _check_against_previous(current, prev, report)
    return report


def _sha256(path: Path) -> str | None:
    """The file's SHA-256, or None when it cannot be read."""
    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None


def _pointer_entry(value: Any) -> bool:
    return isinstance(value, dict) and all(
        _text(value.get(k)) for k in ("bundle", "name", "bundle_sha256")
    )


def _log_entry(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("step") in ("promote", "rollback")
        and _text(value.get("bundle"))
        and (value.get("cache_namespace") is None or _text(value.get("cache_namespace")))
    )


def invalidations(pointer: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The pointer's cache-invalidation log, oldest first: each ``{step, bundle,
    cache_namespace}`` names a namespace whose caches are to be discarded (``promote``:
    the replaced release's, retired; ``rollback``: the rolled-back candidate's)."""
    return list(_read_pointer(Path(pointer))["invalidations"])


def _read_pointer(pointer: Path) -> dict[str, Any]:
    if not pointer.exists():
        return {
            "kind": POINTER_KIND,
            "version": 1,
            "current": None,
            "history": [],
            "invalidations": [],
        }
    data = _read_json(pointer, "release pointer")
    if not isinstance(data, dict) or data.get("kind") != POINTER_KIND:
        raise ContractError(f"{pointer} is not a release pointer")
    version = data.get("version")
    if isinstance(version, bool) or version != 1:
        raise ContractError(
            f"release pointer {pointer} has version {version!r}; this tokenpact reads version 1"
        )
    current, history = data.get("current"), data.get("history")
    log = data.setdefault("invalidations", [])
    if (
        "current" not in data
        or (current is not None and not _pointer_entry(current))
        or not isinstance(history, list)
        or not all(_pointer_entry(h) for h in history)
        or not isinstance(log, list)
        or not all(_log_entry(e) for e in log)
        # promote sets current whenever it records history: history without a current
        # release is not a state tokenpact writes.
        or (current is None and bool(history))
    ):
        raise ContractError(
            f"release pointer {pointer} is malformed (current and history need "
            "{bundle, name, bundle_sha256}, and history needs a current release); restore "
            "it from a backup"
        )
    return data


def current_bundle(pointer: str | os.PathLike[str]) -> Path | None:
    """The bundle the pointer file names now (None before the first promotion)."""
    data = _read_pointer(Path(pointer))
    return None if data["current"] is None else Path(pointer).parent / data["current"]["bundle"]


def promote(bundle_path: str | os.PathLike[str], *, pointer: str | os.PathLike[str]) -> Report:
    """Check the bundle against the promoted one and, only if every check passes,
    switch the pointer to it (one atomic rename). Returns the check report."""
    ptr = Path(pointer)
    state = _read_pointer(ptr)
    previous = current_bundle(ptr)
    sha = None if state["current"] is None else state["current"]["bundle_sha256"]
    report = _check_release(bundle_path, previous=previous, legacy=False, previous_sha256=sha)
    if not report.ok:
        return report
    bundle = load_bundle(bundle_path)
    entry = {
        "bundle": os.path.relpath(Path(bundle_path).resolve(), ptr.parent.resolve()),
        "name": bundle["name"],
        "bundle_sha256": file_sha256(bundle_path),
    }
    history = list(state["history"])
    log = list(state["invalidations"])
    if state["current"] is not None:
        history.append(state["current"])
        replaced = load_bundle(previous) if previous is not None else None
        if replaced is not None and replaced["cache_namespace"] != bundle["cache_namespace"]:
            log.append(log_entry("promote", bundle, replaced["cache_namespace"]))
    atomic_write_json(
        ptr,
        {
            "kind": POINTER_KIND,
            "version": 1,
            "current": entry,
            "history": history,
            "invalidations": log,
        },
    )
    return report


def rollback(*, pointer: str | os.PathLike[str]) -> dict[str, Any]:
    """Point back at the previous bundle: tokenizer, template, dataset, checkpoint and
    cache namespace together. The previous bundle's files must still match its hashes."""
    ptr = Path(pointer)
    state = _read_pointer(ptr)
    if not state["history"]:
        raise ConfigError(f"{ptr} has no earlier release to roll back to")
    target = state["history"][-1]
    path = ptr.parent / target["bundle"]
    if _sha256(path) != target["bundle_sha256"]:
        raise ContractError(
            f"bundle {path} is missing or changed since it was promoted; cannot roll back to it"
        )
    if target["name"] != load_bundle(path)["name"]:
        raise ContractError(f"bundle {path} is not the release {target['name']!r} it was")
    # The pointer binds the target's bytes, so a version-1 bundle is still a valid target.
    report = _check_release(path, previous=None, legacy=True)
    if not report.ok:
        raise ContractError("the previous release no longer passes its checks:\n" + report.format())
    restored = load_bundle(path)
    # Only the candidate's caches are invalidated; the restored release's never are.
    candidate_ns = _namespace_of(ptr.parent / state["current"]["bundle"])
    log = list(state["invalidations"])
    if candidate_ns != restored["cache_namespace"]:
        log.append(log_entry("rollback", state["current"], candidate_ns))
    atomic_write_json(
        ptr,
        {
            "kind": POINTER_KIND,
            "version": 1,
            "current": target,
            "history": state["history"][:-1],
            "invalidations": log,
        },
    )
    return restored


def _namespace_of(bundle_path: Path) -> str | None:
    """The cache namespace a bundle names (None when it can no longer be read: the
    rollback goes on, and its log entry says the namespace is unknown)."""
    try:
        return str(load_bundle(bundle_path)["cache_namespace"])
    except (ContractError, OSError):
        return None
