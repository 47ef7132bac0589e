"""The built-in scanners' final prefix: pre-tokens reported final are pre-tokens of every
continuation, and encoding the prefix alone splits it the same way."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact import _native

# Characters that exercise every alternative: letters of several scripts and cases,
# digits, contractions, punctuation, spaces, tabs, CR/LF, combining marks.
PIECES = st.sampled_from(
    [
        "a",
        "Z",
        "é",
        "ß",
        "日",
        "\u0301",
        "1",
        "23",
        "'s",
        "'LL",
        "'",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        ".",
        "!?",
        "€",
        "😀",
        "x y",
        "\u00a0",
        "ǅ",
        "ſ",
    ]
)
TEXT = st.lists(PIECES, max_size=30).map("".join)


@settings(max_examples=400)
@given(
    name=st.sampled_from(["gpt2", "gpt4", "o200k", "llama3"]),
    text=TEXT,
    more=st.lists(TEXT, min_size=1, max_size=3),
)
def test_final_prefix_is_stable(name: str, text: str, more: list[str]) -> None:
    cut = _native.final_pretoken_prefix(text, name)
    assert cut is not None and 0 <= cut <= len(text)
    alone = _native.pretokenize(text[:cut], "", name)
    assert (alone[-1][1] if alone else 0) == cut
    for tail in more:
        whole = _native.pretokenize(text + tail, "", name)
        assert whole[: len(alone)] == alone


def test_other_patterns_have_no_final_prefix() -> None:
    assert _native.final_pretoken_prefix("abc def", "my-regex") is None
