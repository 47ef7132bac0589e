"""Corpus metrics of one tokenizer, overall and per slice.

Ratios are *ratios of totals* (each byte, word or position weighs once: the corpus-cost
question) unless the name says ``macro`` (the mean of per-record ratios: every record
weighs once). Length percentiles use the nearest-rank definition
(``numpy.percentile(method="inverted_cdf")``), so they are always real record lengths.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigError, TokenpactError
from .corpus import group_sums
from .encoded import EncodedCorpus
from .text_units import TextUnits

if TYPE_CHECKING:
    from ..core import Tokenizer

PERCENTILE_METHOD: Literal["inverted_cdf"] = "inverted_cdf"


def _ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


def _quantiles(lengths: np.ndarray) -> dict[str, int]:
    if lengths.size == 0:
        return {"p50": 0, "p95": 0, "max": 0}
    p50, p95 = np.percentile(lengths, [50, 95], method=PERCENTILE_METHOD)
    return {"p50": int(p50), "p95": int(p95), "max": int(lengths.max())}


def _amplification(cand: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Candidate vs reference on the same records: both estimators, named, plus deltas."""
    has_ref = ref > 0
    delta = cand - ref
    out: dict[str, Any] = {
        "ratio_of_totals": _ratio(cand.sum(), ref.sum()),
        "macro_mean_ratio": float(np.mean(cand[has_ref] / ref[has_ref])) if has_ref.any() else None,
        "delta_mean": float(delta.mean()) if delta.size else 0.0,
        "delta_p50": int(np.percentile(delta, 50, method=PERCENTILE_METHOD)) if delta.size else 0,
        "delta_p95": int(np.percentile(delta, 95, method=PERCENTILE_METHOD)) if delta.size else 0,
        "records_longer": int((delta > 0).sum()),
        "records_shorter": int((delta < 0).sum()),
    }
    return out


def record_arrays(enc: EncodedCorpus) -> dict[str, np.ndarray]:
    """Per-record token counts of every countable kind (int64 arrays)."""
    t = enc.table
    ids = enc.ids
    return {
        "tokens": enc.lengths,
        "single_byte": enc.per_record((t.byte_len == 1)[ids] & ~t.special[ids]),
        "partial_utf8": enc.per_record(t.partial_utf8[ids]),
        "unk": enc.per_record(t.unk[ids]),
        "byte_fallback": enc.per_record(t.byte_fallback[ids]),
    }


def _block(
    units: dict[str, np.ndarray],
    counts: dict[str, np.ndarray],
    lengths: np.ndarray,
    *,
    context_length: int,
    ref_lengths: np.ndarray | None,
) -> dict[str, Any]:
    tokens = int(counts["tokens"].sum())
    n_bytes = int(units["n_bytes"].sum())
    has_tokens = lengths > 0
    block: dict[str, Any] = {
        "records": int(lengths.size),
        "bytes": n_bytes,
        "codepoints": int(units["codepoints"].sum()),
        "graphemes": int(units["graphemes"].sum()),
        "words": int(units["words"].sum()),
        "tokens": tokens,
        "bytes_per_token": _ratio(n_bytes, tokens),
        "bytes_per_token_macro": float(np.mean(units["n_bytes"][has_tokens] / lengths[has_tokens]))
        if has_tokens.any()
        else None,
        "codepoints_per_token": _ratio(units["codepoints"].sum(), tokens),
        "graphemes_per_token": _ratio(units["graphemes"].sum(), tokens),
        "fertility": _ratio(tokens, units["words"].sum()),
        "single_byte_fraction": _ratio(counts["single_byte"].sum(), tokens),
        "partial_utf8_fraction": _ratio(counts["partial_utf8"].sum(), tokens),
        "unk_rate": _ratio(counts["unk"].sum(), tokens),
        "byte_fallback_rate": _ratio(counts["byte_fallback"].sum(), tokens),
        **_quantiles(lengths),
        "truncated": int((lengths > context_length).sum()),
        "attention_pairs": int(np.dot(lengths, lengths)),
    }
    if ref_lengths is not None:
        block["amplification"] = _amplification(lengths, ref_lengths)
    return block


def corpus_metrics(
    enc: EncodedCorpus,
    units: TextUnits,
    *,
    slice_names: Sequence[str],
    slice_codes: np.ndarray,
    context_length: int,
    reference: EncodedCorpus | None = None,
) -> dict[str, Any]:
    """Every length/coverage metric, overall and for each slice.

    ``reference``: another tokenizer's encoding of the same records; adds per-slice
    amplification (ratio of totals and macro mean, both named) and paired deltas.
    """
    overall, per_slicing = sliced_metrics(
        enc,
        units,
        {"": (slice_names, slice_codes)},
        context_length=context_length,
        reference=reference,
    )
    return {"overall": overall, "slices": per_slicing[""]}


def sliced_metrics(
    enc: EncodedCorpus,
    units: TextUnits,
    slicings: Mapping[str, tuple[Sequence[str], np.ndarray]],
    *,
    context_length: int,
    reference: EncodedCorpus | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The overall metrics and, for each named slicing ``(slice names, per-record slice
    codes)``, the metrics of each slice (the per-record counts are computed once)."""
    if context_length < 1:
        raise ConfigError(f"context_length must be >= 1, got {context_length}")
    if len(units) != enc.offsets.size - 1:
        raise ConfigError("the text units and the encoding cover different record counts")
    counts = record_arrays(enc)
    lengths = counts["tokens"]
    ref_lengths = reference.lengths if reference is not None else None
    unit_arrays = {
        "n_bytes": units.n_bytes,
        "codepoints": units.codepoints,
        "graphemes": units.graphemes,
        "words": units.words,
    }
    overall = _block(
        unit_arrays, counts, lengths, context_length=context_length, ref_lengths=ref_lengths
    )
    out: dict[str, dict[str, Any]] = {}
    for slicing, (slice_names, slice_codes) in slicings.items():
        slices: dict[str, Any] = {}
        order = np.argsort(slice_codes, kind="stable")
        bounds = np.searchsorted(slice_codes[order], np.arange(len(slice_names) + 1))
        for k, name in enumerate(slice_names):
            members = order[bounds[k] : bounds[k + 1]]
            slices[name] = _block(
                {key: arr[members] for key, arr in unit_arrays.items()},
                {key: arr[members] for key, arr in counts.items()},
                lengths[members],
                context_length=context_length,
                ref_lengths=None if ref_lengths is None else ref_lengths[members],
            )
        # Cross-check the slice partition: totals over slices are the overall totals.
        per_slice_tokens = group_sums(lengths, slice_codes, len(slice_names))
        if int(per_slice_tokens.sum()) != overall["tokens"]:  # pragma: no cover - invariant
            raise ConfigError("slice totals do not add up to the overall totals")
        out[slicing] = slices
    return overall, out


# The causes of a failed round trip, each with the option that fixes it.
ROUND_TRIP_FIXES = {
    "unknown pieces": "train with byte_fallback=True (tokenpact train --byte-fallback) or "
    "a higher character_coverage, so every character has a piece",
    "whitespace collapse": "retrain with remove_extra_whitespaces=False (tokenpact train "
    "--keep-extra-whitespaces): SentencePiece's default strips and collapses runs of spaces",
    "normalization": "the normalizer rewrites the text (normalization=...); train with "
    "normalization='identity' to keep text exactly",
    "other": "inspect the record with `tokenpact inspect --tokenizer DIR TEXT`",
}


def _collapse_spaces(text: str) -> str:
    """SentencePiece's whitespace cleanup: strip U+0020 at the ends, collapse its runs."""
    return re.sub(" {2,}", " ", text.strip(" "))


def round_trip_cause(tok: Tokenizer, text: str, decoded: str, ids: Any) -> str:
    """Why ``decoded`` (``decode(encode(text))``) differs from ``text``: a key of
    :data:`ROUND_TRIP_FIXES`."""
    unk = getattr(tok, "unk_token_id", None)
    if unk is not None and unk in {int(i) for i in ids}:
        return "unknown pieces"
    if "\u2047" in decoded and "\u2047" not in text:  # SentencePiece's unknown surface
        return "unknown pieces"
    if decoded == _collapse_spaces(text):
        return "whitespace collapse"
    if decoded == tok.normalize(text):
        return "normalization"
    return "other"


def describe_causes(causes: dict[str, int]) -> str:
    """``"23 whitespace collapse: retrain with ..."``, one clause per cause."""
    return "; ".join(f"{n} {cause}: {ROUND_TRIP_FIXES[cause]}" for cause, n in causes.items())


def reconstruction(
    tok: Tokenizer,
    enc: EncodedCorpus,
    texts: Sequence[str],
    units: TextUnits,
    *,
    joined: bytes | None = None,
) -> dict[str, Any]:
    """Exact round trip ``decode(encode(x)) == x`` per record, and against ``N(x)``.

    Byte-level tokenizers take a vectorized path: the concatenated decode must equal the
    concatenated text *and* every record's decoded byte count must equal its byte
    count, which together prove each record round-trips. Otherwise (or if that fails)
    each record is decoded on its own. Decode time is measured on the same call.
    ``joined``: the UTF-8 of all texts concatenated, when the caller already has it.
    """
    n = len(texts)
    table = enc.table
    start = time.perf_counter()
    if tok.spec.kind.byte_level:
        decoded = tok.decode_bytes(enc.ids)
        seconds = time.perf_counter() - start
        record_bytes = enc.per_record_sum(table.byte_len[enc.ids])
        if np.array_equal(record_bytes, units.n_bytes) and decoded == (
            joined if joined is not None else "".join(texts).encode("utf-8")
        ):
            return {
                "exact": n,
                "normalized": n,
                "records": n,
                "decode_seconds": seconds,
                "failures": [],
                "causes": {},
            }
    exact = normalized = 0
    failures: list[int] = []
    start = time.perf_counter()
    outputs = [tok.decode(enc.record_ids(i), errors="replace") for i in range(n)]
    seconds = time.perf_counter() - start
    causes: dict[str, int] = {}
    for i, (text, out) in enumerate(zip(texts, outputs, strict=True)):
        if out == text:
            exact += 1
            normalized += 1
            continue
        cause = round_trip_cause(tok, text, out, enc.record_ids(i))
        causes[cause] = causes.get(cause, 0) + 1
        if out == tok.normalize(text):
            normalized += 1
        elif len(failures) < 20:
            failures.append(i)
    return {
        "exact": exact,
        "normalized": normalized,
        "records": n,
        "decode_seconds": seconds,
        "failures": failures,
        # Why the records that are not exact differ, by cause (ROUND_TRIP_FIXES).
        "causes": causes,
    }


def _sample_indices(n: int, count: int) -> list[int]:
    if n <= count:
        return list(range(n))
    step = n / count
    return sorted({int(k * step) for k in range(count)})


def offset_accuracy(
    tok: Tokenizer, texts: Sequence[str], *, sample: int = 200, max_chars: int = 4000
) -> dict[str, Any]:
    """Do offsets slice back to each token's text? On an evenly spaced record sample.

    A token is *exact* when ``text[start:end]`` equals the text its bytes decode to,
    *normalized* when ``N(text[start:end])`` does, *whitespace* when they agree after
    stripping surrounding whitespace (SentencePiece's U+2581 and WordPiece's ``##``
    make that the best possible), and *unchecked* when the token alone is not valid
    UTF-8 (a partial character has no text of its own) or is a control token. Texts
    are cut at ``max_chars`` code points to bound the per-token Python work.
    """
    counts = {"tokens": 0, "exact": 0, "normalized": 0, "whitespace": 0, "unchecked": 0}
    examples: list[dict[str, Any]] = []
    for i in _sample_indices(len(texts), sample):
        text = texts[i][:max_chars]
        if not text:
            continue
        enc = tok.encode_structured(text, truncation=False, padding=False)
        for token_id, (s, e) in zip(enc.ids, enc.offsets, strict=True):
            counts["tokens"] += 1
            try:
                piece = tok.decode([token_id])
            except TokenpactError:  # DecodeError: a partial character has no text of its own
                counts["unchecked"] += 1
                continue
            span = text[s:e]
            if span == piece:
                counts["exact"] += 1
            elif tok.normalize(span) == piece:
                counts["normalized"] += 1
            elif span.strip() == piece.strip().removeprefix("##"):
                counts["whitespace"] += 1
            elif len(examples) < 10:
                examples.append(
                    {"record": i, "id": int(token_id), "span": [s, e], "text": span, "token": piece}
                )
    checked = counts["tokens"] - counts["unchecked"]
    return {
        **counts,
        "accuracy_exact": _ratio(counts["exact"], checked),
        "accuracy_any": _ratio(
            counts["exact"] + counts["normalized"] + counts["whitespace"], checked
        ),
        "sample_records": min(sample, len(texts)),
        "mismatches": examples,
    }


def distinct_strings(texts: Sequence[str], *, limit: int = 200_000) -> list[str]:
    """The corpus's distinct whitespace-delimited strings, sorted, at most ``limit``."""
    seen: set[str] = set()
    for text in texts:
        seen.update(text.split())
    return sorted(seen)[:limit]


def normalization_collisions(tok: Tokenizer, words: Sequence[str]) -> dict[str, Any]:
    """Distinct raw strings (see :func:`distinct_strings`) that normalize to the same text.

    Collisions are where the normalizer erases a distinction (case, compatibility forms,
    accents); no decoder can restore it. All strings are normalized in one call, joined
    by U+0020, when the normalizer keeps that separator count; otherwise one call each.
    """
    if not words:
        return {
            "distinct_strings": 0,
            "colliding_groups": 0,
            "colliding_strings": 0,
            "examples": [],
        }
    joined = " ".join(words)
    normalized_joined = tok.normalize(joined)
    if normalized_joined == joined:
        return {
            "distinct_strings": len(words),
            "colliding_groups": 0,
            "colliding_strings": 0,
            "examples": [],
        }
    parts = normalized_joined.split(" ")
    normalized = parts if len(parts) == len(words) else [tok.normalize(w) for w in words]
    groups: dict[str, list[str]] = {}
    for raw, norm in zip(words, normalized, strict=True):
        groups.setdefault(norm, []).append(raw)
    colliding = {k: v for k, v in groups.items() if len(v) > 1}
    examples = [{"normalized": k, "raw": v[:5]} for k, v in sorted(colliding.items())[:10]]
    return {
        "distinct_strings": len(words),
        "colliding_groups": len(colliding),
        "colliding_strings": sum(len(v) for v in colliding.values()),
        "examples": examples,
    }
