"""The engine's pre-tokenizer gives exactly the spans of Python's ``regex`` module.

The reference (``tokenpact.reference.pretokenize``) runs ``regex.finditer`` on the pattern
source from ``tokenpact.patterns``; the engine must agree span for span on fuzzed edge
cases, arbitrary Unicode and real text (stdlib sources, gettext catalogs).
"""

from __future__ import annotations

import unicodedata
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.patterns import PATTERNS
from tokenpact.reference import pretokenize as reference_pretokenize

BUILTINS = ("gpt2", "gpt4", "o200k", "llama3")

USER_PATTERNS = (
    r"\w+|[^\w\s]+|\s+",
    # GPT-2's whitespace rule: a lookahead keeps the last space for the next word.
    r"\S+|\s+(?!\S)|\s+",
    # Possessive quantifiers and an end-of-text anchor, as in cl100k.
    r"\p{L}++|\p{N}{1,3}+|[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s",
    # Case-insensitive alternatives (simple case folding: 'ſ' matches s, 'K' matches k).
    r"(?i:'s|'t|sk)|\p{L}+|\P{L}",
)

# Fragments chosen to sit on the boundaries the patterns care about.
EDGE_FRAGMENTS = (
    # whitespace, including the non-ASCII kinds \s matches and a few it does not
    *(" ", "  ", "   ", "\t", "\r", "\n", "\r\n", "\n\n", "\x0b", "\x0c", "\x85"),
    *("\u00a0", "\u1680", "\u2000", "\u2028", "\u2029", "\u3000", "\u200b", "\ufeff"),
    # contractions in both cases, and case-folding look-alikes
    *("'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M"),
    *("'ll", "'LL", "'Ll", "'d", "'D", "'", "\u2019s", "'\u017f", "\u017f", "\u212a", "k", "s"),
    # digits: ASCII runs, Arabic-Indic, superscript, Roman numeral, circled, math bold
    *("0", "12", "123", "4567", "\u0663", "\u00b2", "\u216b", "\u2460", "\U0001d7d8"),
    # letters of every category: Lu Ll Lt Lm Lo, plus combining marks
    *("A", "a", "Hello", "WORLD", "camelCase", "\u01c5", "\u02b0", "\u4e2d", "\u3042"),
    *("\u0301", "e\u0301", "\u00e9", "\u0915\u093f", "\u03a9\u03c9"),
    # punctuation, slashes, symbols
    *("!", "?", ".", ",", "...", "/", "//", "-", "_", "@", "#", "$", "(", ")", "{", "}"),
    # emoji with ZWJ, skin tone and flags; RTL scripts and direction marks
    *("\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f44d\U0001f3fd", "\U0001f600"),
    *("\U0001f1fa\U0001f1f8", "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd"),
    *("\u200f", "\u200e", "\x00", "\x7f"),
    # letters from recent Unicode versions (Garay 16.0, CJK Ext. J 17.0): table-version skew
    *("\U00010d50", "\U000323b0"),
)

edge_text = st.lists(
    st.sampled_from(EDGE_FRAGMENTS) | st.characters(exclude_categories=("Cs",)), max_size=40
).map("".join)

# Known, documented divergence (docs/ARCHITECTURE.md, "Pre-tokenization is exact"): a user
# regex runs on fancy-regex, whose Unicode tables (Rust's regex-syntax) predate the newest
# characters that Python's `regex` knows. The built-in patterns use tables generated from
# `regex` itself and have no such gap. User-pattern tests therefore keep to characters
# assigned in this interpreter's `unicodedata`, which is older than both.


def _without_newest(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) != "Cn")


user_edge_text = edge_text.map(_without_newest)


def _describe_mismatch(
    text: str, got: list[tuple[int, int]], want: list[tuple[int, int]], where: str = ""
) -> str:
    """Name the first differing span with the text around it."""
    got = [tuple(span) for span in got]
    index = next(
        (i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w),
        min(len(got), len(want)),
    )
    start = min((spans[index][0] for spans in (got, want) if index < len(spans)), default=0)
    window = text[max(0, start - 40) : start + 40]
    return (
        f"first mismatch{where} at span #{index}: engine "
        f"{got[index] if index < len(got) else 'nothing'} vs regex "
        f"{want[index] if index < len(want) else 'nothing'}\n"
        f"engine pieces: {[text[a:b] for a, b in got[index : index + 3]]!r}\n"
        f"regex pieces:  {[text[a:b] for a, b in want[index : index + 3]]!r}\n"
        f"context: {window!r}"
    )


def _assert_same_spans(tp: ModuleType, text: str, pattern: str, where: str = "") -> None:
    want = reference_pretokenize(text, pattern)
    got = tp.pretokenize(text, pattern=pattern)
    if got != want:
        raise AssertionError(
            f"pattern {pattern!r} on {text[:200]!r}\n{_describe_mismatch(text, got, want, where)}"
        )


# ---- fuzzed text ---------------------------------------------------------------------


@pytest.mark.parametrize("pattern", BUILTINS)
@given(text=edge_text)
def test_builtin_patterns_match_regex_on_edge_cases(tp: ModuleType, pattern: str, text: str):
    _assert_same_spans(tp, text, pattern)


@pytest.mark.parametrize("pattern", BUILTINS)
@given(text=st.text())
def test_builtin_patterns_match_regex_on_any_text(tp: ModuleType, pattern: str, text: str):
    _assert_same_spans(tp, text, pattern)


@pytest.mark.parametrize("pattern", USER_PATTERNS)
@given(text=user_edge_text)
def test_user_patterns_match_regex(tp: ModuleType, pattern: str, text: str):
    _assert_same_spans(tp, text, pattern)


def test_user_pattern_unicode_version_divergence_is_the_documented_one(tp: ModuleType):
    """U+323B0 (CJK Ext. J, Unicode 17) is a letter to `regex` but not to fancy-regex."""
    text = "ab\U000323b0cd"
    assert reference_pretokenize(text, r"\p{L}+|\P{L}") == [(0, 5)]
    assert tp.pretokenize(text, pattern=r"\p{L}+|\P{L}") == [(0, 2), (2, 3), (3, 5)]
    # The built-in scanners use tables generated from `regex`: no divergence there.
    assert tp.pretokenize(text, pattern="llama3") == reference_pretokenize(text, "llama3")


@given(text=edge_text)
def test_default_pattern_alias_and_source_are_gpt4(tp: ModuleType, text: str):
    want = reference_pretokenize(text, "gpt4")
    assert tp.pretokenize(text) == want
    assert tp.pretokenize(text, pattern="cl100k") == want
    # Passing the source string itself must select the same behaviour as the name.
    assert tp.pretokenize(text, pattern=PATTERNS["gpt4"]) == want


# ---- fixed inputs that have broken real pre-tokenizers ----------------------------------

HAND_PICKED = (
    "",
    " ",
    "   leading and trailing   ",
    "a  b   c\t\td",
    "line one\r\nline two\n\n\nend\n",
    "tail spaces then newline   \n",
    "    def f(x):\n        return x  # comment\n",
    "He's, they're, I've, I'm, we'll, you'd; HE'S THEY'RE I'LL",
    "don\u2019t \u2019s 'ſ 'K",
    "1234567 12,345.678 \u0663\u0664\u0665\u0666 x\u00b2 \u216b \u2460\u2461",
    "e\u0301cole \u00e9cole \u01c5ungla \u02b0 \u4e2d\u6587\u3042\u3044",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 family \U0001f44d\U0001f3fd!",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd 123 abc",
    "path/to/file.py // http://example.com/a/b?c=d",
    "x\u00a0y\u2028z\u3000w\x85v\x0bu\x0ct",
    "new letters \U00010d50\U00010d51 \U000323b0\U000323b1 end",
    "!!!???...\n\n\r\n***",
    "a" * 5000,
    " " * 300 + "x",
    "^" * 3000,
)


@pytest.mark.parametrize("pattern", BUILTINS + USER_PATTERNS)
def test_hand_picked_inputs(tp: ModuleType, pattern: str):
    for text in HAND_PICKED:
        if pattern in USER_PATTERNS:
            text = _without_newest(text)
        _assert_same_spans(tp, text, pattern)


# ---- real text --------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", BUILTINS + USER_PATTERNS[:2])
def test_stdlib_sources(tp: ModuleType, pattern: str, stdlib_sources: list[tuple[str, str]]):
    for name, text in stdlib_sources:
        _assert_same_spans(tp, text, pattern, where=f" in stdlib {name}")


@pytest.mark.parametrize("pattern", BUILTINS + USER_PATTERNS[:2])
def test_gettext_catalogs(tp: ModuleType, pattern: str, gettext_catalogs: list[tuple[str, str]]):
    for name, text in gettext_catalogs:
        _assert_same_spans(tp, text, pattern, where=f" in {name}")


# ---- the oracle itself ------------------------------------------------------------------


def test_reference_spans_tile_the_text_for_builtins():
    """Built-in patterns leave no gap: spans are contiguous and cover the whole text."""
    for pattern in BUILTINS:
        for text in HAND_PICKED:
            spans = reference_pretokenize(text, pattern)
            if not text:
                assert spans == []
                continue
            assert [s for s, _ in spans] == [0, *(e for _, e in spans[:-1])]
            assert (spans[-1][1] if spans else 0) == len(text)
            assert all(s < e for s, e in spans)


def test_reference_known_splits():
    assert reference_pretokenize("Hello world", "gpt4") == [(0, 5), (5, 11)]
    # cl100k keeps the final space run whole at the end of text (\s++$).
    assert reference_pretokenize("a   ", "gpt4") == [(0, 1), (1, 4)]
    # ... while gpt2's lookahead leaves one space to prefix the next word.
    assert reference_pretokenize("a   b", "gpt2") == [(0, 1), (1, 3), (3, 5)]
    # cl100k groups digits in threes; gpt2 does not.
    assert reference_pretokenize("1234567", "gpt4") == [(0, 3), (3, 6), (6, 7)]
    assert reference_pretokenize("1234567", "gpt2") == [(0, 7)]
    # o200k splits a camelCase word at the case change.
    assert reference_pretokenize("camelCase", "o200k") == [(0, 5), (5, 9)]
