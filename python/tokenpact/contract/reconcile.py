"""Reconcile a bundle: corpus, tokenizer, template, golden set, dataset and checkpoint.

The check first validates structure and canonical order, then
re-derives every hash, and only then compares the dataset and checkpoint bindings, special
IDs, row coverage (``R_in, R_out >= 1 + max_id``), the dataset's largest ID and the tied
output head. Every check is reported, not just the first failure.

A bundle is a JSON document (``schemas/declarations.schema.json#/$defs/bundle``)::

    {"kind": "tokenpact.bundle", "version": 1, "corpus": {...},
     "tokenizer": {"config": tok.to_config(), "files": [{"path", "sha256"}], "manifest": ...},
     "template": {...} | null, "golden": {...} | null, "dataset": {...}, "checkpoint": {...},
     "hashes": {"corpus", "tokenizer_semantic", "tokenizer_release", "template", "golden",
                "bundle"}}
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ContractError
from .canonical import CanonicalError, check_canonical
from .hashing import (
    bundle_hash,
    corpus_hash,
    file_sha256,
    golden_hash,
    release_hash,
    semantic_hash,
    template_hash,
)
from .manifest import check_manifest
from .report import Report
from .schema import declaration_errors
from .semantics import component_problems, max_id, special_policy

HASH_NAMES = ("corpus", "tokenizer_semantic", "tokenizer_release", "template", "golden", "bundle")
CHECKPOINT_SPECIAL_KEYS = ("bos", "eos", "pad", "stop")


def _short(value: Any) -> str:
    return value[:19] + "…" if isinstance(value, str) and len(value) > 19 else repr(value)


def derive_hashes(bundle: Mapping[str, Any]) -> dict[str, str]:
    """Return every identity of a bundle, derived from its contents (not its claims)."""
    tokenizer = bundle["tokenizer"]
    semantic = semantic_hash(tokenizer["config"])
    hashes = {
        "corpus": corpus_hash(bundle["corpus"]),
        "tokenizer_semantic": semantic,
        "tokenizer_release": release_hash(semantic, tokenizer["files"]),
        "template": template_hash(bundle["template"]),
        "golden": golden_hash(bundle["golden"]),
    }
    hashes["bundle"] = bundle_hash(
        corpus=hashes["corpus"],
        tokenizer_semantic=hashes["tokenizer_semantic"],
        tokenizer_release=hashes["tokenizer_release"],
        template=hashes["template"],
        golden=hashes["golden"],
        dataset=bundle["dataset"],
        checkpoint=bundle["checkpoint"],
    )
    return hashes


def seal_bundle(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``bundle`` whose ``hashes`` are derived from its contents."""
    sealed = copy.deepcopy(dict(bundle))
    sealed["hashes"] = derive_hashes(sealed)
    return sealed


def _check_order(bundle: Mapping[str, Any], report: Report) -> None:
    problems = []
    paths = [f["path"] for f in bundle["tokenizer"]["files"]]
    if paths != sorted(paths):
        problems.append("tokenizer files must be sorted by path")
    stop = bundle["checkpoint"]["special_ids"]["stop"]
    if stop != sorted(stop):
        problems.append("checkpoint stop IDs must be ascending")
    if bundle["template"] is not None and bundle["template"]["modes"] != sorted(
        bundle["template"]["modes"]
    ):
        problems.append("template modes must be sorted")
    for case in (bundle["golden"] or {}).get("cases", []):
        allowed = case["policy"]["allowed_special"]
        if isinstance(allowed, list) and allowed != sorted(allowed):
            problems.append(f"golden case {case['name']!r} must list allowed_special sorted")
    report.expect("structure.canonical_order", not problems, "; ".join(problems))


def _check_hashes(bundle: Mapping[str, Any], report: Report) -> dict[str, str | None]:
    """Re-derive each hash on its own so one broken part does not hide the others."""
    derived: dict[str, str | None] = dict.fromkeys(HASH_NAMES)
    tokenizer = bundle["tokenizer"]
    steps = [
        ("corpus", lambda: corpus_hash(bundle["corpus"])),
        ("tokenizer_semantic", lambda: semantic_hash(tokenizer["config"])),
        ("template", lambda: template_hash(bundle["template"])),
        ("golden", lambda: golden_hash(bundle["golden"])),
    ]
    for name, step in steps:
        try:
            derived[name] = step()
        except ContractError as exc:
            report.failed(f"hashes.{name}", f"cannot derive the {name} hash: {exc}")
    if derived["tokenizer_semantic"] is not None:
        try:
            derived["tokenizer_release"] = release_hash(
                derived["tokenizer_semantic"], tokenizer["files"]
            )
        except ContractError as exc:
            report.failed("hashes.tokenizer_release", f"cannot derive the release hash: {exc}")
    if all(derived[n] is not None for n in HASH_NAMES if n != "bundle"):
        derived["bundle"] = derive_hashes(bundle)["bundle"]
    declared = bundle["hashes"]
    fixes = {
        "corpus": "the corpus manifest changed after the bundle was sealed",
        "tokenizer_semantic": "the tokenizer's behaviour changed (IDs, merges, normalizer, "
        "special tokens, ...) after the bundle was sealed",
        "tokenizer_release": "a released tokenizer file changed (release-file drift)",
        "template": "the template source or modes changed (template drift)",
        "golden": "the golden vectors changed",
        "bundle": "a declaration (dataset, checkpoint) or identity changed",
    }
    for name in HASH_NAMES:
        if derived[name] is None:
            if not any(c.name == f"hashes.{name}" for c in report.failures):
                report.skipped(f"hashes.{name}", "cannot derive: an input hash failed")
            continue
        report.expect(
            f"hashes.{name}",
            declared[name] == derived[name],
            f"declared {_short(declared[name])} but the contents hash to "
            f"{_short(derived[name])}: {fixes[name]}; re-check it, then re-seal the bundle",
        )
    return derived


def check_dataset(
    report: Report,
    dataset: Mapping[str, Any],
    *,
    semantic: str | None,
    top_id: int | None,
    corpus: str | None = None,
    template: str | None = None,
) -> None:
    """Check an encoded-dataset declaration against derived identities.

    An expected value of ``None`` means "unknown here"; that binding is not checked.
    """
    bindings = (
        ("tokenizer_hash", semantic, "tokenizer", "re-encode the dataset with this tokenizer"),
        ("corpus_hash", corpus, "corpus", "re-encode from this corpus, or bundle its corpus"),
        ("template_hash", template, "template", "re-render the dataset with this template"),
    )
    for key, expected, what, fix in bindings:
        if expected is None:
            continue
        report.expect(
            f"dataset.{key}",
            dataset[key] == expected,
            f"dataset is bound to {what} {_short(dataset[key])}, but the {what} here is "
            f"{_short(expected)} (stale binding); {fix}",
        )
    top = dataset["max_token_id"]
    if top_id is not None:
        report.expect(
            "dataset.max_token_id",
            top is None or top <= top_id,
            f"dataset stores ID {top}, but the tokenizer's largest ID is {top_id}",
        )
    documents = dataset["documents"]
    if documents is None:
        return
    problems = []
    if len(documents) != dataset["record_count"]:
        problems.append(f"{len(documents)} records listed, record_count {dataset['record_count']}")
    for doc in documents:
        for key in ("tokenizer_hash", "template_hash"):
            if doc[key] != dataset[key]:
                problems.append(f"document {doc['document_id']!r} has a different {key}")
    ids = [d["max_token_id"] for d in documents if d["max_token_id"] is not None]
    if (max(ids) if ids else None) != top:
        problems.append(f"largest record ID is {max(ids) if ids else None}, declared {top}")
    report.expect("dataset.records", not problems, "; ".join(problems))


def check_checkpoint(
    report: Report,
    checkpoint: Mapping[str, Any],
    *,
    semantic: str | None,
    template: str | None,
    policy: Mapping[str, Any] | None,
    top_id: int | None,
    require_bindings: bool = True,
) -> None:
    """Check a checkpoint declaration: bindings, special IDs, rows and the tied head.

    With ``require_bindings=False`` a checkpoint that names no tokenizer or template (one
    read from a safetensors file) skips those bindings instead of failing them.
    """
    for key, expected, what in (
        ("tokenizer_hash", semantic, "tokenizer"),
        ("template_hash", template, "template"),
    ):
        declared = checkpoint[key]
        if expected is None or (declared is None and not require_bindings):
            continue
        report.expect(
            f"checkpoint.{key}",
            declared == expected,
            f"checkpoint was trained with {what} {_short(declared)}, but the {what} here is "
            f"{_short(expected)}; use the matching {what} or migrate the checkpoint",
        )
    if policy is not None:
        # Stop IDs are a set; their order is checked with the other canonical orders.
        ids = {**checkpoint["special_ids"], "stop": sorted(checkpoint["special_ids"]["stop"])}
        wrong = [
            f"{key}: checkpoint {ids[key]!r}, tokenizer {policy[key]!r}"
            for key in CHECKPOINT_SPECIAL_KEYS
            if ids[key] != policy[key]
        ]
        report.expect(
            "checkpoint.special_ids",
            not wrong,
            "special-ID config differs from the tokenizer's sequence policy ("
            + "; ".join(wrong)
            + "); fix the model config so generation starts and stops on the same IDs",
        )
    if top_id is not None:
        need = top_id + 1
        rows_in = checkpoint["input_embedding_rows"]
        report.expect(
            "checkpoint.input_rows",
            rows_in >= need,
            f"{rows_in} input embedding rows do not cover IDs 0..{top_id} (need >= {need}); "
            "resize the embeddings (and train the new rows) before using this tokenizer",
        )
        rows_out = checkpoint["output_vocab_rows"]
        report.expect(
            "checkpoint.output_rows",
            rows_out is None or rows_out >= need,
            f"{rows_out} output rows do not cover IDs 0..{top_id} (need >= {need}); "
            "resize the output head",
        )
    if checkpoint["tied_output_head"]:
        report.expect(
            "checkpoint.tied_head",
            checkpoint["tied_storage_verified"] is True,
            "the output head is declared tied, but shared storage was not verified; "
            "check the tensors (checkpoint_from_safetensors) before relying on the tie",
        )


def _check_release_files(bundle: Mapping[str, Any], root: Path, report: Report) -> None:
    for record in bundle["tokenizer"]["files"]:
        path = root / record["path"]
        if not path.is_file():
            report.failed("tokenizer.release_files", f"{record['path']} is missing under {root}")
            continue
        actual = file_sha256(path)
        report.expect(
            "tokenizer.release_files",
            actual == record["sha256"],
            f"{record['path']} now hashes to {_short(actual)}, declared "
            f"{_short(record['sha256'])} (raw release-file drift)",
        )


def _check_manifest(bundle: Mapping[str, Any], derived: Mapping[str, Any], report: Report) -> None:
    manifest = bundle["tokenizer"]["manifest"]
    if manifest is None:
        return
    sub = check_manifest(manifest, config=bundle["tokenizer"]["config"], golden=bundle["golden"])
    report.extend(sub)
    if sub.failed_names & {"manifest.schema", "manifest.canonical_values"}:
        return
    release = derived["tokenizer_release"]
    if release is not None:
        report.expect(
            "tokenizer.manifest_release",
            manifest["tokenizer"]["release_hash"] == release,
            "the manifest describes different release files than the bundle",
        )
    fit = bundle["corpus"]["fit_digest"]
    trained = (manifest.get("training") or {}).get("corpus", {}).get("digest")
    if fit is not None and trained is not None:
        report.expect(
            "corpus.fit_digest",
            fit == trained,
            f"the tokenizer was trained on corpus stream {trained}, "
            f"but the corpus manifest declares {fit}",
        )


def reconcile(
    bundle: Any,
    *,
    root: str | os.PathLike[str] | None = None,
    raise_on_failure: bool = False,
) -> Report:
    """Check a bundle and return a report of every check; ``root`` is the directory that
    holds the released tokenizer files (their bytes are re-hashed when given).

    With ``raise_on_failure=True`` a failing report raises :class:`ContractError`.
    """
    report = Report("reconcile")
    try:
        check_canonical(bundle)
        report.passed("structure.canonical_values")
    except CanonicalError as exc:
        report.failed("structure.canonical_values", str(exc))
    errors = declaration_errors(bundle, "bundle")
    for error in errors:
        report.failed("structure.schema", error)
    if errors:
        report.skipped("bindings", "skipped: fix the structure errors first")
    else:
        report.passed("structure.schema")
        _reconcile_valid(bundle, root, report)
    if raise_on_failure:
        report.raise_for_failures()
    return report


def _reconcile_valid(bundle: Mapping[str, Any], root: Any, report: Report) -> None:
    _check_order(bundle, report)
    config = bundle["tokenizer"]["config"]
    problems = component_problems(config)
    report.expect("tokenizer.components", not problems, "; ".join(problems))
    derived = _check_hashes(bundle, report)
    top_id = policy = None
    if not problems:
        top_id, policy = max_id(config), special_policy(config)
    _check_manifest(bundle, derived, report)
    if root is not None:
        _check_release_files(bundle, Path(root), report)
    off_split = [d["document_id"] for d in bundle["corpus"]["documents"] if d["split"] != "train"]
    report.expect(
        "corpus.train_only",
        not off_split,
        f"validation/test documents {off_split[:5]} are in the tokenizer's fit corpus; "
        "fit the tokenizer on training documents only",
    )
    if derived["tokenizer_semantic"] is None:
        report.skipped("bindings", "tokenizer hash unknown: dataset/checkpoint bindings skipped")
    check_dataset(
        report,
        bundle["dataset"],
        semantic=derived["tokenizer_semantic"],
        top_id=top_id,
        corpus=derived["corpus"],
        template=derived["template"],
    )
    check_checkpoint(
        report,
        bundle["checkpoint"],
        semantic=derived["tokenizer_semantic"],
        template=derived["template"],
        policy=policy,
        top_id=top_id,
    )
    golden = bundle["golden"]
    if golden is not None and derived["tokenizer_semantic"] is not None:
        report.expect(
            "golden.tokenizer_hash",
            golden["semantic_hash"] == derived["tokenizer_semantic"],
            "the golden vectors were generated by a different tokenizer; regenerate them",
        )
    if golden is not None:
        golden_ids = [i for case in golden["cases"] for i in (case["ids"] or ())]
        checkpoint = bundle["checkpoint"]
        rows = [checkpoint["input_embedding_rows"], checkpoint["output_vocab_rows"]]
        limit = min(r for r in rows if r is not None)
        report.expect(
            "golden.rows",
            not golden_ids or max(golden_ids) < limit,
            f"golden ID {max(golden_ids or [0])} has no row in a checkpoint with {limit} rows",
        )
