"""The vectorized unit counters agree with the readable regex references."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.audit.text_units import (
    WORD_COUNTER,
    count_graphemes,
    count_words,
    text_units,
)
from tokenpact.errors import InvalidInputError

# Characters that exercise every branch: apostrophes, CR/LF, combining marks, ZWJ emoji,
# regional indicators, Hangul jamo, no-space scripts, Devanagari, RTL, digits.
PIECES = [
    "a",
    "Z",
    "é",
    "e\u0301",
    "'",
    "\u2019",
    " ",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "中",
    "文",
    "カ",
    "ก",
    "\u0e31",
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f1e9\U0001f1ea",
    "\u1100",
    "\u1161",
    "\u11a8",
    "한",
    "क",
    "\u094d",
    "ष",
    "ש",
    "\u05b8",
    "7",
    "_",
    "-",
    ".",
    "🙂",
    "\u200d",
    "\u0300",
    "ß",
    "İ",
]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=40)


@given(st.lists(texts, max_size=8))
def test_vectorized_counts_equal_references(batch: list[str]) -> None:
    units = text_units(batch)
    assert units.words.tolist() == [count_words(t) for t in batch]
    assert units.graphemes.tolist() == [count_graphemes(t) for t in batch]
    assert units.codepoints.tolist() == [len(t) for t in batch]
    assert units.n_bytes.tolist() == [len(t.encode("utf-8")) for t in batch]


def test_records_do_not_join_across_boundaries() -> None:
    # "abc" + "def" would be one word and "\r" + "\n" one cluster if records leaked.
    units = text_units(["abc", "def", "x\r", "\ny", "", "don", "'t"])
    assert units.words.tolist() == [1, 1, 1, 1, 0, 1, 1]
    assert units.graphemes.tolist() == [3, 3, 2, 2, 0, 3, 2]


def test_declared_word_rule() -> None:
    assert WORD_COUNTER == "unicode-words-v1"
    assert count_words("Don't panic: 42 apples!") == 4
    assert count_words("東京は晴れ") == 5  # no-space script: one word per character
    assert count_words("naïve café-bar") == 3
    assert count_graphemes("e\u0301") == 1
    assert count_graphemes("\U0001f469\u200d\U0001f4bb") == 1
    assert count_graphemes("\r\n") == 1


def test_lone_surrogate_is_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="surrogate"):
        text_units(["ok", "\ud800"])
