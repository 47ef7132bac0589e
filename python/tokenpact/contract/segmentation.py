"""Stochastic segmentation manifests and their fail-closed replay.

BPE-dropout and Unigram sampling add randomness to the training data, so "alpha=0.1" is
not enough to reproduce a segmentation: the manifest also names the model and its
normalization, the candidate support, the generator and its version, how streams are
keyed (and that workers and ranks are not part of the key), the draw scope, the order in
which eligible occurrences or lattice steps consume draws, and the evaluation policy.

:func:`segmentation_manifest` records all of these for one sample;
:func:`replay_segmentation` recomputes the sample from a record and refuses (a typed
:class:`~tokenpact.errors.ReplayError`) any record with a missing, extra, malformed or
foreign field: a field this library does not implement is a segmentation it cannot
reproduce, so it is never guessed.

>>> import tokenpact as tp
>>> tok = tp.train_bpe(["low lower lowest"] * 5, vocab_size=262, special_tokens=())
>>> key = tp.SampleKey(seed=7, epoch=0, sample_id="doc-1")
>>> record = segmentation_manifest(tok, method="bpe_dropout", parameter=0.1, key=key)
>>> ids = tp.bpe_dropout(tok, "lowest", p=0.1, key=key)
>>> replay_segmentation(tok, "lowest", record.to_json(), expected=ids) == ids
True
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _native
from ..errors import InvalidInputError, ReplayError
from ..stochastic import KEY_DERIVATION, RNG_NAME, SampleKey, bpe_dropout
from .hashing import normalization_hash
from .manifest import library_version

if TYPE_CHECKING:
    from ..core import Tokenizer

FORMAT = "tokenpact.segmentation-replay"
FORMAT_VERSION = 1
# Streams are keyed by what identifies a sample, never by who computes it.
WORKER_DERIVATION = "none: worker, rank and prefetch are not part of the key"
EVALUATION_MODES = ("deterministic", "stochastic")
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
# Normalization hash per tokenizer: it reads the whole config (slow for a 128k
# vocabulary) and every sample's manifest and replay needs it. Tokenizers are immutable.
_NORMALIZATION: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


@functools.cache
def _implementation() -> str:
    return f"tokenpact {library_version()} (Rust engine; Python reference twin)"


def _normalization_of(tokenizer: Tokenizer) -> str:
    try:
        return _NORMALIZATION[tokenizer]
    except (KeyError, TypeError):  # TypeError: not weak-referenceable, compute each time
        pass
    value = normalization_hash(tokenizer)
    try:
        _NORMALIZATION[tokenizer] = value
    except TypeError:
        pass
    return value


@dataclass(frozen=True)
class _Method:
    """What one stochastic method does here; a record must declare exactly this."""

    parameter_name: str
    support: str
    draw_scope: str
    draw_order: str


METHODS: dict[str, _Method] = {
    "bpe_dropout": _Method(
        parameter_name="dropout_p",
        support="every eligible merge occurrence (no candidate cap)",
        draw_scope="one stream per (seed, epoch, sample_id, view); one draw per eligible "
        "merge occurrence considered, numbered across the whole text",
        draw_order="pre-tokens in text order; per merge step, eligible occurrences by "
        "(merge rank, position), one draw each until one survives/1",
    ),
    "unigram_sample": _Method(
        parameter_name="alpha",
        support="full lattice (every segmentation; no n-best cap)",
        draw_scope="one stream per (seed, epoch, sample_id, view); one draw per backward "
        "sampling step, numbered across the whole text",
        draw_order="words in text order; forward filtering, backward sampling from the "
        "word end, incoming edges in lattice order/1",
    ),
}

FIELDS = (
    "format",
    "format_version",
    "method",
    "model_hash",
    "normalization_hash",
    "parameter_name",
    "parameter",
    "support",
    "rng",
    "implementation",
    "seed",
    "epoch",
    "sample_id",
    "view",
    "key_derivation",
    "worker_derivation",
    "draw_scope",
    "draw_order",
    "evaluation",
)


@dataclass(frozen=True)
class EvaluationPolicy:
    """How evaluation treats segmentation: ``deterministic`` (stochastic segmentation off,
    the default), or ``stochastic`` with the number of draws, their base seeds and
    the statistic that aggregates them (the variance is then reported with the result)."""

    mode: str = "deterministic"
    draws: int = 0
    seeds: tuple[int, ...] = ()
    aggregate: str | None = None

    def __post_init__(self) -> None:
        problem = _evaluation_problem(self.to_json())
        if problem:
            raise ReplayError(f"evaluation policy: {problem}")

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "draws": self.draws,
            "seeds": list(self.seeds),
            "aggregate": self.aggregate,
        }


def _is_count(value: Any) -> bool:
    """An int in [0, 2**64): key fields are 64-bit words, so larger values would alias."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


def _evaluation_problem(value: Any) -> str | None:
    if not isinstance(value, Mapping) or set(value) != {"mode", "draws", "seeds", "aggregate"}:
        return "needs exactly mode, draws, seeds and aggregate"
    mode, draws, seeds, aggregate = (value[k] for k in ("mode", "draws", "seeds", "aggregate"))
    if mode not in EVALUATION_MODES:
        return f"mode {mode!r} is unknown; use one of {EVALUATION_MODES}"
    if not _is_count(draws) or not isinstance(seeds, (list, tuple)):
        return "draws must be an int >= 0 and seeds a list of ints"
    if not all(_is_count(s) for s in seeds):
        return "seeds must be ints >= 0"
    if mode == "deterministic" and (draws or seeds or aggregate is not None):
        return "a deterministic evaluation has no draws, seeds or aggregate"
    if mode == "stochastic":
        if draws < 1 or len(seeds) != draws:
            return "a stochastic evaluation needs draws >= 1 and one seed per draw"
        if not isinstance(aggregate, str) or not aggregate:
            return "a stochastic evaluation names its aggregate statistic (e.g. 'mean')"
    return None


@dataclass(frozen=True)
class SegmentationManifest:
    """Every field of the stochastic segmentation manifest for one sample."""

    method: str
    model_hash: str
    normalization_hash: str
    parameter_name: str
    parameter: float
    support: str
    rng: str
    implementation: str
    seed: int
    epoch: int
    sample_id: int | str
    view: int
    key_derivation: str
    worker_derivation: str
    draw_scope: str
    draw_order: str
    evaluation: EvaluationPolicy = field(default_factory=EvaluationPolicy)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    @property
    def key(self) -> SampleKey:
        return SampleKey(self.seed, self.epoch, self.sample_id, self.view)

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in FIELDS}
        out["evaluation"] = self.evaluation.to_json()
        return out

    @classmethod
    def from_json(cls, record: Any) -> SegmentationManifest:
        """Parse a record strictly; any missing, extra or malformed field is refused."""
        if isinstance(record, SegmentationManifest):
            record = record.to_json()
        if not isinstance(record, Mapping):
            raise ReplayError(
                f"a segmentation manifest is a JSON object, not {type(record).__name__}"
            )
        missing = [k for k in FIELDS if k not in record]
        extra = sorted(str(k) for k in record if k not in FIELDS)
        if missing or extra:
            raise ReplayError(
                f"segmentation manifest refused: missing {missing}, unknown {extra}; a replay "
                "needs every field of the manifest and no field it cannot honour"
            )
        problems = _field_problems(record)
        if problems:
            raise ReplayError("segmentation manifest refused: " + "; ".join(problems))
        ev = record["evaluation"]
        return cls(
            **{k: record[k] for k in FIELDS if k != "evaluation"},
            evaluation=EvaluationPolicy(
                ev["mode"], ev["draws"], tuple(ev["seeds"]), ev["aggregate"]
            ),
        )


def _field_problems(r: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    version = r["format_version"]
    if r["format"] != FORMAT or not _is_count(version) or version != FORMAT_VERSION:
        out.append(
            f"format {r['format']!r}, format_version {r['format_version']!r} is not "
            f"{FORMAT!r}, format_version {FORMAT_VERSION}"
        )
    method = METHODS.get(r["method"]) if isinstance(r["method"], str) else None
    if method is None:
        out.append(f"method {r['method']!r} is unknown; use one of {sorted(METHODS)}")
    for name in ("model_hash", "normalization_hash"):
        if not isinstance(r[name], str) or not _HASH.match(r[name]):
            out.append(f"{name} {r[name]!r} is not 'sha256:<64 lowercase hex>'")
    for name in ("seed", "epoch", "view"):
        if not _is_count(r[name]):
            out.append(f"{name} must be an int in [0, 2**64), got {r[name]!r}")
    sample = r["sample_id"]
    if not (isinstance(sample, str) or _is_count(sample)):
        out.append(f"sample_id must be a string or an int in [0, 2**64), got {sample!r}")
    if not isinstance(r["implementation"], str) or not r["implementation"]:
        out.append("implementation must name the library and version that drew the sample")
    if r["rng"] != RNG_NAME or _native.RNG_NAME != RNG_NAME:
        out.append(f"rng {r['rng']!r} is not this library's generator {RNG_NAME!r}")
    if r["key_derivation"] != KEY_DERIVATION:
        out.append(f"key_derivation {r['key_derivation']!r} is not {KEY_DERIVATION!r}")
    if r["worker_derivation"] != WORKER_DERIVATION:
        out.append(
            f"worker_derivation {r['worker_derivation']!r}: this library keys streams by "
            f"sample, not worker ({WORKER_DERIVATION!r})"
        )
    problem = _evaluation_problem(r["evaluation"])
    if problem:
        out.append(f"evaluation {problem}")
    if method is not None:
        out.extend(_method_problems(method, r))
    return out


def _method_problems(method: _Method, r: Mapping[str, Any]) -> list[str]:
    out = []
    for name in ("parameter_name", "support", "draw_scope", "draw_order"):
        if r[name] != getattr(method, name):
            out.append(
                f"{name} {r[name]!r} differs from what {r['method']} does here "
                f"({getattr(method, name)!r}); that segmentation cannot be reproduced"
            )
    value = r["parameter"]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if method.parameter_name == "dropout_p" and not (number and 0.0 <= value <= 1.0):
        out.append(f"parameter (dropout_p) must be a number in [0, 1], got {value!r}")
    if method.parameter_name == "alpha" and not (number and value > 0 and math.isfinite(value)):
        out.append(f"parameter (alpha) must be a finite number > 0, got {value!r}")
    return out


def segmentation_manifest(
    tokenizer: Tokenizer,
    *,
    method: str,
    parameter: float,
    key: SampleKey,
    evaluation: EvaluationPolicy | None = None,
) -> SegmentationManifest:
    """The manifest of segmenting one sample of ``key`` with ``method`` under ``tokenizer``.

    ``parameter`` is the dropout probability (``bpe_dropout``) or alpha
    (``unigram_sample``). The record is validated as it is built, so a manifest this
    function returns always replays.
    """
    spec = METHODS.get(method)
    if spec is None:
        raise ReplayError(f"method {method!r} is unknown; use one of {sorted(METHODS)}")
    key.fields()  # validates seed, epoch, view and sample_id
    manifest = SegmentationManifest(
        method=method,
        model_hash=tokenizer.semantic_hash,
        normalization_hash=_normalization_of(tokenizer),
        parameter_name=spec.parameter_name,
        parameter=float(parameter),
        support=spec.support,
        rng=RNG_NAME,
        implementation=_implementation(),
        seed=key.seed,
        epoch=key.epoch,
        sample_id=key.sample_id,
        view=key.view,
        key_derivation=KEY_DERIVATION,
        worker_derivation=WORKER_DERIVATION,
        draw_scope=spec.draw_scope,
        draw_order=spec.draw_order,
        evaluation=evaluation or EvaluationPolicy(),
    )
    return SegmentationManifest.from_json(manifest.to_json())


def replay_segmentation(
    tokenizer: Tokenizer,
    text: str,
    record: Mapping[str, Any] | SegmentationManifest,
    *,
    expected: Sequence[int] | None = None,
) -> list[int]:
    """Recompute the segmentation ``record`` describes; refuse what cannot be reproduced.

    The record must be complete and well formed, made with this ``tokenizer`` (model and
    normalization hashes) and this generator; with ``expected`` (the IDs stored with the
    sample) the recomputed IDs must equal them. Every refusal is a ``ReplayError``.
    """
    manifest = SegmentationManifest.from_json(record)
    if not isinstance(text, str):
        raise InvalidInputError(f"expected the sample's text as str, got {type(text).__name__}")
    actual_model = tokenizer.semantic_hash
    if manifest.model_hash != actual_model:
        raise ReplayError(
            f"the record was drawn under model {manifest.model_hash[:19]}..., this tokenizer "
            f"is {actual_model[:19]}...; load the tokenizer the record names"
        )
    actual_norm = _normalization_of(tokenizer)
    if manifest.normalization_hash != actual_norm:
        raise ReplayError(
            f"the record's normalization {manifest.normalization_hash[:19]}... differs from "
            f"this tokenizer's {actual_norm[:19]}...; load the tokenizer the record names"
        )
    if manifest.method == "bpe_dropout":
        ids = bpe_dropout(tokenizer, text, p=manifest.parameter, key=manifest.key)
    else:
        if "sample" not in tokenizer.capabilities:
            raise ReplayError(
                "unigram_sample needs a Unigram tokenizer (its engine's 'sample' "
                "capability); this one has none"
            )
        ids = list(tokenizer.sample(text, alpha=manifest.parameter, key=manifest.key))
    if expected is not None and list(expected) != ids:
        first = next(
            (i for i, (a, b) in enumerate(zip(ids, expected, strict=False)) if a != b),
            min(len(ids), len(expected)),
        )
        raise ReplayError(
            f"replay differs from the recorded IDs at token {first} ({len(ids)} vs "
            f"{len(expected)} tokens): the record does not describe this sample"
        )
    return ids
