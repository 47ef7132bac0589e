"""Corpus metrics: the vectorized engine against a per-record reference, on real text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.audit.corpus import AuditCorpus, load_corpus
from tokenpact.audit.encoded import encode_corpus
from tokenpact.audit.metrics import (
    corpus_metrics,
    distinct_strings,
    normalization_collisions,
    offset_accuracy,
    reconstruction,
)
from tokenpact.audit.text_units import count_graphemes, count_words, text_units
from tokenpact.errors import ConfigError

from .conftest import shared_corpus_file


def _reference(tok: Any, texts: list[str], context: int) -> dict[str, Any]:
    """The metrics of seed 0x0C1 computed the slow, obvious way: one record at a time."""
    lengths, single, partial = [], 0, 0
    for text in texts:
        ids = tok.encode(text)
        lengths.append(len(ids))
        for i in ids:
            piece = tok.token_bytes(i)
            single += len(piece) == 1
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError:
                partial += 1
    n = sum(lengths)
    ordered = sorted(lengths)
    rank = lambda q: ordered[max(0, -(-q * len(ordered) // 100) - 1)]  # noqa: E731 - nearest rank
    return {
        "tokens": n,
        "bytes_per_token": sum(len(t.encode()) for t in texts) / n,
        "codepoints_per_token": sum(map(len, texts)) / n,
        "graphemes_per_token": sum(map(count_graphemes, texts)) / n,
        "fertility": n / words if (words := sum(map(count_words, texts))) else None,
        "single_byte_fraction": single / n,
        "partial_utf8_fraction": partial / n,
        "p50": rank(50),
        "p95": rank(95),
        "max": max(lengths),
        "truncated": sum(x > context for x in lengths),
        "attention_pairs": sum(x * x for x in lengths),
    }


def _metrics(tok: Any, corpus: AuditCorpus, field: str | None, context: int, ref: Any = None):
    names, codes = corpus.slice_codes(field)
    units = text_units(corpus.texts)
    enc = encode_corpus(tok, corpus.texts, name="t")
    reference = encode_corpus(ref, corpus.texts, name="r") if ref is not None else None
    return corpus_metrics(
        enc,
        units,
        slice_names=names,
        slice_codes=codes,
        context_length=context,
        reference=reference,
    )


def test_overall_and_slices_match_the_reference(small_tok: Any, docs_corpus: AuditCorpus) -> None:
    result = _metrics(small_tok, docs_corpus, "slice", 512)
    expected = _reference(small_tok, docs_corpus.texts, 512)
    for key, value in expected.items():
        assert result["overall"][key] == pytest.approx(value), key
    assert len(result["slices"]) >= 2
    for name, block in result["slices"].items():
        members = [
            t
            for t, s in zip(docs_corpus.texts, docs_corpus.fields["slice"], strict=True)
            if s == name
        ]
        sub = _reference(small_tok, members, 512)
        for key, value in sub.items():
            assert block[key] == pytest.approx(value), (name, key)
    assert sum(b["tokens"] for b in result["slices"].values()) == result["overall"]["tokens"]


@settings(max_examples=25)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=12), st.integers(1, 40))
def test_engine_equals_reference_on_arbitrary_text(tp: Any, texts: list[str], context: int) -> None:
    tok = _byte_tok(tp)
    corpus = AuditCorpus(texts)
    result = _metrics(tok, corpus, None, context)["overall"]
    expected = _reference(tok, texts, context) if sum(map(len, texts)) else None
    if expected is None:
        assert result["tokens"] == 0
        return
    for key, value in expected.items():
        assert result[key] == pytest.approx(value), key


_BYTE_TOK: list[Any] = []


def _byte_tok(tp: Any) -> Any:
    if not _BYTE_TOK:
        text = "the thing in the ring is a thin string " * 20 + "日本語のテキスト " * 10
        _BYTE_TOK.append(tp.train_bpe([text], vocab_size=300, special_tokens=()))
    return _BYTE_TOK[0]


def test_amplification_both_estimators_and_paired_deltas(tp: Any) -> None:
    tok = _byte_tok(tp)
    bytes_only = tp.Tokenizer.from_merges([], special_tokens=())
    corpus = AuditCorpus(["the thing", "a", "日本"], {"kind": ["x", "x", "y"]})
    result = _metrics(bytes_only, corpus, "kind", 100, ref=tok)
    cand = [len(bytes_only.encode(t)) for t in corpus.texts]
    ref = [len(tok.encode(t)) for t in corpus.texts]
    amp = result["overall"]["amplification"]
    assert amp["ratio_of_totals"] == pytest.approx(sum(cand) / sum(ref))
    assert amp["macro_mean_ratio"] == pytest.approx(np.mean(np.array(cand) / np.array(ref)))
    assert amp["records_longer"] == sum(c > r for c, r in zip(cand, ref, strict=True))
    assert result["slices"]["y"]["amplification"]["ratio_of_totals"] == pytest.approx(
        cand[2] / ref[2]
    )


def test_unk_and_byte_fallback_rates_on_real_peers(tp: Any) -> None:
    from tests.conformance import peer_data

    bert = tp.Tokenizer.load(peer_data.minilm_tokenizer_json())
    corpus = AuditCorpus(["hello world ☃ 🦄 ok", "plain words"])
    result = _metrics(bert, corpus, None, 100)["overall"]
    unk = bert.token_id("[UNK]")
    expected = sum(bert.encode(t).count(unk) for t in corpus.texts)
    assert expected > 0
    assert result["unk_rate"] == pytest.approx(expected / result["tokens"])
    sp = tp.Tokenizer.load(peer_data.mistral_models()[-1])  # SentencePiece BPE, byte_fallback
    result = _metrics(sp, AuditCorpus(["snow ☃ and 𒀀 cuneiform"]), None, 100)["overall"]
    ids = sp.encode("snow ☃ and 𒀀 cuneiform")
    fallback = sum(
        bool(__import__("re").fullmatch(rb"<0x[0-9A-F]{2}>", sp.vocab()[i])) for i in ids
    )
    assert fallback > 0
    assert result["byte_fallback_rate"] == pytest.approx(fallback / len(ids))
    assert result["unk_rate"] == 0


def test_reconstruction_exact_and_normalized(
    tp: Any, small_tok: Any, docs_corpus: AuditCorpus
) -> None:
    units = text_units(docs_corpus.texts)
    enc = encode_corpus(small_tok, docs_corpus.texts, name="t")
    r = reconstruction(small_tok, enc, docs_corpus.texts, units)
    assert r["exact"] == r["records"] == len(docs_corpus)
    from tests.conformance import peer_data

    bert = tp.Tokenizer.load(peer_data.minilm_tokenizer_json())  # lowercases, has [UNK]
    texts = ["Hello World", "hello world", "snowman ☃"]
    enc = encode_corpus(bert, texts, name="bert")
    r = reconstruction(bert, enc, texts, text_units(texts))
    assert r["exact"] == 1  # only the already-lowercase text comes back unchanged
    assert r["failures"] == [2]  # [UNK] loses the snowman even after normalization


def test_offsets_slice_back_to_token_text(small_tok: Any, docs_corpus: AuditCorpus) -> None:
    r = offset_accuracy(small_tok, docs_corpus.texts, sample=20)
    assert r["tokens"] > 0
    assert r["accuracy_exact"] == 1.0
    assert r["mismatches"] == []


def test_normalization_collisions(tp: Any, small_tok: Any) -> None:
    from tests.conformance import peer_data

    words = distinct_strings(["Hello hello HELLO", "world World", "unique"])
    assert words == sorted({"Hello", "hello", "HELLO", "world", "World", "unique"})
    assert normalization_collisions(small_tok, words)["colliding_groups"] == 0
    bert = tp.Tokenizer.load(peer_data.minilm_tokenizer_json())
    r = normalization_collisions(bert, words)
    assert r["colliding_groups"] == 2
    assert r["colliding_strings"] == 5
    assert {"normalized": "hello", "raw": ["HELLO", "Hello", "hello"]} in r["examples"]


def test_unknown_slice_field_names_the_fix(docs_corpus: AuditCorpus) -> None:
    with pytest.raises(ConfigError, match="--slice-field"):
        docs_corpus.slice_codes("language")


def test_bench_mixed_slices_when_present(small_tok: Any) -> None:
    corpus = load_corpus(shared_corpus_file("bench-mixed.jsonl.gz"), limit=300)
    result = _metrics(small_tok, corpus, "slice", 2048)
    assert set(result["slices"]) <= {
        "prose-en",
        "code-py",
        "man-de",
        "man-fr",
        "fortune-en",
        "fortune-de",
    }
    assert result["overall"]["records"] == 300
