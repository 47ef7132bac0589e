"""Prefix stability: may a segmenter's boundaries be committed while bytes still arrive?

A segmenter ``f`` is prefix stable on ``x`` when, for every cut ``i``, the starts of
``f(x[:i])`` equal the starts of ``f(x)`` below ``i``
(``f_p(x_{<i}) = f_p(x)_{<i}``). Offline BPE fails it: with merges ``b+c`` (rank 0) and
``a+b`` (rank 1), ``"ab"`` is ``[ab]`` but ``"abc"`` is ``[a, bc]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInputError
from .patchers import as_bytes

if TYPE_CHECKING:
    from .. import Tokenizer

# A segmenter returns patch starts (ints) or the pieces themselves (bytes).
Segmenter = Callable[[bytes], Sequence[int] | Sequence[bytes] | Any]


def _starts(output: Any, data: bytes) -> tuple[int, ...]:
    items = list(output)
    if items and all(isinstance(p, (bytes, bytearray)) for p in items):
        if b"".join(items) != data:
            raise InvalidInputError("segmenter pieces do not concatenate to its input")
        starts, offset = [], 0
        for piece in items:
            starts.append(offset)
            offset += len(piece)
        return tuple(starts)
    try:
        return tuple(int(s) for s in items)
    except (TypeError, ValueError):
        raise InvalidInputError(
            "a segmenter must return patch starts (ints) or pieces (bytes)"
        ) from None


@dataclass(frozen=True)
class PrefixViolation:
    """One cut where committing the prefix's boundaries would have been wrong."""

    cut: int
    prefix_starts: tuple[int, ...]
    full_starts_before_cut: tuple[int, ...]
    prefix: bytes

    def describe(self) -> str:
        return (
            f"after {self.cut} bytes ({self.prefix!r}) the segmenter committed starts "
            f"{list(self.prefix_starts)}, but the whole input has starts "
            f"{list(self.full_starts_before_cut)} there: later bytes moved a boundary"
        )


@dataclass(frozen=True)
class StabilityReport:
    """Result of :func:`check_prefix_stability`; ``stable`` when no cut was violated."""

    checked_cuts: int
    violations: tuple[PrefixViolation, ...] = field(default_factory=tuple)

    @property
    def stable(self) -> bool:
        return not self.violations

    def describe(self) -> str:
        if self.stable:
            return f"prefix stable at all {self.checked_cuts} cuts"
        return self.violations[0].describe()


def check_prefix_stability(
    segmenter: Segmenter,
    data: bytes | str,
    *,
    cuts: Literal["bytes", "chars"] = "bytes",
    max_violations: int = 1,
) -> StabilityReport:
    """Check ``f(x[:i])`` against ``f(x)`` below ``i`` for every cut ``i``.

    ``cuts="chars"`` only cuts between UTF-8 characters (for segmenters that read text).
    Stops after ``max_violations`` violations.
    """
    raw = as_bytes(data)
    full = _starts(segmenter(raw), raw)
    violations: list[PrefixViolation] = []
    checked = 0
    for cut in range(1, len(raw)):
        if cuts == "chars" and (raw[cut] & 0xC0) == 0x80:
            continue
        checked += 1
        prefix = raw[:cut]
        got = _starts(segmenter(prefix), prefix)
        expected = tuple(s for s in full if s < cut)
        if got != expected:
            violations.append(PrefixViolation(cut, got, expected, prefix))
            if len(violations) >= max_violations:
                break
    return StabilityReport(checked, tuple(violations))


def tokenizer_segmenter(tokenizer: Tokenizer) -> Callable[[bytes], list[bytes]]:
    """A segmenter over UTF-8 bytes from a tokenizer: the byte pieces of ``encode``."""
    from .patchers import BpeShapedPatcher

    return BpeShapedPatcher(tokenizer).pieces
