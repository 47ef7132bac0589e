"""Argument checks shared by the Tokenizer's encoding paths."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ConfigError, InvalidInputError


def _text_arg(text: object) -> str:
    if not isinstance(text, str):
        raise ConfigError(f"expected text as str, got {type(text).__name__}")
    return text


_PLAIN_STR = frozenset({str})


def _texts_arg(texts: object, method: str) -> list[str]:
    """The texts of a batch call; one ``str`` is refused (iterating it would encode
    each character as its own text)."""
    if isinstance(texts, str | bytes):
        raise InvalidInputError(
            f"{method} takes a list of texts, got one {type(texts).__name__}; "
            f"pass [text], or call encode(text) for a single text"
        )
    try:
        items = texts if type(texts) is list else list(texts)  # type: ignore[call-overload]
        # One C-speed pass over the element types; str subclasses and wrong types take
        # the checked path (a list of 35k documents: ~1 ms instead of ~25 ms).
        if set(map(type, items)) <= _PLAIN_STR:
            return items
        return [_text_arg(t) for t in items]
    except TypeError:
        raise ConfigError(
            f"{method} takes an iterable of str, got {type(texts).__name__}"
        ) from None


def _threads_arg(threads: object) -> int | None:
    """``threads``: None (all cores) or a positive int; more than the pool has is capped
    at the pool size (``tokenpact._native.max_threads()``) by the engine."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(
            f"threads must be a positive integer or None (all cores), got {threads!r}"
        )
    from . import _native

    return min(threads, int(_native.max_threads()))


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
