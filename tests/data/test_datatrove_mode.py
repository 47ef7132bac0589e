"""``QualityConfig(mode="datatrove")`` against datatrove's own filter classes.

datatrove (pinned in the ``test`` extra) runs ``GopherRepetitionFilter``,
``GopherQualityFilter`` and ``C4QualityFilter`` on the same documents, in FineWeb's order;
the decision, the reason and the C4-filtered text must be the same on every document.
datatrove's English words and sentences come from spaCy, which the mode does not use:
both sides get the same whitespace word tokenizer through datatrove's ``WordTokenizer``
extension point (the filters' ``language`` argument), so what is compared is every rule
of the three filters, not spaCy's tokenization (docs/DATA.md states that difference).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.data import Document
from tokenpact.data.cleaning import QualityConfig

pytest.importorskip("datatrove")
from datatrove.data import Document as DtDocument  # noqa: E402
from datatrove.pipeline.filters import (  # noqa: E402
    C4QualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)
from datatrove.utils.word_tokenizers import WordTokenizer  # noqa: E402

_ENDS = re.compile(r"[.!?]+(?=\s|$)")


class WhitespaceWords(WordTokenizer):
    """Words are whitespace tokens; a sentence ends after a run of . ! ? before a space."""

    def word_tokenize(self, text: str) -> list[str]:
        return text.split()

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        spans, start = [], 0
        for m in _ENDS.finditer(text):
            spans.append((start, m.end()))
            start = m.end()
        if text[start:].strip():
            spans.append((start, len(text)))
        return spans

    def sent_tokenize(self, text: str) -> list[str]:
        return [text[a:b] for a, b in self.span_tokenize(text)]


TOKENIZER = WhitespaceWords()


def datatrove_outcome(
    text: str, c4: bool, language: Any = TOKENIZER
) -> tuple[str | None, tuple[str, ...]]:
    """(kept text or None, reasons) of datatrove's filters in FineWeb's order
    (``language="en"``: datatrove's own English word tokenizer, spaCy)."""
    filters: list[tuple[str, Any]] = [
        ("gopher_repetition", GopherRepetitionFilter(language=language)),
        ("gopher_quality", GopherQualityFilter(language=language)),
    ]
    if c4:
        filters.append(("c4_quality", C4QualityFilter(language=language)))
    doc = DtDocument(text=text, id="d")
    for name, f in filters:
        verdict = f.filter(doc)
        if verdict is not True:
            reason = verdict[1] if isinstance(verdict, tuple) else "filtered"
            return None, (f"datatrove.{name}.{reason}",)
    return doc.text, ()


def mismatches(texts: list[str], c4: bool, words: str = "whitespace") -> list[tuple[str, Any, Any]]:
    worker = QualityConfig.datatrove(c4=c4, words=words).prepare()
    ours = worker.batch(texts, [{} for _ in texts])
    language = "en" if words == "spacy" else TOKENIZER
    out = []
    for text, outcome in zip(texts, ours, strict=True):
        theirs = datatrove_outcome(text, c4, language)
        if (outcome.text, outcome.reasons) != theirs:
            out.append((text[:80], (outcome.text, outcome.reasons), theirs))
    return out


def agree_on(texts: list[str], c4: bool) -> set[tuple[str, ...]]:
    assert mismatches(texts, c4) == []
    # Several rules fire, so the comparison says something.
    worker = QualityConfig.datatrove(c4=c4).prepare()
    reasons = {o.reasons for o in worker.batch(texts, [{} for _ in texts])}
    assert len(reasons) > 2
    return reasons


@pytest.mark.parametrize("c4", [False, True])
def test_datatrove_mode_agrees_on_harvested_documents(c4: bool, real_docs: list[Document]) -> None:
    agree_on([d.text for d in real_docs[:200]], c4)


@pytest.mark.parametrize("c4", [False, True])
def test_datatrove_mode_agrees_on_the_mixed_corpus(
    c4: bool, bench_mixed_docs: list[Document]
) -> None:
    assert () in agree_on([d.text for d in bench_mixed_docs], c4)  # some are kept


@pytest.mark.parametrize("c4", [False, True])
def test_spacy_words_agree_with_datatrove_defaults(
    c4: bool, bench_mixed_docs: list[Document]
) -> None:
    """With spaCy words, datatrove's filters at their defaults (English, spaCy tokens)
    and the mode decide every document of the mixed corpus alike, reason and kept text
    included (on these documents the whitespace words differ in a few percent)."""
    pytest.importorskip("spacy")
    texts = [d.text for d in bench_mixed_docs]
    assert mismatches(texts, c4, words="spacy") == []
    whitespace = QualityConfig.datatrove(c4=c4).prepare().batch(texts, [{} for _ in texts])
    spacy_words = QualityConfig.datatrove(c4=c4, words="spacy").prepare()
    decided = spacy_words.batch(texts, [{} for _ in texts])
    assert [o.reasons for o in whitespace] != [o.reasons for o in decided]


def test_datatrove_words_is_checked_and_hashed() -> None:
    from tokenpact.errors import ConfigError

    with pytest.raises(ConfigError, match="datatrove_words"):
        QualityConfig(mode="datatrove", datatrove_words="nltk")
    plain = QualityConfig.datatrove()
    assert "datatrove_words" not in plain.identity()  # hashes from before the option hold
    assert QualityConfig.datatrove(words="spacy").identity()["datatrove_words"] == "spacy"


LINES = [
    "The cat sat on the mat and looked at the dog.",
    "the quick brown fox jumps over the lazy dog",
    "- a bullet point with the words to be",
    "\u2022 another bullet",
    "Wait for it...",
    "More to come\u2026",
    "# heading with a hash",
    "See the notes [1] and [edit] here.",
    "Enable JavaScript to view this page.",
    "This site uses cookies to improve the service.",
    "lorem ipsum dolor sit amet.",
    "function f() { return 1; }",
    "x" * 1001 + " long word line.",
    "",
    "   ",
    "Short.",
    '"Quoted speech ends here."',
    "It's the end of the line, isn't it?",
]
DOC = st.lists(st.sampled_from(LINES), min_size=0, max_size=40).map("\n".join)
DOC = DOC | st.lists(st.sampled_from(LINES), max_size=30).map("\n\n".join)


@settings(max_examples=120, deadline=None)
@given(st.lists(DOC, min_size=1, max_size=5), st.booleans())
def test_datatrove_mode_agrees_on_generated_documents(texts: list[str], c4: bool) -> None:
    assert mismatches(texts, c4) == []


def test_datatrove_mode_is_a_configuration_of_its_own() -> None:
    default = QualityConfig()
    assert "mode" not in default.identity()  # hashes from before the option are kept
    assert QualityConfig(mode="datatrove").config_hash != default.config_hash
    assert QualityConfig.from_json({"mode": "datatrove"}).mode == "datatrove"
    from tokenpact.errors import ConfigError

    with pytest.raises(ConfigError, match="mode"):
        QualityConfig(mode="spacy")
