"""The tokenizer manifest (``manifest.json``) and its cross-document relation checker.

The manifest records, in one machine-readable place, everything a later stage must agree
with: identities, input and invalid-input
policy, normalization with its Unicode version, pre-tokenizer, model digests, special-token
IDs and literal-text policy, automatic insertions, decoder error policy, training corpus
digest and trainer flags, golden digests and the stable ID prefix.

Structure is checked by ``schemas/manifest.schema.json``; :func:`check_manifest` checks the
relations a schema cannot express (hashes re-derived, files on disk, IDs in range).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import ContractError
from ..special import MARKER_ROLES
from .canonical import CanonicalError, check_canonical
from .hashing import (
    bytes_sha256,
    check_release_path,
    file_sha256,
    golden_hash,
    golden_ids_hash,
    golden_source_hash,
    ranks_hash,
    release_hash,
    semantic_hash,
    short_id,
    vocabulary_hash,
)
from .report import Report
from .schema import declaration_errors, manifest_errors
from .semantics import (
    LITERAL_TEXT_POLICY,
    SPECIAL_ROLES,
    HasConfig,
    automatic_insertions,
    config_of,
    max_id,
    model_size,
    special_policy,
)

SCHEMA = "tokenpact.manifest"
SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"
GOLDEN_FILE = "golden.json"
# The engine rejects text with lone surrogates (docs/ARCHITECTURE.md).
INVALID_INPUT_POLICY = "reject"
# Special tokens are matched before the pre-tokenizer, so merges never cross them.
PROTECTED_SPANS = ["special_tokens"]
DECODE_ERROR_POLICY = {"default": "strict", "options": ["replace", "strict"]}


def library_version() -> str:
    """Return the installed tokenpact version (``0+unknown`` from a source checkout)."""
    try:
        return metadata.version("tokenpact")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _decimalize(value: Any) -> Any:
    """Return ``value`` with floats written as decimal strings (the canonical profile)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _decimalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decimalize(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_decimalize(v) for v in value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _training_section(training: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if training is None:
        return None
    corpus = training.get("corpus") or {}
    digest = corpus.get("digest") if isinstance(corpus, Mapping) else None
    flags = training.get("config")
    if isinstance(flags, Mapping) and "seed" in training:
        # The trainers record their seed beside the config (None: no randomness).
        flags = {**flags, "seed": training["seed"]}
    sampling = training.get("sampling")
    # Listed only when the corpus was sampled, so other manifests keep their bytes.
    extra = {"sampling": _decimalize(sampling)} if isinstance(sampling, Mapping) else {}
    return {
        **extra,
        "corpus": {
            "digest": digest if isinstance(digest, str) else None,
            "documents": _optional_int(corpus.get("documents")) if corpus else None,
            "bytes": _optional_int(corpus.get("bytes")) if corpus else None,
        },
        "trainer_flags_and_seed": _decimalize(flags) if isinstance(flags, Mapping) else {},
        "stop_reason": training.get("stop_reason")
        if isinstance(training.get("stop_reason"), str)
        else None,
        "merges_learned": _optional_int(training.get("merges_learned")),
    }


def _byte_fallback(model: Mapping[str, Any]) -> str:
    if model.get("type") == "byte_bpe":
        # Every byte has its own token, so no input is ever unknown.
        return "byte_level"
    value = model.get("byte_fallback")
    return "byte_fallback" if value is True else "none"


def _tests_section(golden: Mapping[str, Any] | None) -> dict[str, Any]:
    if golden is None:
        return {
            "golden_file": None,
            "golden_hash": None,
            "golden_source_hash": None,
            "golden_ids_hash": None,
            "cases": 0,
        }
    return {
        "golden_file": GOLDEN_FILE,
        "golden_hash": golden_hash(golden),
        "golden_source_hash": golden_source_hash(golden),
        "golden_ids_hash": golden_ids_hash(golden),
        "cases": len(golden.get("cases", [])),
    }


def _policy_section(config: Mapping[str, Any]) -> dict[str, Any]:
    """The padding and truncation policy, listed only when the tokenizer has one (so the
    manifests of tokenizers without one are unchanged)."""
    padding, truncation = config.get("padding"), config.get("truncation")
    if padding is None and truncation is None:
        return {}
    return {"padding_and_truncation": {"padding": padding, "truncation": truncation}}


def _literal_text_section(config: Mapping[str, Any]) -> dict[str, Any]:
    """The literal-text policy: its mode always (``ordinary`` by default), and the
    escape character only when the tokenizer declares a policy other than the default
    (so default manifests are unchanged)."""
    node = config.get("literal_text")
    if not isinstance(node, Mapping):
        return {"literal_text_policy": LITERAL_TEXT_POLICY}
    return {"literal_text_policy": node.get("mode"), "literal_text_escape": node.get("escape")}


def build_manifest(
    tok_or_config: HasConfig | Mapping[str, Any],
    *,
    files: Mapping[str, bytes],
    training: Mapping[str, Any] | None = None,
    golden: Mapping[str, Any] | None = None,
    unicode_version: str | None = None,
    build: str | None = None,
) -> dict[str, Any]:
    """Return the manifest for a tokenizer whose released files hold ``files`` bytes.

    ``training`` defaults to ``tok.training``; ``unicode_version`` to
    ``tok.unicode_version`` when the tokenizer has one, else Python's ``unicodedata``.
    """
    config = config_of(tok_or_config)
    if not isinstance(tok_or_config, Mapping):
        if training is None:
            training = getattr(tok_or_config, "training", None)
        # A tokenizer may report the Unicode version of its own character tables.
        unicode_version = unicode_version or getattr(tok_or_config, "unicode_version", None)
    semantic = semantic_hash(config)
    records = [
        {"path": check_release_path(p), "sha256": bytes_sha256(data), "bytes": len(data)}
        for p, data in sorted(files.items())
    ]
    policy = special_policy(config)
    top = max_id(config)
    model = config["model"]
    merges = model.get("merges")
    normalizer = config.get("normalizer")
    manifest = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tokenizer_id": short_id(semantic),
        "library": {"name": "tokenpact", "version": library_version(), "build": build},
        "tokenizer": {
            "semantic_hash": semantic,
            "release_hash": release_hash(semantic, records),
            "format": config.get("format"),
            "format_version": _optional_int(config.get("format_version")),
            "files": records,
        },
        "input": {
            "type": "unicode_text",
            "encoding": "utf-8",
            "invalid_input_policy": INVALID_INPUT_POLICY,
        },
        "normalization": {
            "unicode_version": unicode_version or unicodedata.unidata_version,
            "form": "identity" if normalizer is None else str(normalizer.get("type")),
            "component": normalizer,
        },
        "boundaries": {
            "pre_tokenizer": config.get("pre_tokenizer"),
            "protected_spans": list(PROTECTED_SPANS),
        },
        "model": {
            "type": model.get("type"),
            "semantics": model.get("semantics"),
            "model_size": model_size(config),
            "merges": len(merges) if isinstance(merges, list) else None,
            "vocabulary_hash": vocabulary_hash(config),
            "ranks_hash": ranks_hash(config),
            "byte_fallback": _byte_fallback(model),
        },
        "special_tokens": {
            "tokens": sorted((dict(t) for t in config["special_tokens"]), key=lambda t: t["id"]),
            "ids": _role_ids(config["special_tokens"], policy),
            "stop_ids": policy["stop"],
            **_literal_text_section(config),
        },
        "postprocessor_and_decoder": {
            "post_processor": config.get("post_processor"),
            "automatic_insertions": automatic_insertions(config),
            "decoder": config.get("decoder"),
            "decode_error_policy": dict(DECODE_ERROR_POLICY),
        },
        **_policy_section(config),
        "training": _training_section(training),
        "tests": _tests_section(golden),
        "compatibility": {
            "max_id": top,
            "required_rows": top + 1,
            # Every ID a fresh artifact emits is frozen; appending tokens keeps the prefix.
            "stable_id_prefix": top + 1,
            "model_config_hash": None,
        },
    }
    check_canonical(manifest)
    return manifest


def _role_ids(tokens: Any, policy: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's role -> ID table: the single roles (None when absent), then each
    marker role (document, role, tool, modality) that some token holds, as ascending IDs.
    Marker roles are written only when present, so older manifests keep their bytes."""
    ids: dict[str, Any] = {role: policy[role] for role in SPECIAL_ROLES}
    for role in MARKER_ROLES:
        held = sorted(t["id"] for t in tokens if t["role"] == role)
        if held:
            ids[role] = held
    return ids


def validate_special_ids(manifest: Mapping[str, Any], required_tokens: Any) -> bool:
    """Return True exactly when every required special token is present and the special
    token map has no duplicate IDs. Never mutates ``manifest``.

    ``manifest`` may be a tokenpact manifest, any mapping with a ``special_tokens`` entry
    (``{content: id}`` or a ``[{"content", "id"}]`` list), or the ``{content: id}`` map.
    """
    table: Any = manifest.get("special_tokens", manifest)
    if isinstance(table, Mapping) and "tokens" in table:
        table = table["tokens"]
    pairs: list[tuple[Any, Any]]
    if isinstance(table, Mapping):
        pairs = list(table.items())
    elif isinstance(table, (list, tuple)):
        if not all(isinstance(t, Mapping) for t in table):
            return False
        pairs = [(t.get("content"), t.get("id")) for t in table]
    else:
        return False
    ids: dict[Any, Any] = {}
    for content, tid in pairs:
        valid_id = isinstance(tid, int) and not isinstance(tid, bool) and tid >= 0
        if not isinstance(content, str) or not valid_id or content in ids:
            return False
        ids[content] = tid
    if len(set(ids.values())) != len(ids):
        return False
    if isinstance(required_tokens, str):
        required_tokens = [required_tokens]
    required = [getattr(t, "content", t) for t in required_tokens]
    return all(token in ids for token in required)


def _check_internal(manifest: Mapping[str, Any], report: Report) -> None:
    tokenizer = manifest["tokenizer"]
    semantic = tokenizer["semantic_hash"]
    report.expect(
        "manifest.tokenizer_id",
        manifest["tokenizer_id"] == short_id(semantic),
        f"tokenizer_id {manifest['tokenizer_id']} does not abbreviate {semantic}",
    )
    derived = release_hash(semantic, tokenizer["files"])
    report.expect(
        "manifest.release_hash",
        tokenizer["release_hash"] == derived,
        f"declared release hash {tokenizer['release_hash']} but the semantic hash and file "
        f"digests give {derived}; re-save the tokenizer to re-seal the manifest",
    )
    specials = manifest["special_tokens"]
    tokens = specials["tokens"]
    ok_map = validate_special_ids(specials, [])
    by_role = {t["role"]: t["id"] for t in tokens}
    ids_ok = specials["ids"] == _role_ids(tokens, {r: by_role.get(r) for r in SPECIAL_ROLES})
    stop = sorted(by_role[r] for r in ("eos", "eot") if r in by_role)
    report.expect(
        "manifest.special_ids",
        ok_map and ids_ok and specials["stop_ids"] == stop,
        "special token IDs are duplicated or the role IDs / stop IDs do not match the token "
        f"list (expected roles {by_role}, stop {stop})",
    )
    ordered = [t["id"] for t in tokens] == sorted(t["id"] for t in tokens)
    paths = [f["path"] for f in tokenizer["files"]]
    report.expect(
        "manifest.canonical_order",
        ordered and paths == sorted(paths),
        "special tokens must be listed by ID and files by path",
    )
    compat = manifest["compatibility"]
    top = compat["max_id"]
    report.expect(
        "manifest.compatibility",
        compat["required_rows"] == top + 1
        and compat["stable_id_prefix"] <= top + 1
        and all(t["id"] <= top for t in tokens)
        and manifest["model"]["model_size"] <= top + 1,
        f"required_rows must be max_id + 1 = {top + 1}, the stable prefix at most that, and "
        "every ID at most max_id",
    )


def _changed_parts(manifest: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Name what differs between a manifest and a config whose semantic hashes differ."""
    model = manifest["model"]
    expected = sorted((dict(t) for t in config["special_tokens"]), key=lambda t: t["id"])
    checks = (
        ("the ID -> piece map", model["vocabulary_hash"] == vocabulary_hash(config)),
        ("the merge ranks", model["ranks_hash"] == ranks_hash(config)),
        ("the special tokens", manifest["special_tokens"]["tokens"] == expected),
    )
    changed = [label for label, same in checks if not same]
    return changed or ["a pipeline component (normalizer, pre-tokenizer, post-processor, ...)"]


def _check_against_config(
    manifest: Mapping[str, Any], config: Mapping[str, Any], report: Report
) -> bool:
    """Compare the semantic hash and max_id; True when the semantic hash matches."""
    declared = manifest["tokenizer"]["semantic_hash"]
    actual = semantic_hash(config)
    # Component digests are computed only to explain a mismatch: equal semantic hashes
    # already imply equal vocabularies and ranks, and hashing them costs time on load.
    if declared == actual:
        report.passed("manifest.semantic_hash")
    else:
        report.failed(
            "manifest.semantic_hash",
            f"the tokenizer's behaviour hashes to {actual}, but the manifest declares "
            f"{declared}; changed: {', '.join(_changed_parts(manifest, config))}. The tokenizer "
            "changed after it was saved: re-save it, or restore the original file",
        )
    top = max_id(config)
    report.expect(
        "manifest.max_id",
        manifest["compatibility"]["max_id"] == top,
        f"max_id is {manifest['compatibility']['max_id']} but the tokenizer emits up to {top}",
    )
    return declared == actual


# Manifest fields that describe where and how an artifact was made rather than what the
# tokenizer does; they are not compared with the tokenizer (docs/SECURITY.md lists them).
# Every other field is re-derived from the tokenizer and must match.
INFORMATIONAL_FIELDS = (
    "library.name",
    "library.version",
    "library.build",
    "normalization.unicode_version",
    "compatibility.model_config_hash",
    "compatibility.stable_id_prefix",
)
# Checked elsewhere: against the files on disk, the golden set, or by _check_internal.
_CHECKED_ELSEWHERE = ("tokenizer.files", "tokenizer.release_hash", "tests", "schema")


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _skipped_field(path: str) -> bool:
    return any(
        path == skip or path.startswith(skip + ".")
        for skip in (*INFORMATIONAL_FIELDS, *_CHECKED_ELSEWHERE)
    )


def _check_descriptive(
    manifest: Mapping[str, Any],
    tok_or_config: HasConfig | Mapping[str, Any],
    config: Mapping[str, Any],
    report: Report,
) -> None:
    """Every descriptive field (pattern, merge count, roles, insertions, training facts,
    ...) must equal what the tokenizer itself gives: a manifest that lies about any of
    them fails, even when the semantic hash is right."""
    # A tokenizer has a training record (None when it was not trained); a config has none.
    training = getattr(tok_or_config, "training", None)
    if isinstance(tok_or_config, Mapping):
        training = None
    derived = build_manifest(config, files={}, training=training)
    if isinstance(tok_or_config, Mapping) and manifest.get("training") is not None:
        derived["training"] = manifest["training"]  # a bare config has no training record
    expected, declared = _leaves(derived, ""), _leaves(dict(manifest), "")
    wrong = [
        path
        for path in sorted(set(expected) | set(declared))
        if not _skipped_field(path) and expected.get(path) != declared.get(path)
    ]
    shown = "; ".join(
        f"{path} is {declared.get(path)!r:.60} but the tokenizer gives {expected.get(path)!r:.60}"
        for path in wrong[:3]
    )
    report.expect(
        "manifest.fields",
        not wrong,
        f"{len(wrong)} manifest field(s) do not describe this tokenizer ({shown}); re-save the "
        "tokenizer to rewrite the manifest",
    )


def _check_files(manifest: Mapping[str, Any], directory: Path, report: Report) -> None:
    for record in manifest["tokenizer"]["files"]:
        path = directory / record["path"]
        if not path.is_file():
            report.failed("manifest.files", f"{record['path']} is missing from {directory}")
            continue
        actual = file_sha256(path)
        report.expect(
            "manifest.files",
            actual == record["sha256"] and os.path.getsize(path) == record["bytes"],
            f"{record['path']} has digest {actual}, but the manifest recorded "
            f"{record['sha256']} (release-file drift): re-save the tokenizer, or restore the file",
        )


def check_manifest(
    manifest: Any,
    *,
    config: HasConfig | Mapping[str, Any] | None = None,
    golden: Mapping[str, Any] | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> Report:
    """Check a manifest's structure, then its relations to the config, golden set and files.

    Every check is reported; relation checks are skipped when the structure is invalid.
    """
    report = Report("manifest")
    try:
        check_canonical(manifest)
    except CanonicalError as exc:
        report.failed("manifest.canonical_values", str(exc))
    errors = manifest_errors(manifest)
    for error in errors:
        report.failed("manifest.schema", error)
    if errors:
        report.skipped("manifest.relations", "skipped: fix the schema errors first")
        return report
    report.passed("manifest.schema")
    _check_internal(manifest, report)
    if config is not None:
        try:
            plain = config_of(config)
            if _check_against_config(manifest, plain, report):
                # Same behaviour: now the descriptive fields must not lie about it.
                _check_descriptive(manifest, config, plain, report)
        except ContractError as exc:
            report.failed("manifest.semantic_hash", f"cannot hash the tokenizer config: {exc}")
    if golden is not None and declaration_errors(golden, "golden"):
        for error in declaration_errors(golden, "golden"):
            report.failed("golden.schema", error)
        golden = None
    if golden is not None:
        declared = manifest["tests"]["golden_hash"]
        actual = golden_hash(golden)
        golden_ok = report.expect(
            "manifest.golden_hash",
            declared == actual,
            f"golden.json hashes to {actual}, but the manifest declares {declared}; "
            "regenerate the golden set by re-saving the tokenizer",
        )
        tests = manifest["tests"]
        described = _tests_section(golden)
        # With the golden hash right, the other digests must describe the same file.
        report.expect(
            "manifest.tests",
            not golden_ok
            or all(tests.get(k) == v for k, v in described.items() if k != "golden_file"),
            "the manifest's golden digests or case count do not describe golden.json; "
            "re-save the tokenizer",
        )
    if directory is not None:
        _check_files(manifest, Path(directory), report)
    return report
