"""Argument checks shared by the Tokenizer's encoding paths."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ConfigError, InvalidInputError


def _text_arg(text: object) -> str:
    if not isinstance(text, str):
        raise ConfigError(f"expected text as str, got {type(text).__name__}")
    return text


def _byte_ranges(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Codepoint ranges of ``text`` as UTF-8 byte ranges."""
    out = []
    for start, end in spans:
        if not 0 <= start <= end <= len(text):
            raise ConfigError(f"span ({start}, {end}) lies outside the text of length {len(text)}")
        head = len(text[:start].encode("utf-8"))
        out.append((head, head + len(text[start:end].encode("utf-8"))))
    return out


def _surrogate_error(text: str, exc: UnicodeEncodeError) -> InvalidInputError:
    return InvalidInputError(
        f"text contains a lone surrogate {text[exc.start]!r} at index {exc.start}, which is "
        "not valid Unicode; decode the source with errors='replace' or remove it"
    )
