"""Counts from any split of the corpus train the merges of the whole corpus."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.data import Document, train_bpe
from tokenpact.errors import ConfigError, TrainingError
from tokenpact.train import count_pretokens, train_bpe_from_counts


@settings(max_examples=25)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.sampled_from(["gpt4", "gpt2"]))
def test_any_partition_gives_the_same_tokenizer(cuts: list[int], pattern: str) -> None:
    texts = ["low lower lowest", "newer newest", "wide wider widest", "the cat sleeps"] * 3
    parts: dict[int, list[str]] = {}
    for text, part in zip(texts, cuts * len(texts), strict=False):
        parts.setdefault(part, []).append(text)
    counts = [count_pretokens(p, pattern=pattern) for p in parts.values()]
    whole = tp.train_bpe(texts, vocab_size=290, pattern=pattern, special_tokens=())
    split = train_bpe_from_counts(counts, vocab_size=290, special_tokens=())
    assert split.merges == whole.merges
    assert split.training == whole.training
    summed = counts[0]
    for c in counts[1:]:
        summed = c.merge(summed)
    assert summed == count_pretokens(texts, pattern=pattern)


def test_local_engine_front(real_docs: list[Document]) -> None:
    local = train_bpe(real_docs[:100], vocab_size=400, special_tokens=())
    assert (
        local.merges
        == tp.train_bpe([d.text for d in real_docs[:100]], vocab_size=400, special_tokens=()).merges
    )


def test_errors() -> None:
    with pytest.raises(TrainingError, match="no pre-token counts"):
        train_bpe_from_counts([], vocab_size=300)
    with pytest.raises(ConfigError, match="different pre-tokenizer patterns"):
        train_bpe_from_counts(
            [count_pretokens(["a b"]), count_pretokens(["a b"], pattern="gpt2")], vocab_size=300
        )
    with pytest.raises(ConfigError, match="engine"):
        train_bpe(["x"], vocab_size=300, engine="spark")
