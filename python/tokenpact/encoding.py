"""Structured encodings: IDs with the metadata later stages need (seed 0x02A, 0x04A).

Example::

    enc = tok.encode_structured("The cat sleeps.")
    enc.ids, enc.offsets, enc.special_tokens_mask, enc.origins
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np

from .errors import ConfigError, UnknownTokenError

Coordinate = Literal["raw_codepoints", "raw_utf8_bytes"]
COORDINATES = ("raw_codepoints", "raw_utf8_bytes")


class Offsets(Sequence[tuple[int, int]]):
    """Per-token ``(start, end)`` offsets stored flat (``[s0, e0, s1, e1, ...]``).

    Behaves like a list of tuples (indexing, slicing, iteration, ``==`` with lists) but
    makes a tuple only when one is asked for: one tuple per token would be the most
    expensive part of a structured encoding.
    """

    __slots__ = ("_flat",)

    def __init__(self, flat: list[int]) -> None:
        self._flat = flat

    def __len__(self) -> int:
        return len(self._flat) // 2

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(index, slice):
            return list(self)[index]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("offset index out of range")
        return self._flat[2 * index], self._flat[2 * index + 1]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        it = iter(self._flat)
        return zip(it, it, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Offsets):
            return self._flat == other._flat
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __add__(self, other: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        return [*self, *other]

    def __radd__(self, other: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Encoding:
    """One encoded sequence; every per-token list has the same length."""

    ids: list[int]
    tokens: list[str]
    offsets: Sequence[tuple[int, int]]
    coordinate: Coordinate
    special_tokens_mask: list[int]
    origins: list[str]  # "content", "added" (non-special added token) or "control"
    attention_mask: list[int]
    type_ids: list[int]
    sequence_ids: list[int | None]
    original_length: int  # of the input, in the offset coordinate
    truncated: bool = False
    overflowing: list[Encoding] = field(default_factory=list)
    tokenizer_hash: str | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def validate(self, vocab_size: int) -> None:
        """Check alignment of every vector and that IDs fit ``vocab_size`` rows."""
        n = len(self.ids)
        for name in (
            "tokens",
            "offsets",
            "special_tokens_mask",
            "origins",
            "attention_mask",
            "type_ids",
            "sequence_ids",
        ):
            if len(getattr(self, name)) != n:
                raise ConfigError(f"Encoding.{name} has {len(getattr(self, name))} items, ids {n}")
        bad = [i for i in self.ids if not 0 <= i < vocab_size]
        if bad:
            raise UnknownTokenError(
                f"IDs {bad[:5]} do not fit an embedding table of {vocab_size} rows; "
                "resize the model embeddings or use the matching tokenizer"
            )
        for a, b in self.offsets:
            if not 0 <= a <= b <= self.original_length:
                raise ConfigError(f"offset ({a}, {b}) lies outside the input")


def byte_to_char_offsets(
    text: str, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Map UTF-8 byte ranges to codepoint ranges; a token holding part of a character
    covers that whole character (as Hugging Face reports byte-level offsets)."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if data.size == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1
    char_of_byte = np.append(char_of_byte, char_of_byte[-1] + 1)
    s = char_of_byte[starts.astype(np.int64)]
    last = np.maximum(ends.astype(np.int64) - 1, starts.astype(np.int64))
    e = np.where(ends > starts, char_of_byte[last] + 1, s)
    return s, e
