"""Baseline tokenizers.

Each states its promise: ``CharacterTokenizer`` round-trips text whose characters were
seen when fitting (others become ``<unk>`` and vanish on decode); ``ByteTokenizer``
round-trips every string, and decodes arbitrary IDs under an explicit error policy;
``WordTokenizer`` keeps only whitespace-separated words (decode joins with one space)
and maps unseen words to ``<unk>``.
"""

from __future__ import annotations

from .simple import ByteTokenizer, CharacterTokenizer, WordTokenizer
from .vocab import SpecialTokenRegistry, WordVocab, build_word_vocab

__all__ = [
    "ByteTokenizer",
    "CharacterTokenizer",
    "SpecialTokenRegistry",
    "WordTokenizer",
    "WordVocab",
    "build_word_vocab",
]
