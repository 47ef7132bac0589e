"""Counting one text in every coordinate a byte or character model may use.

A sequence length means nothing until it names its unit: ``"A naïve cat.\\n"`` is 14
UTF-8 bytes but 13 code points (``ï`` takes two bytes) and 13 grapheme clusters.
:class:`TextUnits` holds all three and the maps between byte and code-point offsets,
so position accounting never conflates them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import regex
from numpy.typing import NDArray

from ..errors import InvalidInputError

_GRAPHEME = regex.compile(r"\X")


def utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text``; a lone surrogate is a typed error, not a builtin one."""
    if not isinstance(text, str):
        raise InvalidInputError(f"expected str, got {type(text).__name__}; decode bytes first")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"text has a lone surrogate at code point {exc.start}; it has no UTF-8 bytes. "
            "Repair the text (for example encode('utf-8', 'replace')) before counting it"
        ) from None


@dataclass(frozen=True)
class TextUnits:
    """One text in bytes, code points and grapheme clusters.

    >>> units = TextUnits.of("A naïve cat.\\n")
    >>> units.n_bytes, units.n_code_points, units.n_graphemes
    (14, 13, 13)
    """

    text: str
    data: bytes

    @classmethod
    def of(cls, text: str) -> TextUnits:
        return cls(text, utf8(text))

    @property
    def n_bytes(self) -> int:
        return len(self.data)

    @property
    def n_code_points(self) -> int:
        return len(self.text)

    @cached_property
    def graphemes(self) -> tuple[str, ...]:
        """Extended grapheme clusters (Unicode UAX #29, as the ``regex`` module's ``\\X``)."""
        return tuple(_GRAPHEME.findall(self.text))

    @property
    def n_graphemes(self) -> int:
        return len(self.graphemes)

    @cached_property
    def code_point_byte_offsets(self) -> NDArray[np.int64]:
        """``[n_code_points + 1]``: byte offset where each code point starts, then ``n_bytes``."""
        widths = np.fromiter(
            (len(ch.encode("utf-8", "surrogatepass")) for ch in self.text),
            dtype=np.int64,
            count=len(self.text),
        )
        return np.concatenate(([0], np.cumsum(widths))).astype(np.int64)

    def byte_to_code_point(self, offset: int) -> int:
        """The code point that contains byte ``offset`` (``n_code_points`` at the end)."""
        if not 0 <= offset <= self.n_bytes:
            raise InvalidInputError(f"byte offset {offset} is outside 0..{self.n_bytes}")
        return int(np.searchsorted(self.code_point_byte_offsets, offset, side="right") - 1)

    def code_point_to_byte(self, index: int) -> int:
        """Byte offset where code point ``index`` starts."""
        if not 0 <= index <= self.n_code_points:
            raise InvalidInputError(f"code point index {index} is outside 0..{self.n_code_points}")
        return int(self.code_point_byte_offsets[index])

    def is_char_boundary(self, offset: int) -> bool:
        """Whether byte ``offset`` falls between two code points (cutting there keeps UTF-8)."""
        if offset in (0, self.n_bytes):
            return True
        return 0 < offset < self.n_bytes and (self.data[offset] & 0xC0) != 0x80

    def summary(self) -> dict[str, int]:
        return {
            "bytes": self.n_bytes,
            "code_points": self.n_code_points,
            "graphemes": self.n_graphemes,
        }
