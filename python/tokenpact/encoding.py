"""Structured encodings: IDs with the metadata later stages need (seed 0x02A, 0x04A).

Example::

    enc = tok.encode_structured("The cat sleeps.")
    enc.ids, enc.offsets, enc.special_tokens_mask, enc.origins
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .errors import ConfigError, UnknownTokenError

Coordinate = Literal["raw_codepoints", "raw_utf8_bytes"]
COORDINATES = ("raw_codepoints", "raw_utf8_bytes")


@dataclass(frozen=True)
class Encoding:
    """One encoded sequence; every per-token list has the same length."""

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
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
