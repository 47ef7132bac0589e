"""py3langid's naive Bayes model with defined arithmetic: the readable reference of the
native language identifier (``_native.NativeLangId``).

py3langid (a fork of langid.py, Lui & Baldwin 2012) walks a byte DFA whose states emit
feature IDs (byte n-grams), then scores each language as ``log1p(counts) @ ptc + pc``
with BLAS in float32 and normalizes with a softmax at temperature ``sqrt(bytes)``. BLAS
sums in an order of its own, so this module fixes one: per language, the feature terms
are summed in float64 in ascending feature order, the prior added, the scores scaled by
``1 / sqrt(bytes)`` and turned into probabilities with ``exp(s - max) / sum`` (summed in
class order). The native engine does the same operations in the same order, so the two
agree bit for bit (tests/data/test_clean_engine.py); against py3langid's own
``classify`` the label is the same and the probability differs by float32 rounding.

The model file ships inside py3langid's wheel; nothing is downloaded.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from ...errors import ConfigError


def model_input(sample: str) -> bytes:
    """What py3langid classifies for the text ``sample``: lowered when all upper case,
    NFC-normalized, UTF-8 (lone surrogates passed through)."""
    text = sample.lower() if sample.isupper() else sample
    return unicodedata.normalize("NFC", text).encode("utf-8", "surrogatepass")


def _load_arrays() -> tuple[Any, ...]:
    try:
        from py3langid.langid import MODEL_DIR, MODEL_FILE
        from py3langid.modelio import load_model
    except ImportError:
        raise ConfigError(
            "the langid step needs py3langid; pip install 'tokenpact[clean]'"
        ) from None
    ptc, pc, classes, nextmove, row, output = load_model(MODEL_DIR / MODEL_FILE)
    return (
        np.frombuffer(nextmove, dtype=np.dtype(f"u{nextmove.itemsize}")).astype(np.uint32),
        np.frombuffer(row, dtype=np.dtype(f"u{row.itemsize}")).astype(np.uint32),
        np.asarray(output, dtype=np.int32),
        np.ascontiguousarray(np.asarray(ptc, dtype=np.float16)),
        np.asarray(pc, dtype=np.float32),
        tuple(str(c) for c in classes),
    )


# The native engine copies what it needs; the Python arrays are kept only for the
# reference (tests), so a worker holds the model once.
_reference_arrays = lru_cache(maxsize=1)(_load_arrays)
# One load serves both the labels and the first native engine (loading takes seconds):
# the arrays wait here until that engine has copied them, then are let go.
_unclaimed: list[tuple[Any, ...]] = []


def _engine_arrays() -> tuple[Any, ...]:
    """The model's arrays for one native engine: those the label lookup loaded when
    no engine has claimed them yet, else a fresh load."""
    try:
        return _unclaimed.pop()
    except IndexError:
        return _load_arrays()


@lru_cache(maxsize=1)
def _classes() -> tuple[str, ...]:
    arrays = _load_arrays()
    _unclaimed[:] = [arrays]
    return tuple(arrays[5])


def all_labels() -> list[str]:
    """The distinct labels of the model (script aliases such as ``srl`` share one)."""
    return list(dict.fromkeys(_classes()))


@dataclass(frozen=True)
class LangIdModel:
    """The model restricted to ``languages`` (None: all labels)."""

    languages: tuple[str, ...] | None = None

    @cached_property
    def columns(self) -> list[int]:
        classes = _classes()
        if self.languages is None:
            return list(range(len(classes)))
        unknown = sorted(set(self.languages) - set(classes))
        if unknown:
            raise ConfigError(
                f"langid languages: unknown language code(s) {unknown}; see "
                "LangIdConfig.supported()"
            )
        wanted = set(self.languages)
        return [i for i, c in enumerate(classes) if c in wanted]

    @cached_property
    def classes(self) -> list[str]:
        classes = _classes()
        return [classes[i] for i in self.columns]

    @cached_property
    def aliases(self) -> list[tuple[int, int]]:
        """(first, duplicate) positions of labels occurring twice (py3langid folds the
        duplicate's probability into the first)."""
        first: dict[str, int] = {}
        pairs = []
        for i, c in enumerate(self.classes):
            if c in first:
                pairs.append((first[c], i))
            else:
                first[c] = i
        return pairs

    @cached_property
    def native(self) -> Any:
        from ... import _native

        rows, state_row, output, ptc, pc, _ = _engine_arrays()
        return _native.NativeLangId(
            rows,
            state_row,
            output,
            ptc.view(np.uint16),
            np.ascontiguousarray(pc[self.columns]),
            self.columns,
            self.aliases,
        )

    def classify(self, inputs: list[bytes]) -> list[tuple[str, float]]:
        """(label, probability) per :func:`model_input` bytes, natively."""
        labels, probs = self.native.classify(inputs)
        classes = self.classes
        return [(classes[i], p) for i, p in zip(labels.tolist(), probs.tolist(), strict=True)]

    def classify_reference(self, data: bytes) -> tuple[str, float]:
        """The readable reference of one classification (see the module docstring)."""
        rows, state_row, output, ptc, pc, _ = _reference_arrays()
        counts: dict[int, int] = {}
        state = 0
        for byte in data:
            state = int(rows[int(state_row[state]) * 256 + byte])
            feature = int(output[state])
            if feature >= 0:
                counts[feature] = counts.get(feature, 0) + 1
        k = len(self.columns)
        scores = [0.0] * k
        if counts:
            acc = np.zeros(k, dtype=np.float64)
            for feature in sorted(counts):
                weight = math.log1p(counts[feature])
                acc += weight * ptc[feature, self.columns].astype(np.float64)
            prior = pc[self.columns].astype(np.float64)
            scores = [float(a + p) for a, p in zip(acc.tolist(), prior.tolist(), strict=True)]
        inv = 1.0 / math.sqrt(len(data) or 1)
        scores = [s * inv for s in scores]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = 0.0
        for e in exps:
            total += e
        probs = [e / total for e in exps]
        for i, j in self.aliases:
            probs[i] += probs[j]
            probs[j] = 0.0
        best = max(range(k), key=lambda i: (probs[i], -i))
        return self.classes[best], probs[best]
