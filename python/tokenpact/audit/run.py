"""One audit run: metrics per tokenizer and slice, premium, vocabulary audit, sweep and
selection, gathered into the JSON-able report that ``report.html`` is drawn from."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, ContractError
from .builtin_slices import BUILTIN_SLICES
from .corpus import AuditCorpus
from .encoded import EncodedCorpus, encode_corpus
from .metrics import (
    PERCENTILE_METHOD,
    distinct_strings,
    normalization_collisions,
    offset_accuracy,
    reconstruction,
    sliced_metrics,
)
from .premium import ParallelCorpus, token_premium
from .selection import (
    Gates,
    ModelShape,
    SealedTestSplit,
    candidate_set_hash,
    evaluate_candidates,
    select,
)
from .splits import SplitRecord, assign_splits, validate_split_manifest
from .sweep import vocabulary_sweep
from .text_units import WORD_COUNTER, text_units
from .vocab import audit_vocabulary, exposure_counts

if TYPE_CHECKING:
    from ..core import Tokenizer

SCHEMA = "tokenpact.audit/v1"
# Fields that depend on the machine or the clock; report.html leaves them out so the
# same inputs give a byte-identical page.
VOLATILE = ("throughput", "vocab_seconds", "timings")


@dataclass(frozen=True)
class SelectionConfig:
    """Split, model shape and gates of the selection protocol."""

    shape: ModelShape = ModelShape(d_model=4096, tied=False, bias=False, dtype="bf16")
    gates: Gates = Gates()
    group_field: str | None = None  # records sharing a value share a split; None: record
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    seed: str = "tokenpact-audit-v1"
    sweep_sizes: Sequence[int] = ()
    sweep_fit_bytes: int = 2_000_000
    sweep_pattern: str = "gpt4"


@dataclass
class AuditOptions:
    slice_field: str | None = None
    context_length: int = 8192
    reference: str | None = None  # amplification baseline; default the first tokenizer
    threads: int | None = None
    offsets_sample: int = 200
    collision_strings: int = 200_000
    premium_languages: Sequence[str] | None = None
    selection: SelectionConfig | None = field(default_factory=SelectionConfig)
    progress: bool = False
    # Built-in slices (code, numbers, URLs, emoji, scripts, length and quality bands)
    # reported beside the field's slices; () turns them off.
    builtin_slices: Sequence[str] = tuple(BUILTIN_SLICES)


def _cdf(lengths: np.ndarray, points: int = 100) -> list[list[float]]:
    if lengths.size == 0:
        return []
    qs = np.linspace(100 / points, 100, points)
    values = np.percentile(lengths, qs, method=PERCENTILE_METHOD)
    return [[int(v), round(float(q) / 100, 4)] for v, q in zip(values, qs, strict=True)]


def _bar(progress: bool, total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", disable=not progress)


def audit_tokenizers(
    tokenizers: Mapping[str, Tokenizer],
    corpus: AuditCorpus,
    *,
    options: AuditOptions,
    parallel: ParallelCorpus | None = None,
) -> dict[str, Any]:
    """Every metric of every tokenizer (the report's ``tokenizers`` and ``corpus``)."""
    if not tokenizers:
        raise ConfigError("give at least one tokenizer to audit (--tokenizer PATH)")
    if len(corpus) == 0:
        raise ConfigError(f"{corpus.name} has no records; give a corpus with at least one text")
    names = list(tokenizers)
    reference = options.reference or names[0]
    if reference not in tokenizers:
        raise ConfigError(f"reference {reference!r} is not one of the tokenizers {names}")
    timings: dict[str, float] = {}
    start = time.perf_counter()
    units = text_units(corpus.texts)
    slice_names, codes = corpus.slice_codes(options.slice_field)
    builtin = {name: corpus.slice_codes(name) for name in options.builtin_slices}
    joined = "".join(corpus.texts).encode("utf-8")
    words = distinct_strings(corpus.texts, limit=options.collision_strings)
    timings["text_units"] = time.perf_counter() - start
    bar = _bar(options.progress, len(names) * 4, "audit")
    encoded: dict[str, EncodedCorpus] = {}
    for name in [reference, *[n for n in names if n != reference]]:
        encoded[name] = encode_corpus(
            tokenizers[name], corpus.texts, name=name, threads=options.threads
        )
    bar.update(len(names))
    out: dict[str, Any] = {}
    for name in names:
        tok, enc = tokenizers[name], encoded[name]
        ref = None if name == reference else encoded[reference]
        t0 = time.perf_counter()
        # The field's slices and the built-in ones from one pass over the counts.
        overall, slicings = sliced_metrics(
            enc,
            units,
            {"": (slice_names, codes), **builtin},
            context_length=options.context_length,
            reference=ref,
        )
        metrics = {"overall": overall, "slices": slicings.pop("")}
        builtin_metrics = slicings
        recon = reconstruction(tok, enc, corpus.texts, units, joined=joined)
        decode_seconds = recon.pop("decode_seconds")
        entry: dict[str, Any] = {
            "semantic_hash": tok.semantic_hash,
            "semantics": tok.semantics,
            "vocab_size": int(tok.vocab_size),
            "metrics": metrics,
            "builtin_slices": builtin_metrics,
            "length_cdf": _cdf(enc.lengths),
            "reconstruction": recon,
            "offsets": offset_accuracy(tok, corpus.texts, sample=options.offsets_sample),
            "normalization_collisions": normalization_collisions(tok, words),
        }
        bar.update(1)
        exposure = exposure_counts(enc.ids, enc.table.vocab_size)
        vocab = audit_vocabulary(tok, exposure=exposure, table=enc.table)
        entry["vocab_audit"] = vocab.summary(enc.table)
        entry["vocab_seconds"] = entry["vocab_audit"].pop("seconds")
        bar.update(1)
        if parallel is not None:
            entry["premium"] = token_premium(
                tok, parallel, languages=options.premium_languages, threads=options.threads
            )
        bar.update(1)
        n_bytes = int(units.n_bytes.sum())
        entry["throughput"] = {
            "threads": enc.threads,
            "cpu_count": os.cpu_count(),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "encode_seconds": enc.encode_seconds,
            "decode_seconds": decode_seconds,
            "encode_mb_per_s": n_bytes / enc.encode_seconds / 1e6 if enc.encode_seconds else None,
            "decode_mb_per_s": n_bytes / decode_seconds / 1e6 if decode_seconds else None,
        }
        timings[name] = time.perf_counter() - t0 + enc.encode_seconds
        out[name] = entry
    bar.close()
    return {
        "corpus": {
            "name": corpus.name,
            "records": len(corpus),
            "bytes": int(units.n_bytes.sum()),
            "codepoints": int(units.codepoints.sum()),
            "slice_field": options.slice_field,
            "slices": slice_names,
            "builtin_slices": {name: names for name, (names, _) in builtin.items()},
            "word_counter": WORD_COUNTER,
            "grapheme_clusters": "UAX #29 extended grapheme clusters (regex \\X)",
            "percentiles": f"nearest rank (numpy method={PERCENTILE_METHOD!r})",
        },
        "context_length": options.context_length,
        "reference": reference,
        "tokenizers": out,
        "premium_corpus": None
        if parallel is None
        else {"reference": parallel.reference, "items": len(parallel.items)},
        "timings": timings,
    }


def split_records(
    corpus: AuditCorpus, config: SelectionConfig, slice_field: str | None
) -> list[SplitRecord]:
    """The corpus as a split manifest, roles assigned by group (validated)."""
    n = len(corpus)
    if config.group_field is not None and config.group_field not in corpus.fields:
        raise ConfigError(
            f"group field {config.group_field!r} is not in {corpus.name}; pass --group-field "
            f"with one of {sorted(corpus.fields)}"
        )
    ids = corpus.fields.get("id") or [str(i) for i in range(n)]
    if len(set(ids)) != n:
        ids = [str(i) for i in range(n)]
    groups = corpus.fields[config.group_field] if config.group_field else ids
    roles = assign_splits(groups, fractions=config.fractions, seed=config.seed)
    slices = corpus.fields[slice_field] if slice_field else ["all"] * n
    records = [
        SplitRecord(ids[i], groups[i], roles[i], slices[i], corpus.texts[i]) for i in range(n)
    ]
    try:
        validate_split_manifest(records)
    except ContractError as exc:
        raise ConfigError(
            f"{exc}: {n} records in {len(set(groups))} groups are too few for fit, validation "
            "and test; use a larger corpus, or --no-select to audit without selection"
        ) from None
    return records


def run_selection(
    tokenizers: Mapping[str, Tokenizer],
    corpus: AuditCorpus,
    *,
    options: AuditOptions,
) -> dict[str, Any]:
    """Sweep (optional) and the selection protocol over the given tokenizers + sweep."""
    config = options.selection
    if config is None:
        return {}
    records = split_records(corpus, config, options.slice_field)
    fit = [r.text for r in records if r.split == "fit"]
    validation = [r.text for r in records if r.split == "validation"]
    val_slices = [r.slice for r in records if r.split == "validation"]
    test = [r.text for r in records if r.split == "test"]
    result: dict[str, Any] = {
        "split": {
            "fit": len(fit),
            "validation": len(validation),
            "test": len(test),
            "group_field": config.group_field,
            "seed": config.seed,
            "fractions": list(config.fractions),
        },
        "shape": asdict(config.shape),
        "gates": asdict(config.gates),
    }
    candidates = dict(tokenizers)
    if config.sweep_sizes:
        sample: list[str] = []
        budget = config.sweep_fit_bytes
        for text in fit:
            size = len(text.encode("utf-8"))
            if size > budget:
                break
            sample.append(text)
            budget -= size
        points, toks = vocabulary_sweep(
            sample or fit[:1],
            validation,
            config.sweep_sizes,
            shape=config.shape,
            pattern=config.sweep_pattern,
            progress=options.progress,
        )
        result["sweep"] = {
            "fit_records": len(sample),
            "fit_bytes": config.sweep_fit_bytes - budget,
            "pattern": config.sweep_pattern,
            "nested": True,
            "points": [p.to_dict() for p in points],
        }
        for tok in toks:
            candidates[f"sweep-{tok.vocab_size}"] = tok
    baseline = options.reference or next(iter(tokenizers))
    reports = evaluate_candidates(
        candidates,
        fit=fit,
        validation=validation,
        validation_slices=val_slices,
        shape=config.shape,
        gates=config.gates,
        baseline=baseline,
    )
    result["baseline"] = baseline
    try:
        selection = select(reports)
    except ContractError as exc:
        # Keep the evidence: the report shows every gate failure; the test split stays
        # sealed because nothing was frozen.
        result["selection"] = {
            "winner": None,
            "error": str(exc),
            "candidate_set_hash": candidate_set_hash([r.semantic_hash for r in reports]),
            "key": "(validation_tokens, vocab_params, candidate_id)",
            "test_consulted": False,
            "candidates": [r.to_dict() for r in sorted(reports, key=lambda r: r.candidate_id)],
        }
        result["test"] = None
        return result
    result["selection"] = selection.to_dict()
    sealed = SealedTestSplit(test)
    result["test"] = sealed.evaluate(selection, candidates[selection.winner])
    return result


def build_report(
    tokenizers: Mapping[str, Tokenizer],
    corpus: AuditCorpus,
    *,
    options: AuditOptions,
    parallel: ParallelCorpus | None = None,
) -> dict[str, Any]:
    """The whole report (``report.json``)."""
    report: dict[str, Any] = {"schema": SCHEMA}
    report.update(audit_tokenizers(tokenizers, corpus, options=options, parallel=parallel))
    t0 = time.perf_counter()
    report["selection"] = run_selection(tokenizers, corpus, options=options)
    report["timings"]["selection"] = time.perf_counter() - t0
    report["volatile"] = list(VOLATILE)
    return report


def stable_view(report: Mapping[str, Any]) -> Any:
    """The report without machine- or clock-dependent fields (what the HTML shows)."""

    def strip(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: strip(v) for k, v in node.items() if k not in VOLATILE}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(report)
