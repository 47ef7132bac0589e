"""Engines == references for Unigram lattices, WordPiece and character BPE training;
EM never lowers the likelihood; thread count changes nothing."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact import _native
from tokenpact.reference import char_bpe as cref
from tokenpact.reference import unigram as uref
from tokenpact.reference import wordpiece_train as wref

letters = st.text(alphabet="abc", min_size=1, max_size=7)


@st.composite
def vocab_and_text(draw: st.DrawFn) -> tuple[dict[str, Fraction], str]:
    extra = draw(st.lists(st.text(alphabet="abc", min_size=2, max_size=4), max_size=6))
    pieces = sorted({"a", "b", "c", *extra})
    weights = draw(st.lists(st.integers(1, 9), min_size=len(pieces), max_size=len(pieces)))
    total = sum(weights)
    return {p: Fraction(w, total) for p, w in zip(pieces, weights, strict=False)}, draw(letters)


@settings(max_examples=60, deadline=None)
@given(vocab_and_text())
def test_unigram_lattice_matches_reference(case: tuple[dict[str, Fraction], str]) -> None:
    probs, text = case
    order = list(probs)
    core = _native.UnigramCore(order, [math.log(probs[p]) for p in order], 0, None)
    log_z, expected, viterbi, nbest = core.lattice_stats(text, 4)
    assert log_z == pytest_approx(math.log(uref.marginal(text, probs)))
    exact = uref.expected_counts({text: 1}, probs)
    for i, piece in enumerate(order):
        assert abs(expected[i] - float(exact[piece])) < 1e-9
    best = uref.path_probability(tuple(order[i] for i in viterbi), probs)
    assert best == max(uref.path_probability(p, probs) for p in uref.segmentations(text, probs))
    top = sorted(
        (uref.path_probability(p, probs) for p in uref.segmentations(text, probs)), reverse=True
    )
    assert [math.exp(s) for _, s in nbest] == pytest_approx([float(x) for x in top[:4]])


def pytest_approx(x: object) -> object:
    import pytest

    return pytest.approx(x, rel=1e-9, abs=1e-12)


corpora = st.lists(st.text(alphabet="abcde ", min_size=1, max_size=30), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(corpora, st.integers(0, 12), st.sampled_from(["smallest", "largest"]))
def test_char_bpe_engine_matches_reference(texts: list[str], merges: int, tie: str) -> None:
    if not any(t.split() for t in texts):
        return
    words = cref.word_counts(texts)
    expected, stop = cref.train_char_bpe_reference(words, merges, tie_break=tie)
    tok = tp.train_char_bpe(texts, num_merges=merges, tie_break=tie)
    assert [tuple(m) for m in tok.training["merges"]] == expected
    assert tok.training["stop_reason"] == stop
    for word in words:
        assert [tok.id_to_piece(i) for i in tok.encode(word)] == cref.encode_word(word, expected)


@settings(max_examples=40, deadline=None)
@given(
    corpora,
    st.integers(8, 30),
    st.integers(1, 3),
    st.sampled_from([None, 3]),
    st.sampled_from(["count", "likelihood_gain", "likelihood_ratio"]),
)
def test_wordpiece_engine_matches_reference(
    texts: list[str], size: int, min_frequency: int, limit: int | None, scoring: str
) -> None:
    words = Counter(w for t in texts for w in t.split())
    if not words:
        return
    ref = wref.train_wordpiece_reference(
        words, size, min_frequency=min_frequency, limit_alphabet=limit, scoring=scoring
    )
    if len(ref.vocab) > size:
        return  # the alphabet alone does not fit; the engine raises (tested elsewhere)
    tok = tp.train_wordpiece(
        texts,
        vocab_size=size,
        special_tokens=[tp.SpecialToken("[UNK]", "unk")],
        min_frequency=min_frequency,
        limit_alphabet=limit,
        scoring=scoring,
    )
    assert [p.decode() for p in tok.vocab()] == ref.vocab
    assert tok.training["stop_reason"] == ref.stop_reason
    vocab = {p: i for i, p in enumerate(ref.vocab)}
    for word in words:
        assert tok.encode(word) == wref.encode_word(word, vocab, 0)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text(alphabet="abcd ", min_size=3, max_size=40), min_size=2, max_size=8))
def test_unigram_em_never_lowers_likelihood(texts: list[str]) -> None:
    if sum(len(t.split()) for t in texts) < 2:
        return
    tok = tp.train_unigram(
        texts,
        vocab_size=12,
        m_step="simple",
        em_sub_iterations=4,
        character_coverage=1.0,
    )
    trace = tok.training["em_trace"]
    for (round_a, ll_a), (round_b, ll_b) in zip(trace, trace[1:], strict=False):
        if round_a == round_b:
            assert ll_b >= ll_a - 1e-6 * max(1.0, abs(ll_a))


def test_unigram_reference_trainer_em_monotone() -> None:
    words = {"abab": 3, "abba": 2, "bab": 1}
    probs = {z: Fraction(c, 1) for z, c in uref.candidate_substrings(words, 4).items()}
    total = sum(probs.values())
    probs = {z: p / total for z, p in probs.items()}
    lls = []
    for _ in range(3):
        lls.append(uref.log_likelihood(words, probs))
        probs = uref.em_step(words, probs)
    assert all(b >= a - 1e-12 for a, b in zip(lls, lls[1:], strict=False))
    final = uref.train_unigram_reference(words, 5, max_piece_length=3)
    assert len(final) <= 5 and {"a", "b"} <= set(final)


HARVEST = [
    "The quick brown fox jumps over the lazy dog.",
    "def train(texts, *, vocab_size): return tokens",
    "Tokenization is a compression and coverage tradeoff.",
    "naïve café façade — 東京 in ünïcödé",
] * 30


def test_thread_count_changes_nothing() -> None:
    for threads in (1, 2):
        uni = tp.train_unigram(HARVEST, vocab_size=150, threads=threads)
        wp = tp.train_wordpiece(HARVEST, vocab_size=150, threads=threads)
        bpe = tp.train_char_bpe(HARVEST, num_merges=60, threads=threads)
        got = (uni.pieces, uni.scores, wp.vocab(), bpe.training["merges"])
        if threads == 1:
            first = got
        else:
            assert got == first
    # Document order does not matter either.
    again = tp.train_unigram(list(reversed(HARVEST)), vocab_size=150)
    assert (again.pieces, again.scores) == first[:2]
