"""Nested vocabulary sweep on real text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.audit import cost
from tokenpact.audit.corpus import AuditCorpus
from tokenpact.audit.selection import ModelShape
from tokenpact.audit.splits import assign_splits
from tokenpact.audit.sweep import check_nested, vocabulary_sweep
from tokenpact.errors import ConfigError, ContractError

SHAPE = ModelShape(d_model=256, tied=False, bias=False, dtype="bf16")


@pytest.fixture(scope="module")
def split(docs_corpus: AuditCorpus) -> tuple[list[str], list[str]]:
    roles = assign_splits(docs_corpus.fields["source"], fractions=(0.7, 0.3, 0.0))
    fit = [t for t, r in zip(docs_corpus.texts, roles, strict=True) if r == "fit"]
    val = [t for t, r in zip(docs_corpus.texts, roles, strict=True) if r == "validation"]
    return fit, val


def test_sweep_is_nested_and_monotone_in_cost(split: tuple[list[str], list[str]]) -> None:
    fit, val = split
    points, toks = vocabulary_sweep(fit, val, [600, 300, 1000, 450], shape=SHAPE)
    assert [p.vocab_size for p in points] == [300, 450, 600, 1000]
    for small, large in zip(toks, toks[1:], strict=False):
        assert large.merges[: len(small.merges)] == small.merges
        assert large.vocab()[: small.vocab_size] == small.vocab()
    # Parameters grow with V; on text like the fit split, more merges shorten it.
    assert [p.vocab_params for p in points] == [
        cost(p.vocab_size, 256, tied=False).vocab_params for p in points
    ]
    assert points[-1].validation_tokens < points[0].validation_tokens
    for p, tok in zip(points, toks, strict=True):
        assert p.validation_tokens == sum(len(tok.encode(t)) for t in val)
        assert p.bytes_per_token == pytest.approx(p.validation_bytes / p.validation_tokens)


def test_non_nested_candidates_are_refused(tp: Any) -> None:
    a = tp.train_bpe(["aaaa bbbb"] * 5, vocab_size=258, special_tokens=())
    b = tp.train_bpe(["bbbb cccc"] * 5, vocab_size=260, special_tokens=())
    with pytest.raises(ContractError, match="does not extend"):
        check_nested([a, b])


def test_bad_sizes_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        vocabulary_sweep(["a"], ["a"], [100], shape=SHAPE)
    with pytest.raises(ConfigError):
        vocabulary_sweep([], ["a"], [300], shape=SHAPE)


@settings(max_examples=15)
@given(
    st.lists(st.text(alphabet="abcde fgh\n", min_size=1, max_size=40), min_size=1, max_size=8),
    st.lists(st.integers(256, 300), min_size=2, max_size=4),
)
def test_bpe_training_is_prefix_stable_so_sweeps_nest(texts: list[str], sizes: list[int]) -> None:
    points, toks = vocabulary_sweep(texts, texts, sizes, shape=SHAPE, min_frequency=1)
    check_nested(toks)  # raises ContractError if a larger size rewrote an earlier merge
    lengths = [p.validation_tokens for p in points]
    # Extra merges rank after all earlier ones: they only act on the smaller vocabulary's
    # final segmentation, so a nested larger vocabulary never lengthens any text.
    assert lengths == sorted(lengths, reverse=True)
