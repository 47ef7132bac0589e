"""Language identification with ``py3langid`` plus script detection for mixed text.

py3langid is a maintained fork of langid.py (Lui & Baldwin 2012): a naive Bayes model
over byte n-grams for 97 ISO 639 languages (140 labels with its additions). The model
file ships inside the wheel (``py3langid/data/model.npz.xz``); nothing is downloaded at
run time. Confidence is the model's normalized probability (``norm_probs=True``).

The step runs py3langid's model natively, a batch of documents per call
(:mod:`.langid_model` is the reference with the arithmetic both follow; py3langid's own
``classify`` picks the same label, its probability differs by float32 rounding). Script
shares are counted natively too, from Python's character table (:mod:`.char_table`).

Each document gets ``language`` (a py3langid label, or ``"und"`` below
``min_confidence``), ``language_confidence``, ``scripts`` (each script's share of the
letters, see :mod:`.scripts`) and ``mixed_script`` (a second writing system holds at
least ``mixed_threshold`` of the letters). ``keep`` filters by language and ``scripts``
by dominant script; ``drop_mixed`` drops mixed-script documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...errors import ConfigError
from .char_table import script_counts
from .langid_model import LangIdModel, all_labels, model_input
from .scripts import is_mixed, script_shares, shares_from_counts, writing_systems
from .step import Outcome, StepConfig, check_range, check_strings


def supported_languages() -> list[str]:
    """The labels py3langid can return."""
    return all_labels()


@lru_cache(maxsize=4)
def _model(languages: tuple[str, ...] | None) -> LangIdModel:
    model = LangIdModel(languages)
    model.columns  # noqa: B018 - unknown labels fail here, in the driver
    return model


@dataclass(frozen=True)
class LangIdConfig(StepConfig):
    """``languages`` restricts the model's candidates (None: all); ``keep`` lists the
    languages to keep (None: keep all, only annotate); ``min_confidence`` below which a
    document is ``"und"``; ``max_chars`` of each document are classified."""

    NAME = "langid"
    LIBRARY = "py3langid"
    # 2: the model's arithmetic is fixed (float64, see .langid_model), not BLAS's.
    STEP_VERSION = 2

    languages: tuple[str, ...] | None = None
    keep: tuple[str, ...] | None = None
    min_confidence: float = 0.0
    max_chars: int = 10_000
    scripts: tuple[str, ...] | None = None
    mixed_threshold: float = 0.2
    drop_mixed: bool = False

    def __post_init__(self) -> None:
        for name in ("languages", "keep", "scripts"):
            if getattr(self, name) is not None:
                check_strings(getattr(self, name), name)
        if self.languages is not None and not self.languages:
            raise ConfigError(
                "langid languages is empty: list the candidate languages, or leave it out "
                "(null) to consider every language the model knows"
            )
        check_range(self.min_confidence, "min_confidence", low=0.0, high=1.0)
        check_range(self.max_chars, "max_chars", low=1)
        check_range(self.mixed_threshold, "mixed_threshold", low=0.0, high=1.0)
        if not isinstance(self.drop_mixed, bool):
            raise ConfigError(f"drop_mixed must be true or false, got {self.drop_mixed!r}")
        if self.keep is not None:
            unknown = sorted(set(self.keep) - set(supported_languages()) - {"und"})
            if unknown:
                raise ConfigError(
                    f"langid keep: {unknown} are not py3langid labels; use ISO 639-1 codes "
                    "such as 'en', 'de', 'zh' (see supported_languages())"
                )

    def prepare(self) -> LangIdWorker:
        _model(self.languages)  # fail early on bad labels, in the driver
        return LangIdWorker(self)


class LangIdWorker:
    """Classifies documents: :meth:`batch` natively, :meth:`reference` in Python."""

    def __init__(self, config: LangIdConfig) -> None:
        self.c = config
        self._summaries: dict[tuple[tuple[str, int], ...], tuple[dict[str, float], str, bool]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_summaries": {}}  # a cache: workers build their own

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        return self.batch([text], [meta])[0]

    def batch(self, texts: list[str], metas: list[Mapping[str, Any]]) -> list[Outcome]:
        """Outcomes of many documents: one native call for the model, one for scripts."""
        c = self.c
        samples = [t[: c.max_chars] for t in texts]
        encoded = [s.encode("utf-8", "surrogatepass") for s in samples]
        inputs = [model_input(s) for s in samples]
        found = _model(c.languages).classify(inputs)
        counts = script_counts(encoded, c.max_chars)
        out = []
        for text, sample, (language, confidence), n in zip(
            texts, samples, found, counts, strict=True
        ):
            key = tuple(n.items())
            summary = self._summaries.get(key)
            if summary is None:
                if len(self._summaries) >= 65_536:
                    self._summaries.clear()
                summary = self._summaries[key] = self._summarize(shares_from_counts(n))
            out.append(self._outcome(text, sample, language, confidence, *summary))
        return out

    def reference(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        """The same outcome computed in Python (the specification of :meth:`batch`)."""
        sample = text[: self.c.max_chars]
        language, confidence = _model(self.c.languages).classify_reference(model_input(sample))
        shares = script_shares(sample)
        return self._outcome(text, sample, language, confidence, *self._summarize(shares))

    def _summarize(self, shares: dict[str, float]) -> tuple[dict[str, float], str, bool]:
        """(shares, dominant writing system, mixed?) of a document's script shares (the
        batch path reuses one summary per distinct letter count)."""
        systems = writing_systems(shares)
        mixed = is_mixed(shares, threshold=self.c.mixed_threshold)
        return shares, next(iter(systems), "NONE"), mixed

    def _outcome(
        self,
        text: str,
        sample: str,
        language: str,
        confidence: float,
        shares: dict[str, float],
        dominant: str,
        mixed: bool,
    ) -> Outcome:
        c = self.c
        confidence = round(float(confidence), 4)
        if confidence < c.min_confidence or not sample.strip():
            language = "und"
        annotations = {
            "language": language,
            "language_confidence": confidence,
            "scripts": dict(shares),
            "mixed_script": mixed,
        }
        reasons: list[str] = []
        if c.keep is not None and language not in c.keep:
            reasons.append(f"langid.language:{language}")
        if c.scripts is not None and dominant not in c.scripts:
            reasons.append(f"langid.script:{dominant}")
        if c.drop_mixed and mixed:
            reasons.append("langid.mixed_script")
        counts = {f"language:{language}": 1, f"script:{dominant}": 1}
        if mixed:
            counts["mixed_script"] = 1
        if reasons:
            return Outcome(None, tuple(reasons), annotations, counts)
        return Outcome(text, (), annotations, counts)
