"""Tokenizer audit: metrics per slice, token premium, static vocabulary audit, the
vocabulary-size cost model, nested sweeps and the candidate selection protocol."""

from __future__ import annotations

from .cost import (
    DTYPE_BYTES,
    OPTIMIZER_SLOTS,
    SequenceCost,
    VocabCost,
    bits_per_byte,
    bits_per_byte_to_loss,
    cost,
    sequence_cost,
)

__all__ = [
    "DTYPE_BYTES",
    "OPTIMIZER_SLOTS",
    "SequenceCost",
    "VocabCost",
    "bits_per_byte",
    "bits_per_byte_to_loss",
    "cost",
    "sequence_cost",
]
