"""Choose one tokenizer candidate on frozen validation evidence.

Each candidate is encoded on the validation split only; release gates reject the
mechanically bad ones; the winner is the minimum ``(validation tokens, vocabulary
parameters, candidate ID)`` among the eligible, so candidate-list order can never
choose. The candidate set is identified by a hash of the sorted semantic hashes. The
test split stays sealed until the winner is frozen and is evaluated exactly once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, ContractError
from .cost import cost
from .metrics import describe_causes, round_trip_cause
from .token_table import token_table
from .vocab import exposure_counts

if TYPE_CHECKING:
    from ..core import Tokenizer


@dataclass(frozen=True)
class Gates:
    """Release gates. ``None`` disables a gate; reconstruction is on unless disabled."""

    exact_reconstruction: bool = True
    max_vocab_params: int | None = None
    # Exposure floor: a learned row (longer than one byte, not a control token) is
    # under-exposed when the fit corpus emits it fewer than ``min_exposure`` times.
    min_exposure: int = 1
    max_underexposed_rows: int | None = None
    # Per-slice amplification against the baseline candidate (ratio of totals).
    max_slice_amplification: float | None = None


@dataclass(frozen=True)
class ModelShape:
    """The declared model side of the cost: width, tying, output bias, dtype."""

    d_model: int
    tied: bool = True
    bias: bool = False
    dtype: str = "bf16"


@dataclass
class CandidateReport:
    candidate_id: str
    semantic_hash: str
    vocab_size: int
    vocab_params: int
    validation_tokens: int
    validation_bytes: int
    logits_flops: int
    reconstruction_failures: int
    underexposed_rows: list[int]
    slice_amplification: dict[str, float]
    failures: list[str] = field(default_factory=list)
    exposure_checked: bool = True

    @property
    def eligible(self) -> bool:
        return not self.failures

    def to_dict(self, *, sample: int = 50) -> dict[str, Any]:
        """JSON-able; under-exposed rows as a count plus the first ``sample`` IDs."""
        out = {**asdict(self), "eligible": self.eligible}
        out["underexposed_count"] = len(self.underexposed_rows) if self.exposure_checked else None
        out["underexposed_rows"] = self.underexposed_rows[:sample]
        return out


def candidate_set_hash(semantic_hashes: Sequence[str]) -> str:
    """sha256 over the sorted semantic hashes: the same set in any order, one hash."""
    joined = "\n".join(sorted(semantic_hashes)).encode()
    return "sha256:" + hashlib.sha256(joined).hexdigest()


def _encode(tok: Tokenizer, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    ids, offsets = tok.encode_batch_flat(list(texts))
    return np.asarray(ids), np.asarray(offsets, dtype=np.int64)


def _lengths(tok: Tokenizer, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    ids, offsets = _encode(tok, texts)
    return ids, np.diff(offsets)


def evaluate_candidate(
    candidate_id: str,
    tok: Tokenizer,
    *,
    fit: Sequence[str],
    validation: Sequence[str],
    validation_slices: Sequence[str],
    shape: ModelShape,
    gates: Gates,
    baseline: Any | None = None,
) -> CandidateReport:
    """Encode ``validation`` (and ``fit``, when the exposure gate is on) and apply every gate."""
    if len(validation_slices) != len(validation):
        raise ConfigError("give one slice name per validation record")
    ids, offsets = _encode(tok, validation)
    lengths = np.diff(offsets)
    tokens = int(lengths.sum())
    n_bytes = sum(len(t.encode("utf-8")) for t in validation)
    c = cost(
        tok.vocab_size,
        shape.d_model,
        tied=shape.tied,
        bias=shape.bias,
        dtype=shape.dtype,
        positions=tokens,
    )
    causes: dict[str, int] = {}
    for k, text in enumerate(validation):
        record = ids[offsets[k] : offsets[k + 1]]
        decoded = tok.decode(record, errors="replace")
        if decoded != text:
            cause = round_trip_cause(tok, text, decoded, record)
            causes[cause] = causes.get(cause, 0) + 1
    recon = sum(causes.values())
    under: list[int] = []
    if gates.max_underexposed_rows is not None:
        # Only an active exposure gate pays for encoding the (large) fit split.
        fit_ids, _ = _encode(tok, fit)
        exposure = exposure_counts(fit_ids, tok.vocab_size)
        table = token_table(tok)
        learned = (table.byte_len > 1) & ~table.special & ~table.added
        under = np.flatnonzero(learned & (exposure < gates.min_exposure)).tolist()
    amplification: dict[str, float] = {}
    if baseline is not None:
        _, base_lengths = _lengths(baseline, validation)
        for name in sorted(set(validation_slices)):
            members = np.asarray([s == name for s in validation_slices])
            base = int(base_lengths[members].sum())
            amplification[name] = float(lengths[members].sum() / base) if base else 1.0
    failures: list[str] = []
    if gates.exact_reconstruction and recon:
        failures.append(
            f"exact reconstruction: {recon} validation records do not round-trip "
            f"({describe_causes(causes)})"
        )
    if gates.max_vocab_params is not None and c.vocab_params > gates.max_vocab_params:
        failures.append(
            f"parameters: {c.vocab_params} vocabulary parameters > limit {gates.max_vocab_params}"
        )
    if gates.max_underexposed_rows is not None and len(under) > gates.max_underexposed_rows:
        failures.append(
            f"exposure: {len(under)} learned rows seen < {gates.min_exposure} times in fit "
            f"> limit {gates.max_underexposed_rows}"
        )
    if gates.max_slice_amplification is not None:
        for name, ratio in amplification.items():
            if ratio > gates.max_slice_amplification:
                failures.append(
                    f"amplification: slice {name!r} at {ratio:.3f}x the baseline "
                    f"> limit {gates.max_slice_amplification}"
                )
    return CandidateReport(
        candidate_id=candidate_id,
        semantic_hash=tok.semantic_hash,
        vocab_size=int(tok.vocab_size),
        vocab_params=c.vocab_params,
        validation_tokens=tokens,
        validation_bytes=n_bytes,
        logits_flops=int(c.logits_flops or 0),
        reconstruction_failures=recon,
        underexposed_rows=under,
        slice_amplification=amplification,
        failures=failures,
        exposure_checked=gates.max_underexposed_rows is not None,
    )


@dataclass(frozen=True)
class Selection:
    """The frozen decision: winner, every candidate's report, and the set's identity."""

    winner: str
    winner_hash: str
    candidate_set_hash: str
    reports: tuple[CandidateReport, ...]
    key: str = "(validation_tokens, vocab_params, candidate_id)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "winner_hash": self.winner_hash,
            "candidate_set_hash": self.candidate_set_hash,
            "key": self.key,
            "test_consulted": False,
            "candidates": [r.to_dict() for r in sorted(self.reports, key=lambda r: r.candidate_id)],
        }


def select(reports: Sequence[CandidateReport]) -> Selection:
    """Deterministic winner among the eligible candidates.

    Raises ContractError when no candidate passes the gates (with every failure).
    """
    ids = [r.candidate_id for r in reports]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"candidate IDs must be unique, got {ids}")
    eligible = [r for r in reports if r.eligible]
    if not eligible:
        reasons = "; ".join(f"{r.candidate_id}: {', '.join(r.failures)}" for r in reports)
        raise ContractError(f"no candidate passes the release gates ({reasons})")
    winner = min(eligible, key=lambda r: (r.validation_tokens, r.vocab_params, r.candidate_id))
    return Selection(
        winner=winner.candidate_id,
        winner_hash=winner.semantic_hash,
        candidate_set_hash=candidate_set_hash([r.semantic_hash for r in reports]),
        reports=tuple(reports),
    )


class SealedTestSplit:
    """The test split: opened once, only for the frozen winner, and the result recorded."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        self._result: dict[str, Any] | None = None

    @property
    def result(self) -> dict[str, Any] | None:
        return self._result

    def evaluate(self, selection: Selection, tok: Tokenizer) -> dict[str, Any]:
        """Encode the test split with the frozen winner; a second call is refused."""
        if self._result is not None:
            raise ContractError(
                "the test split was already evaluated; its result cannot revise the "
                "selection: start a new versioned experiment with a fresh test split"
            )
        if tok.semantic_hash != selection.winner_hash:
            raise ContractError(
                f"the test split may only be evaluated with the frozen winner "
                f"{selection.winner!r} ({selection.winner_hash}), not {tok.semantic_hash}"
            )
        _, lengths = _lengths(tok, self._texts)
        self._result = {
            "candidate": selection.winner,
            "semantic_hash": tok.semantic_hash,
            "records": len(self._texts),
            "positions": int(lengths.sum()),
            "bytes": sum(len(t.encode("utf-8")) for t in self._texts),
            "evaluated_after_freeze": True,
        }
        return dict(self._result)


def evaluate_candidates(
    candidates: Mapping[str, Any],
    *,
    fit: Sequence[str],
    validation: Sequence[str],
    validation_slices: Sequence[str],
    shape: ModelShape,
    gates: Gates,
    baseline: str | None = None,
) -> list[CandidateReport]:
    """:func:`evaluate_candidate` for each candidate, against the named baseline."""
    if baseline is not None and baseline not in candidates:
        raise ConfigError(
            f"baseline {baseline!r} is not one of the candidates {sorted(candidates)}"
        )
    base = candidates[baseline] if baseline is not None else None
    return [
        evaluate_candidate(
            name,
            tok,
            fit=fit,
            validation=validation,
            validation_slices=validation_slices,
            shape=shape,
            gates=gates,
            baseline=base,
        )
        for name, tok in sorted(candidates.items())
    ]
