"""Readable reference of entropy patching: one byte at a time, straight from the definition.

The fast :class:`~tokenpact.bytes.EntropyPatcher` must equal these functions (hypothesis
tests in ``tests/properties/test_bytes_properties.py``). Never on a hot path.
"""

from __future__ import annotations

import numpy as np

from .entropy import EntropyRule
from .ngram import ByteNGramModel


def reference_entropies(model: ByteNGramModel, data: bytes) -> list[float]:
    """``H_i`` = entropy of ``p(B_i | bytes before i)`` for every position ``i``."""
    return [model.entropy(data[:i]) for i in range(len(data))]


def reference_starts(model: ByteNGramModel, rule: EntropyRule, data: bytes) -> list[int]:
    """Patch starts: byte 0, then every ``i`` whose entropy (or jump) exceeds the threshold.

    Entropies, differences and the threshold are float32, the precision of the table.
    """
    threshold = np.float32(rule.threshold)
    starts: list[int] = []
    previous = None
    for i, value in enumerate(reference_entropies(model, data)):
        h = np.float32(value)
        if i == 0:
            starts.append(0)
        elif rule.kind == "global" and h > threshold:
            starts.append(i)
        elif rule.kind == "relative" and previous is not None and h - previous > threshold:
            starts.append(i)
        previous = h
    return starts
