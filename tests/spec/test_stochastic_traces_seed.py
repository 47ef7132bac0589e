"""The pinned stochastic-segmentation traces (seed 000, 0x08): BPE-dropout on the
teaching table (rank 0 a+b, rank 1 ab+c) and Unigram sampling of "abab" with the
``lcg64_v1`` generator, seed 7, lexicographic ID-path order, eight draws, alpha=1."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact import SampleKey, Tokenizer, bpe_dropout
from tokenpact.errors import ConfigError
from tokenpact.reference import unigram as ref
from tokenpact.stochastic import (
    LCG64_INCREMENT,
    LCG64_MULTIPLIER,
    DropoutDecision,
    Lcg64,
    bpe_dropout_piece,
    bpe_dropout_reference,
    sample_enumerated,
)

A, B, C = b"abc"
AB, ABC = 256, 257
RANKS = {(A, B): (0, AB), (AB, C): (1, ABC)}


def _table() -> Tokenizer:
    return Tokenizer.from_merges([(A, B), (AB, C)])


def test_dropout_limits_and_the_half_trace() -> None:
    stream = SampleKey(seed=0).stream()
    assert bpe_dropout_piece([A, B, C], RANKS, 0.0, stream)[0] == [ABC]
    assert bpe_dropout_piece([A, B, C], RANKS, 1.0, stream)[0] == [A, B, C]
    trace: list[DropoutDecision] = []
    ids, used = bpe_dropout_piece([A, B, C], RANKS, 0.5, stream, trace=trace)
    # One draw per eligible occurrence, in (rank, position) order: rank 0 kept, then the
    # only occurrence left (rank 1) dropped, so the pre-token stops at [ab, c].
    assert [(d.rank, d.position, d.merged) for d in trace] == [(0, 0, True), (1, 0, False)]
    assert trace[0].draw >= 0.5 > trace[1].draw
    assert ids == [AB, C] and used == 2
    # The Rust engine and the Python reference replay the same trace from the same key.
    tok = _table()
    key = SampleKey(seed=0)
    assert bpe_dropout(tok, "abc", p=0.5, key=key) == [AB, C]
    assert bpe_dropout_reference(tok, "abc", p=0.5, key=key) == [AB, C]
    assert bpe_dropout(tok, "abc", p=0.0, key=key) == [ABC]
    assert bpe_dropout(tok, "abc", p=1.0, key=key) == [A, B, C]


PROBS = {
    "a": Fraction(1, 4),
    "b": Fraction(1, 4),
    "ab": Fraction(7, 20),
    "aba": Fraction(1, 10),
    "bab": Fraction(1, 20),
}
IDS = {"a": 0, "b": 1, "ab": 2, "aba": 3, "bab": 4}


def test_lcg64_v1_is_the_declared_recurrence() -> None:
    gen = Lcg64(7)
    state = 7
    for _ in range(5):
        state = (state * LCG64_MULTIPLIER + LCG64_INCREMENT) % 2**64
        assert gen.next_bits() == state >> 11
    with pytest.raises(ConfigError):
        Lcg64(-1)


def test_unigram_sampling_trace_lcg64_seed_7() -> None:
    paths = sorted(ref.segmentations("abab", PROBS), key=lambda z: [IDS[p] for p in z])
    id_paths = [tuple(IDS[p] for p in z) for z in paths]
    # The six complete paths, in lexicographic ID-path order, with the seed's probabilities.
    assert id_paths == [(0, 1, 0, 1), (0, 1, 2), (0, 4), (2, 0, 1), (2, 2), (3, 1)]
    weights = [ref.path_probability(z, PROBS) for z in paths]
    assert weights == [
        Fraction(1, 256),
        Fraction(7, 320),
        Fraction(1, 80),
        Fraction(7, 320),
        Fraction(49, 400),
        Fraction(1, 40),
    ]
    assert sum(weights) == Fraction(1329, 6400)
    drawn = sample_enumerated(weights, draws=8, seed=7, rng="lcg64_v1")
    # Inverse CDF by hand: cumulative shares 25, 165, 245, 385, 1169, 1329 (/1329).
    cumulative = [Fraction(c, 1329) for c in (25, 165, 245, 385, 1169, 1329)]
    expected = [next(i for i, c in enumerate(cumulative) if u < c) for u in Lcg64(7).draws(8)]
    assert drawn == expected
    # The pinned trace: ab+ab, aba+b, aba+b, ab+a+b, ab+a+b, a+bab, ab+ab, ab+ab.
    assert [id_paths[i] for i in drawn] == [
        (2, 2), (3, 1), (3, 1), (2, 0, 1), (2, 0, 1), (0, 4), (2, 2), (2, 2)
    ]  # fmt: skip
    # Same contract, other named generator: a different, equally replayable trace.
    other = sample_enumerated(weights, draws=8, seed=7, rng="splitmix64-counter/1")
    assert other == sample_enumerated(weights, draws=8, seed=7, rng="splitmix64-counter/1")
    assert other != drawn
    with pytest.raises(ConfigError, match="unknown rng"):
        sample_enumerated(weights, draws=1, seed=7, rng="mt19937")


def _abab_tokenizer(tmp_path: Path) -> Tokenizer:
    """The worked example's lattice as a loaded Unigram model: pieces a, b, ab, aba, bab
    (IDs 0..4) with the seed's probabilities, no normalizer, no pre-tokenizer."""
    vocab = [[piece, math.log(float(PROBS[piece]))] for piece in IDS]
    doc = {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "Unigram", "unk_id": None, "vocab": vocab, "byte_fallback": False},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return tp.load(path)


def test_public_sampling_call_reproduces_the_lcg64_seed_7_trace(tmp_path: Path) -> None:
    tok = _abab_tokenizer(tmp_path)
    drawn = tok.samples("abab", 8, generator="lcg64_v1", seed=7)
    assert drawn == [[2, 2], [3, 1], [3, 1], [2, 0, 1], [2, 0, 1], [0, 4], [2, 2], [2, 2]]
    # The same draws as the exact inverse CDF over the enumerated paths.
    paths = sorted(ref.segmentations("abab", PROBS), key=lambda z: [IDS[p] for p in z])
    weights = [ref.path_probability(z, PROBS) for z in paths]
    picks = sample_enumerated(weights, draws=8, seed=7, rng="lcg64_v1")
    assert drawn == [[IDS[p] for p in paths[i]] for i in picks]
    # sample() is the first draw of that stream.
    assert tok.sample("abab", generator="lcg64_v1", seed=7) == [2, 2]
    # The lattice quantities of the example: P(abab) = 1329/6400, best path ab+ab (49/400).
    assert math.exp(tok.log_likelihood("abab")) == pytest.approx(1329 / 6400, rel=1e-12)
    best = tok.nbest("abab", 6)
    assert [ids for ids, _ in best][:2] == [[2, 2], [3, 1]]
    assert sorted(tuple(ids) for ids, _ in best) == sorted(tuple(IDS[p] for p in z) for z in paths)
    assert math.exp(best[0][1]) == pytest.approx(49 / 400, rel=1e-12)
    with pytest.raises(ConfigError, match="unknown generator"):
        tok.sample("abab", generator="mt19937", seed=7)
