"""Pure-Python reference oracles: the executable spec the Rust engine is tested against.

Short and obviously correct rather than fast; tests use them, and the core derives a
ranked-merge model's vocabulary with :func:`vocab_from_merges` (one rule, the spec's).
"""

from __future__ import annotations

from .bpe import (
    BASE_SIZE,
    TIE_BREAKS,
    RankTable,
    ReferenceTraining,
    count_pretokens,
    decode_bytes_reference,
    encode_reference,
    encode_text_reference,
    iter_encode_states,
    merges_to_rank,
    tiktoken_merge_rank,
    train_bpe_reference,
    vocab_from_merges,
)
from .hf_bpe import HfBpeOptions, hf_bpe_reference
from .hf_unigram import hf_unigram_reference
from .pretokenize import compile_pattern, pretokenize, pretokenize_pieces
from .wordpiece import wordpiece_reference

__all__ = [
    "HfBpeOptions",
    "hf_bpe_reference",
    "wordpiece_reference",
    "hf_unigram_reference",
    "BASE_SIZE",
    "TIE_BREAKS",
    "RankTable",
    "ReferenceTraining",
    "compile_pattern",
    "count_pretokens",
    "decode_bytes_reference",
    "encode_reference",
    "encode_text_reference",
    "iter_encode_states",
    "merges_to_rank",
    "pretokenize",
    "pretokenize_pieces",
    "tiktoken_merge_rank",
    "train_bpe_reference",
    "vocab_from_merges",
]
