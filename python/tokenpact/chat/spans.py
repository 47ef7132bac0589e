"""Strings that remember which of their characters came from untrusted content.

A chat template concatenates, trims and splits message content before the result is
tokenized. To recognize control tokens only outside content, rendering must know where
every content character ends up. :class:`SpanStr` is a ``str`` whose value is exactly the
content (so ``if content``, ``content|length``, ``'x' in content`` and comparisons behave as
with a plain string) and which carries ``(start, end, owner)`` spans. The string operations
templates use (``+``, slicing, ``strip``/``trim``, ``split``, ``replace`` ...) return
``SpanStr`` values with the spans moved to where the characters went.

Operations this module does not cover return a plain ``str``: the content is then invisible
to the tracker. :mod:`tokenpact.chat.hf_template` detects that case when it matters (the
content holds a control spelling) and refuses to guess.

>>> s = track("  hi  ", owner=3)
>>> t = "<u>" + s.strip() + "</u>"
>>> t, t.spans
('<u>hi</u>', ((3, 5, 3),))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import SupportsIndex

_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

Span = tuple[int, int, int]
"""``(start, end, owner)`` in codepoints of the string that holds it; ``end`` exclusive."""


def spans_of(value: object) -> tuple[Span, ...]:
    """The spans a value carries (none for plain strings and other objects)."""
    return value._spans if type(value) is SpanStr else ()


def make(text: str, spans: Sequence[Span]) -> str:
    """``text`` with ``spans``; a plain ``str`` when there is nothing to track.

    Returning plain strings for span-free results keeps the common path (template
    literals) free of any tracking cost.
    """
    if not spans:
        return str.__str__(text) if type(text) is not str else text
    out = str.__new__(SpanStr, text)
    out._spans = tuple(spans)
    return out


def track(text: str, owner: int) -> str:
    """Mark all of ``text`` as owned by ``owner`` (empty text stays a plain ``""``)."""
    return make(text, ((0, len(text), owner),) if text else ())


def shifted(spans: Iterable[Span], offset: int) -> list[Span]:
    """``spans`` moved right by ``offset`` characters."""
    return [(a + offset, b + offset, o) for a, b, o in spans]


def clipped(spans: Iterable[Span], start: int, end: int) -> list[Span]:
    """The parts of ``spans`` inside ``[start, end)``, relative to ``start``."""
    out = []
    for a, b, o in spans:
        lo, hi = max(a, start), min(b, end)
        if lo < hi:
            out.append((lo - start, hi - start, o))
    return out


def concat(pieces: Iterable[object]) -> str:
    """``"".join(pieces)`` that keeps the spans of :class:`SpanStr` pieces.

    This replaces Jinja's ``environment.concat``: every buffer (macros, call blocks,
    ``{% set %}`` blocks, filter blocks) is joined through it.
    """
    parts = pieces if type(pieces) is list or type(pieces) is tuple else list(pieces)
    if SpanStr not in map(type, parts):  # template text only: no Python-level loop
        return "".join(parts)  # type: ignore[arg-type]
    if len(parts) == 1:
        return parts[0]  # type: ignore[return-value]  # a lone SpanStr (immutable) as is
    # The hottest join of real templates ('<|user|>' + content + '<|eot|>' and output
    # buffers): most SpanStr pieces hold one span, moved without a comprehension.
    spans: list[Span] = []
    pos = 0
    for part in parts:
        if type(part) is SpanStr:
            moved = part._spans
            if not pos:
                spans += moved
            elif len(moved) == 1:
                a, b, o = moved[0]
                spans.append((a + pos, b + pos, o))
            else:
                spans += [(a + pos, b + pos, o) for a, b, o in moved]
        pos += len(part)  # type: ignore[arg-type]
    text = "".join(parts)  # type: ignore[arg-type]
    if not spans:
        return text
    out = str.__new__(SpanStr, text)  # make(), inlined
    out._spans = tuple(spans)
    return out


def str_join(values: Iterable[object]) -> str:
    """Jinja's ``~`` operator: ``str()`` of each value, joined, spans kept."""
    return concat([str(v) for v in values])


def _char_owners(text: str, spans: Sequence[Span]) -> list[int]:
    owners = [-1] * len(text)
    for a, b, o in spans:
        owners[a:b] = [o] * (b - a)
    return owners


def _from_char_owners(text: str, owners: Sequence[int]) -> str:
    spans: list[Span] = []
    for i, o in enumerate(owners):
        if o < 0:
            continue
        if spans and spans[-1][1] == i and spans[-1][2] == o:
            spans[-1] = (spans[-1][0], i + 1, o)
        else:
            spans.append((i, i + 1, o))
    return make(text, spans)


class SpanStr(str):
    """A ``str`` carrying ownership spans; see the module docstring."""

    _spans: tuple[Span, ...]

    @property
    def spans(self) -> tuple[Span, ...]:
        """``(start, end, owner)`` triples, sorted and disjoint."""
        return self._spans

    # Jinja's output and ``~`` call ``str(value)``; returning ``self`` keeps the spans.
    def __str__(self) -> str:
        return self

    def __repr__(self) -> str:
        return str.__repr__(self)

    # ``+`` is the hottest operation in real templates ('<|user|>' + content): plain-str
    # operands take a fast path without helper calls.
    def __add__(self, other: str) -> str:
        if type(other) is str:
            out = str.__new__(SpanStr, str.__add__(self, other))
            out._spans = self._spans
            return out
        if not isinstance(other, str):
            return NotImplemented
        return make(
            str.__add__(self, other), self._spans + tuple(shifted(spans_of(other), len(self)))
        )

    def __radd__(self, other: str) -> str:
        if type(other) is str:
            out = str.__new__(SpanStr, str.__add__(other, self))
            n = len(other)
            out._spans = tuple([(a + n, b + n, o) for a, b, o in self._spans]) if n else self._spans
            return out
        if not isinstance(other, str):
            return NotImplemented
        return make(
            str.__add__(other, self),
            tuple(spans_of(other)) + tuple(shifted(self._spans, len(other))),
        )

    def __mul__(self, count: SupportsIndex) -> str:
        n = max(0, count.__index__())
        size = len(self)
        return make(
            str.__mul__(self, n), [s for k in range(n) for s in shifted(self._spans, k * size)]
        )

    __rmul__ = __mul__

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        text = str.__getitem__(self, key)
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                return make(text, clipped(self._spans, start, max(start, stop)))
            owners = _char_owners(self, self._spans)
            return _from_char_owners(text, owners[key])
        index = key.__index__()
        index = index + len(self) if index < 0 else index
        return make(text, clipped(self._spans, index, index + 1))

    def _slice(self, start: int, end: int) -> str:
        return make(str.__getitem__(self, slice(start, end)), clipped(self._spans, start, end))

    def strip(self, chars: str | None = None) -> str:
        size = len(str.strip(self, chars))
        n = len(self)
        if size == n:
            return self  # nothing to strip (the common case): spans unchanged
        start = n - len(str.lstrip(self, chars))
        spans = self._spans
        if size and len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == n:
            # One owner of every character (a message's content): it owns the rest.
            out = str.__new__(SpanStr, str.__getitem__(self, slice(start, start + size)))
            out._spans = ((0, size, spans[0][2]),)
            return out
        return self._slice(start, start + size)

    def lstrip(self, chars: str | None = None) -> str:
        return self._slice(len(self) - len(str.lstrip(self, chars)), len(self))

    def rstrip(self, chars: str | None = None) -> str:
        return self._slice(0, len(str.rstrip(self, chars)))

    def removeprefix(self, prefix: str) -> str:
        return self._slice(len(prefix), len(self)) if self.startswith(prefix) else self

    def removesuffix(self, suffix: str) -> str:
        if suffix and self.endswith(suffix):
            return self._slice(0, len(self) - len(suffix))
        return self

    def _pieces(self, parts: list[str], sep: str | None) -> list[str]:
        """Re-attach spans to the results of a split, located left to right."""
        out = []
        pos = 0
        for k, part in enumerate(parts):
            if sep is None:
                # Whitespace splits: only whitespace lies between pieces, so the first
                # occurrence at or after the cursor is the piece itself.
                pos = str.find(self, part, pos)
            elif k:
                pos += len(sep)
            out.append(self._slice(pos, pos + len(part)))
            pos += len(part)
        return out

    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:  # type: ignore[override]
        return self._pieces(str.split(self, sep, maxsplit), sep)

    def rsplit(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:  # type: ignore[override]
        return self._pieces(str.rsplit(self, sep, maxsplit), sep)

    def splitlines(self, keepends: bool = False) -> list[str]:  # type: ignore[override]
        out = []
        pos = 0
        for line in str.splitlines(self, True):
            size = len(line)
            if not keepends:
                # Each line ends with one break: "\r\n" or a single break character.
                size -= 2 if line.endswith("\r\n") else int(line[-1] in _LINE_BREAKS)
            out.append(self._slice(pos, pos + size))
            pos += len(line)
        return out

    def partition(self, sep: str) -> tuple[str, str, str]:
        at = str.find(self, sep)
        if at < 0:
            return (self, "", "")
        end = at + len(sep)
        return (self._slice(0, at), self._slice(at, end), self._slice(end, len(self)))

    def rpartition(self, sep: str) -> tuple[str, str, str]:
        at = str.rfind(self, sep)
        if at < 0:
            return ("", "", self)
        end = at + len(sep)
        return (self._slice(0, at), self._slice(at, end), self._slice(end, len(self)))

    def replace(self, old: str, new: str, count: SupportsIndex = -1) -> str:  # type: ignore[override]
        n = count.__index__()
        if not old:
            return str.replace(self, old, new, n)  # rare; the tracker loses this string
        pieces = self.split(old, n)
        out: list[str] = []
        for k, piece in enumerate(pieces):
            if k:
                out.append(new)
            out.append(piece)
        return concat(out)

    def _same_length(self, text: str) -> str:
        if len(text) == len(self):
            return make(text, self._spans)
        # Case mapping changed the length (e.g. "ß".upper()): keep the whole result
        # untrusted under its first owner rather than guess positions.
        return make(text, ((0, len(text), self._spans[0][2]),) if text else ())

    def upper(self) -> str:
        return self._same_length(str.upper(self))

    def lower(self) -> str:
        return self._same_length(str.lower(self))

    def title(self) -> str:
        return self._same_length(str.title(self))

    def capitalize(self) -> str:
        return self._same_length(str.capitalize(self))

    def casefold(self) -> str:
        return self._same_length(str.casefold(self))

    def swapcase(self) -> str:
        return self._same_length(str.swapcase(self))
