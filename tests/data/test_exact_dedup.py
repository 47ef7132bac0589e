"""Exact dedup: declared canonicalization, first doc_id kept, order-independent."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.data import (
    Canonicalization,
    Document,
    canonicalize_for_dedup,
    exact_dedup,
    exact_dedup_key,
)
from tokenpact.errors import ConfigError, InvalidInputError


def test_each_option_is_named_and_applied() -> None:
    text = " Cafe\u0301\u00a0 STRASSE\tstraße "
    assert canonicalize_for_dedup(text, Canonicalization()) == "Café STRASSE straße"
    assert canonicalize_for_dedup(text, Canonicalization(case="fold")) == "café strasse strasse"
    assert canonicalize_for_dedup(text, Canonicalization(case="lower")) == "café strasse straße"
    raw = Canonicalization(unicode_form="none", whitespace="keep")
    assert canonicalize_for_dedup(text, raw) == text
    assert canonicalize_for_dedup("\ufb01le", Canonicalization(unicode_form="NFKC")) == "file"
    key = exact_dedup_key("a  b")
    assert key == hashlib.sha256(b"a b").digest()
    with pytest.raises(ConfigError, match="unicode_form"):
        Canonicalization(unicode_form="NFX")


def test_first_doc_id_is_kept_whatever_the_order() -> None:
    docs = [
        Document("c", "The cat sleeps."),
        Document("a", "The  cat sleeps. "),
        Document("b", "the cat sleeps."),
        Document("d", "A train arrives."),
    ]
    for seed in range(5):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        result = exact_dedup(shuffled)
        assert [d.doc_id for d in result.kept] == ["a", "b", "d"]
        assert result.duplicate_of == {"c": "a"}
    folded = exact_dedup(docs, policy=Canonicalization(case="fold"))
    assert folded.duplicate_of == {"b": "a", "c": "a"}


def test_repeated_doc_id_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match="occurs twice"):
        exact_dedup([Document("a", "x"), Document("a", "y")])
    with pytest.raises(InvalidInputError, match="not a Document"):
        exact_dedup(["plain text"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="non-empty string"):
        Document("", "x")


@given(st.lists(st.sampled_from(["x", "x ", "X", "y", " y", "z"]), max_size=30), st.randoms())
def test_result_is_independent_of_input_order(texts: list[str], rnd: random.Random) -> None:
    docs = [Document(f"{i:03d}", t) for i, t in enumerate(texts)]
    shuffled = docs[:]
    rnd.shuffle(shuffled)
    assert exact_dedup(docs) == exact_dedup(shuffled)
    kept = exact_dedup(docs).kept
    keys = [exact_dedup_key(d.text) for d in kept]
    assert len(set(keys)) == len(keys)
