"""Shared input handling for the character-based trainers: validation and word counts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _native
from ..errors import ConfigError, TrainingError
from ..special import SpecialToken, normalize_special_tokens
from .bpe import _check_int, _feed


def check_int(name: str, value: object, minimum: int) -> int:
    return _check_int(name, value, minimum)


def check_fraction(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be in [{low}, {high}], got {value}")
    return float(value)


def specials_with_unk(tokens: Iterable[SpecialToken | str]) -> tuple[SpecialToken, ...]:
    specials = normalize_special_tokens(tokens)
    if not any(t.role == "unk" for t in specials):
        raise ConfigError(
            "these trainers need an unknown token: include a SpecialToken with role 'unk' "
            "in special_tokens"
        )
    return specials


def count_words(
    texts: Iterable[str],
    *,
    split: str,
    lowercase: bool,
    threads: int | None,
    normalizer: tuple[bytes, bool, bool, bool, bool] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Feed ``texts`` (iterable of str or ``tp.TextFiles``) into a native word counter.

    ``normalizer`` (charsmap, add_dummy_prefix, remove_extra_whitespaces,
    escape_whitespaces, treat_whitespace_as_suffix) runs SentencePiece's normalizer on
    every text first (use with ``split="normalized"``).
    """
    if threads is not None:
        check_int("threads", threads, 1)
    counter = _native.WordCounter(split, lowercase, threads, normalizer)
    _feed(counter, texts)
    documents, nbytes, distinct = counter.stats()
    if nbytes == 0:
        raise TrainingError(
            f"the training corpus is empty ({documents} documents, 0 bytes); "
            "pass at least one non-empty text"
        )
    return counter, {"documents": documents, "bytes": nbytes, "distinct_words": distinct}


def special_config(specials: Iterable[SpecialToken]) -> list[dict[str, str]]:
    return [{"content": t.content, "role": t.role} for t in specials]
