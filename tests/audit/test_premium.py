"""Token premium on parallel text (seed 003): hand-checked and on parallel-gettext."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tokenpact.audit.premium import ParallelCorpus, load_parallel, token_premium
from tokenpact.errors import ConfigError

from .conftest import shared_corpus_file


def test_premium_distribution_by_hand(tp: Any) -> None:
    tok = tp.Tokenizer.from_merges([], special_tokens=())  # bytes only: tokens == bytes
    items = [
        {"en": "ab", "de": "abcd", "zh": "中"},
        {"en": "abcd", "de": "abcd"},
        {"en": "a", "de": "aaa", "zh": "中文"},
        {"de": "no reference here"},
    ]
    result = token_premium(tok, items, reference="en")
    assert result["items"] == 3
    de = result["languages"]["de"]
    assert (de["items"], de["median"], de["max"]) == (3, 2.0, 3.0)
    assert de["ratio_of_totals"] == pytest.approx(11 / 7)
    zh = result["languages"]["zh"]
    assert zh["items"] == 2
    assert zh["max"] == 6.0
    assert zh["median"] == 1.5  # nearest rank of [1.5, 6.0]


def test_no_reference_is_a_config_error(tp: Any) -> None:
    tok = tp.Tokenizer.from_merges([], special_tokens=())
    with pytest.raises(ConfigError, match="reference"):
        token_premium(tok, [{"de": "x"}], reference="en")


def test_cl100k_premium_on_parallel_gettext_matches_tiktoken_counts(tp: Any) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    from tests.conformance import peer_data

    path = shared_corpus_file("parallel-gettext.jsonl.gz")
    corpus = load_parallel(path, limit=3000)
    tok = tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="cl100k")
    result = token_premium(tok, corpus, languages=["de", "hi", "zh_CN"])
    from tiktoken.load import load_tiktoken_bpe

    peer = tiktoken.Encoding(
        name="cl100k_local",
        pat_str=tp.PATTERNS["cl100k"],
        mergeable_ranks=load_tiktoken_bpe(str(peer_data.cl100k_tiktoken())),
        special_tokens={},
    )
    for lang, stats in result["languages"].items():
        ratios = [
            len(peer.encode_ordinary(item[lang])) / len(peer.encode_ordinary(item["en"]))
            for item in corpus.items
            if lang in item and peer.encode_ordinary(item["en"])
        ]
        assert stats["items"] == len(ratios)
        assert stats["median"] == pytest.approx(
            float(np.percentile(ratios, 50, method="inverted_cdf"))
        )
        assert stats["max"] == pytest.approx(max(ratios))
    # The published cl100k ordering (Petrov et al. 2023): German < Hindi.
    assert result["languages"]["de"]["median"] < result["languages"]["hi"]["median"]


def test_parallel_corpus_languages() -> None:
    corpus = ParallelCorpus([{"en": "a", "de": "b"}, {"en": "c", "fr": "d"}], "en")
    assert corpus.languages() == ["de", "fr"]
