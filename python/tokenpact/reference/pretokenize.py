"""Reference pre-tokenizer: the spans Python's ``regex`` module finds.

This is the oracle for the Rust pre-tokenizer. Spans are ``(start, end)`` in Unicode
codepoints of the input string, in match order, exactly as ``regex.finditer`` yields them
(an empty match of a user pattern is kept as an empty span).

>>> pretokenize("Hello world", "gpt4")
[(0, 5), (5, 11)]
"""

from __future__ import annotations

from functools import lru_cache

import regex

from ..errors import ConfigError
from ..patterns import resolve_pattern


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compile a built-in pattern name or a user regex source with default ``regex`` flags."""
    _, source = resolve_pattern(pattern)
    try:
        return regex.compile(source)
    except regex.error as exc:
        raise ConfigError(
            f"pattern {pattern!r} is not a valid regex ({exc}); fix the pattern"
        ) from exc


def pretokenize(text: str, pattern: str = "gpt4") -> list[tuple[int, int]]:
    """Split ``text`` into codepoint spans with ``regex.finditer``."""
    return [match.span() for match in compile_pattern(pattern).finditer(text)]


def pretokenize_pieces(text: str, pattern: str = "gpt4") -> list[str]:
    """The substrings behind :func:`pretokenize`'s spans (handy in failure messages)."""
    return [text[start:end] for start, end in pretokenize(text, pattern)]
