"""tokenpact: tokenizers as versioned contracts.

import tokenpact as tp
tok = tp.train_bpe(texts, vocab_size=32_000)
ids = tok.encode("The cat sleeps.")
"""

from __future__ import annotations

from . import baselines, batch, chat, components, contract, errors, stochastic
from ._native import pretokenize as _pretokenize
from .contract import golden, reconcile, validate_special_ids
from .corpus import TextFiles
from .encoding import Encoding
from .errors import (
    ArtifactError,
    BatchError,
    ConfigError,
    ContractError,
    DecodeError,
    InvalidInputError,
    SpecialTokenError,
    TokenpactError,
    TrainingError,
    UnknownTokenError,
)
from .patterns import PATTERNS
from .special import DEFAULT_SPECIAL_TOKENS, AddedTokenFlags, SpecialToken
from .stochastic import SampleKey, bpe_dropout
from .tokenizer import Tokenizer
from .train import train_bpe, train_char_bpe, train_unigram, train_wordpiece
from .truncation import Padding, Truncation

__version__ = "0.1.0"


def pretokenize(text: str, pattern: str = "gpt4") -> list[tuple[int, int]]:
    """Trace pre-tokenization: codepoint spans ``(start, end)`` of each pre-token.

    >>> pretokenize("Hello world")
    [(0, 5), (5, 11)]
    """
    from .patterns import resolve_pattern

    name, source = resolve_pattern(pattern)
    return _pretokenize(text, source, name)


__all__ = [
    "ArtifactError",
    "BatchError",
    "ConfigError",
    "ContractError",
    "DEFAULT_SPECIAL_TOKENS",
    "DecodeError",
    "Encoding",
    "InvalidInputError",
    "PATTERNS",
    "Padding",
    "SampleKey",
    "AddedTokenFlags",
    "SpecialToken",
    "SpecialTokenError",
    "TextFiles",
    "TokenpactError",
    "Tokenizer",
    "TrainingError",
    "Truncation",
    "UnknownTokenError",
    "baselines",
    "components",
    "batch",
    "chat",
    "bpe_dropout",
    "contract",
    "golden",
    "reconcile",
    "validate_special_ids",
    "errors",
    "pretokenize",
    "stochastic",
    "train_bpe",
    "train_char_bpe",
    "train_unigram",
    "train_wordpiece",
]
