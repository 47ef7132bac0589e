"""Tokenizer-independent units of text: UTF-8 bytes, code points, grapheme clusters, words.

Ratios such as fertility (tokens per word) are only meaningful against a unit that no
candidate tokenizer defines, so the word counter here is declared and versioned
(:data:`WORD_COUNTER`), and it never looks at a tokenizer.

Word rule ``unicode-words-v1``: a word is a maximal run of letters, marks, digits and
connector punctuation, allowing inner apostrophes (``don't``); in scripts written without
spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, Tibetan) every character
counts as one word. Punctuation, symbols and emoji are not words. This is a crude
but stable unit: compare fertility across tokenizers on the same slice, never across
languages (use token premium on parallel text for that).

Grapheme clusters are extended grapheme clusters (``regex``'s ``\\X``, UAX #29).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import regex

from ..errors import InvalidInputError

WORD_COUNTER = "unicode-words-v1"

_NO_SPACE = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}"
_WORD_CHAR = rf"[[\p{{L}}\p{{M}}\p{{N}}\p{{Pc}}]--[{_NO_SPACE}]]"
_APOSTROPHES = "'\u2019"
WORD_PATTERN = regex.compile(
    rf"(?V1)[{_NO_SPACE}]|{_WORD_CHAR}+(?:[{_APOSTROPHES}]{_WORD_CHAR}+)*",
)
_GRAPHEME = regex.compile(r"\X")
# Code points that can join the cluster before them (or, Prepend, the one after):
# wherever none occurs, clusters are code points except that CR LF is one cluster.
_JOINERS = (
    r"(?V1)[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=SpacingMark}"
    r"\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=Prepend}"
    r"\p{Grapheme_Cluster_Break=Regional_Indicator}\p{Grapheme_Cluster_Break=L}"
    r"\p{Grapheme_Cluster_Break=V}\p{Grapheme_Cluster_Break=T}"
    r"\p{Grapheme_Cluster_Break=LV}\p{Grapheme_Cluster_Break=LVT}"
    r"]"
)

# Classes of the code-point table used by the vectorized counters.
_OTHER, _WORD, _NO_SPACE_CHAR, _APOSTROPHE, _JOINER_BIT = 0, 1, 2, 3, 4


@functools.cache
def _class_table() -> np.ndarray:
    """uint8 class of every code point (built once from ``regex``'s Unicode tables)."""
    table = np.zeros(0x110000, dtype=np.uint8)
    # Surrogates cannot be in a str that encodes to UTF-8; map them to spaces here.
    allchars = "".join(chr(c) if not 0xD800 <= c < 0xE000 else " " for c in range(0x110000))
    for pattern, value in (
        (rf"(?V1){_WORD_CHAR}+", _WORD),
        (rf"[{_NO_SPACE}]+", _NO_SPACE_CHAR),
        (rf"[{_APOSTROPHES}]+", _APOSTROPHE),
    ):
        for m in regex.finditer(pattern, allchars):
            table[m.start() : m.end()] = value
    joiners = np.zeros(0x110000, dtype=bool)
    for m in regex.finditer(_JOINERS + "+", allchars):
        joiners[m.start() : m.end()] = True
    table[joiners] |= 1 << _JOINER_BIT
    return table


def count_words(text: str) -> int:
    """Number of words under :data:`WORD_COUNTER` (the readable reference).

    >>> count_words("Don't panic: 42 件")
    4
    """
    return len(WORD_PATTERN.findall(text))


def count_graphemes(text: str) -> int:
    """Number of extended grapheme clusters (UAX #29; the readable reference).

    >>> count_graphemes("e\\u0301\\U0001F469\\u200D\\U0001F4BB\\r\\n")
    3
    """
    return len(_GRAPHEME.findall(text))


@dataclass(frozen=True)
class TextUnits:
    """Per-record unit counts of a list of texts (int64 arrays of equal length)."""

    n_bytes: np.ndarray
    codepoints: np.ndarray
    graphemes: np.ndarray
    words: np.ndarray

    def __len__(self) -> int:
        return int(self.n_bytes.size)


def text_units(texts: Sequence[str]) -> TextUnits:
    """Count bytes, code points, grapheme clusters and words of every text (vectorized).

    All texts become one UTF-32 code-point array; a lookup table classifies every code
    point, word starts are found with shifted boolean masks and summed per record. Only
    records holding a code point that can join a grapheme cluster (combining marks,
    ZWJ, Hangul jamo, regional indicators, ...) go through the ``\\X`` regex.
    Agrees with :func:`count_words` and :func:`count_graphemes` (hypothesis-tested).
    """
    n = len(texts)
    codepoints = np.fromiter((len(t) for t in texts), dtype=np.int64, count=n)
    try:
        n_bytes = np.fromiter((len(t.encode("utf-8")) for t in texts), dtype=np.int64, count=n)
    except UnicodeEncodeError:
        raise InvalidInputError(
            "a text contains a lone surrogate; decode your input with errors='replace' "
            "before auditing"
        ) from None
    if n == 0 or int(codepoints.sum()) == 0:
        zeros = np.zeros(n, dtype=np.int64)
        return TextUnits(n_bytes, codepoints, zeros, zeros.copy())
    joined = "".join(texts)
    cps = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    classes = _class_table()[cps]
    kind = classes & 0b1111
    starts = np.zeros(n, dtype=np.int64)
    starts[1:] = np.cumsum(codepoints)[:-1]
    nonempty = codepoints > 0
    first = np.zeros(cps.size, dtype=bool)
    first[starts[nonempty]] = True
    last = np.zeros(cps.size, dtype=bool)
    last[(starts + codepoints - 1)[nonempty]] = True
    word = kind == _WORD
    # An apostrophe between two word characters of one record joins them (don't).
    apostrophe = (kind == _APOSTROPHE) & ~first & ~last
    inner = np.zeros(cps.size, dtype=bool)
    inner[1:-1] = apostrophe[1:-1] & word[:-2] & word[2:]
    word |= inner
    prev_word = np.zeros(cps.size, dtype=bool)
    prev_word[1:] = word[:-1]
    prev_word[first] = False
    # Records are contiguous, so a per-position flag sums per record with reduceat.
    word_starts = (word & ~prev_word) | (kind == _NO_SPACE_CHAR)
    words = _per_record(word_starts, starts, nonempty, n)
    crlf = np.zeros(cps.size, dtype=bool)
    crlf[1:] = (cps[1:] == 0x0A) & (cps[:-1] == 0x0D)
    crlf[first] = False
    graphemes = codepoints - _per_record(crlf, starts, nonempty, n)
    joiner_counts = _per_record(classes >= (1 << _JOINER_BIT), starts, nonempty, n)
    for i in np.flatnonzero(joiner_counts):
        graphemes[i] = count_graphemes(texts[int(i)])
    return TextUnits(n_bytes, codepoints, graphemes, words)


def _per_record(flags: np.ndarray, starts: np.ndarray, nonempty: np.ndarray, n: int) -> np.ndarray:
    # Flags are sparse next to the code points: locate the set ones and bin them by
    # record instead of widening the whole mask to int64.
    hits = np.flatnonzero(flags)
    record = np.searchsorted(starts, hits, side="right") - 1
    return np.bincount(record, minlength=n).astype(np.int64)
