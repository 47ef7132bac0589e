"""Patch-boundary rules over UTF-8 bytes: fixed stride, whitespace and BPE-shaped.

A patcher maps bytes to patch *starts*: ``0 = q_0 < q_1 < ... < q_{m-1} < n``; patch
``j`` is the half-open interval ``[q_j, q_{j+1})`` with ``q_m = n``. The
entropy patcher lives in :mod:`.entropy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from .. import Tokenizer


class Patcher(Protocol):
    """Anything with declared configuration and ``starts(data)``."""

    def to_config(self) -> dict[str, Any]: ...

    def starts(self, data: bytes) -> NDArray[np.int64]: ...


def as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    """Patchers read bytes; a ``str`` is UTF-8 encoded (lone surrogates are rejected)."""
    if isinstance(data, str):
        from .units import utf8

        return utf8(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise InvalidInputError(f"expected bytes or str, got {type(data).__name__}")


def check_starts(starts: Sequence[int] | NDArray[np.int64], n: int) -> tuple[int, ...]:
    """Validate patch starts for ``n`` bytes and return them as a tuple of ints."""
    values = tuple(int(s) for s in starts)
    if n == 0:
        if values:
            raise InvalidInputError(f"empty input has no patches, got starts {list(values)}")
        return values
    if not values or values[0] != 0:
        raise InvalidInputError("patch starts must begin with 0 (the first patch starts there)")
    for a, b in zip(values, values[1:], strict=False):
        if not a < b:
            raise InvalidInputError(f"patch starts must strictly increase; {a} then {b}")
    if values[-1] >= n:
        raise InvalidInputError(f"patch start {values[-1]} is not inside the {n} bytes")
    return values


@dataclass(frozen=True, kw_only=True)
class FixedStridePatcher:
    """A new patch every ``stride`` bytes: predictable, content-blind."""

    stride: int = 4

    def __post_init__(self) -> None:
        if not isinstance(self.stride, int) or isinstance(self.stride, bool) or self.stride < 1:
            raise ConfigError(f"stride must be a positive integer, got {self.stride!r}")

    def to_config(self) -> dict[str, Any]:
        return {"patcher": "fixed_stride", "stride": self.stride}

    def starts(self, data: bytes) -> NDArray[np.int64]:
        return np.arange(0, len(as_bytes(data)), self.stride, dtype=np.int64)


# ASCII bytes that are neither letters nor digits; bytes >= 0x80 belong to (non-ASCII)
# characters and are never space-like, so a multi-byte character is never split.
_SPACE_LIKE = np.zeros(256, dtype=bool)
for _b in range(128):
    _SPACE_LIKE[_b] = not chr(_b).isalnum()


@dataclass(frozen=True, kw_only=True)
class WhitespacePatcher:
    """A patch starts at a byte that is not space-like right after a space-like byte.

    Space-like: ASCII whitespace and punctuation. Runs of them stay at the end of the
    previous patch. The decision at byte ``i`` reads bytes ``i - 1`` and ``i`` only, so
    boundaries are prefix stable.
    """

    def to_config(self) -> dict[str, Any]:
        return {"patcher": "whitespace", "space_like": "ascii-non-alphanumeric"}

    def starts(self, data: bytes) -> NDArray[np.int64]:
        arr = np.frombuffer(as_bytes(data), dtype=np.uint8)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        space = _SPACE_LIKE[arr]
        begin = np.empty(arr.size, dtype=bool)
        begin[0] = True
        begin[1:] = space[:-1] & ~space[1:]
        return np.flatnonzero(begin).astype(np.int64)


@dataclass(frozen=True)
class BpeShapedPatcher:
    """Patches shaped like a tokenizer's pieces: one patch per token of ``encode(text)``.

    Offline BPE boundaries are **not** prefix stable (see :func:`check_prefix_stability`);
    use this for accounting and comparison, not for committing boundaries while generating.
    """

    tokenizer: Tokenizer

    def to_config(self) -> dict[str, Any]:
        return {"patcher": "bpe_shaped", "tokenizer": self.tokenizer.semantic_hash}

    def pieces(self, data: bytes) -> list[bytes]:
        data = as_bytes(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"BPE-shaped patching needs whole UTF-8 characters; byte {exc.start} starts "
                "an invalid or cut sequence. Cut inputs at character boundaries"
            ) from None
        pieces = [self.tokenizer.token_bytes(i) for i in self.tokenizer.encode(text)]
        if b"".join(pieces) != data:
            raise InvalidInputError(
                "the tokenizer's pieces do not concatenate to the input bytes (it normalizes "
                "or drops text); BPE-shaped patches need a tokenizer without a normalizer"
            )
        return pieces

    def starts(self, data: bytes) -> NDArray[np.int64]:
        lengths = np.fromiter((len(p) for p in self.pieces(data)), dtype=np.int64)
        ends = np.cumsum(lengths)
        return np.concatenate(([0], ends[:-1])).astype(np.int64) if ends.size else ends


@dataclass(frozen=True)
class ExplicitStarts:
    """Recorded starts (for example a synthetic entropy trace), replayed as a patcher
    for the one input length they were recorded for."""

    recorded: tuple[int, ...]
    length: int

    def to_config(self) -> dict[str, Any]:
        return {"patcher": "explicit", "starts": list(self.recorded), "length": self.length}

    def starts(self, data: bytes) -> NDArray[np.int64]:
        n = len(as_bytes(data))
        if n != self.length:
            raise InvalidInputError(f"starts were recorded for {self.length} bytes, got {n}")
        return np.asarray(check_starts(self.recorded, n), dtype=np.int64)
