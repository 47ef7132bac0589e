"""Trainers. Each trainer validates its config in Python and runs in the Rust engine."""

from .bpe import train_bpe, train_bpe_from_counts
from .char_bpe import train_char_bpe
from .counts import PretokenCounts, count_pretokens
from .trained import CharBpeTokenizer, UnigramTokenizer
from .unigram import train_unigram
from .wordpiece import train_wordpiece

__all__ = [
    "PretokenCounts",
    "count_pretokens",
    "train_bpe_from_counts",
    "CharBpeTokenizer",
    "UnigramTokenizer",
    "train_bpe",
    "train_char_bpe",
    "train_unigram",
    "train_wordpiece",
]
