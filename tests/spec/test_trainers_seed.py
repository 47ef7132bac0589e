"""Seed examples for WordPiece (0x08), character BPE (0x06, seed 003) and BPE-dropout."""

from __future__ import annotations

import tokenpact as tp
from tokenpact.reference import char_bpe as cref
from tokenpact.reference import wordpiece_train as wref
from tokenpact.special import SpecialToken
from tokenpact.stochastic import SampleKey, bpe_dropout_piece
from tokenpact.train.wordpiece import build_wordpiece

SEED_VOCAB = ["[UNK]", "un", "##want", "##ed", "runn", "play", ",", "##ing", "##er"]
UNK = (SpecialToken("[UNK]", "unk"),)


def test_wordpiece_unwanted_reference() -> None:
    vocab = {p: i for i, p in enumerate(SEED_VOCAB)}
    assert wref.encode_word("unwanted", vocab, 0) == [1, 2, 3]
    assert wref.encode_word("want", vocab, 0) == [0]
    assert wref.encode_word("playingx", vocab, 0) == [0]
    assert wref.encode_word("Unwanted", vocab, 0) == [0]
    assert wref.encode_word("Unwanted".lower(), vocab, 0) == [1, 2, 3]


def test_wordpiece_unwanted_engine() -> None:
    cased = build_wordpiece(SEED_VOCAB, UNK)
    assert cased.encode("unwanted") == [1, 2, 3]
    assert cased.encode("want") == [0]
    assert cased.encode("playingx") == [0]
    assert cased.encode("Unwanted") == [0]
    assert build_wordpiece(SEED_VOCAB, UNK, lowercase=True).encode("Unwanted") == [1, 2, 3]
    assert cased.decode([1, 2, 3]) == "unwanted"


def test_char_bpe_seed_003() -> None:
    text = "low low low lo lower newest widest"
    interactive = cref.pair_counts(cref.word_counts(["low low low lo"]), [])
    assert interactive[("l", "o")] == 4 and interactive[("o", "w")] == 3
    words = cref.word_counts([text])
    merges, stop = cref.train_char_bpe_reference(words, 8)
    tok = tp.train_char_bpe([text], num_merges=8)
    assert [tuple(m) for m in tok.training["merges"]] == merges
    assert merges[:3] == [("l", "o"), ("lo", "w"), ("low", "</w>")]
    assert tok.training["stop_reason"] == stop == "vocab_size_reached"
    assert tok.unk_id in tok.encode("lobster")  # 'b' is outside the training alphabet
    for word in ["low", "lower", "lowest"]:
        ids = tok.encode(word)
        assert [tok.id_to_piece(i) for i in ids] == cref.encode_word(word, merges)
    assert tok.decode(tok.encode("lower  newest\nlow")) == "lower newest low"
    # An unseen character is not covered: character BPE is not free of unknowns.
    assert tok.unk_id in tok.encode("low🐍")


def test_char_bpe_section_06_counts_and_tie_break() -> None:
    words = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    counts = cref.pair_counts(words, [])
    assert counts[("e", "s")] == counts[("s", "t")] == counts[("t", "</w>")] == 9
    texts = [" ".join(w for w, n in words.items() for _ in range(n))]
    smallest = tp.train_char_bpe(texts, num_merges=1)
    largest = tp.train_char_bpe(texts, num_merges=1, tie_break="largest")
    assert smallest.training["merges"] == [["e", "s"]]
    assert largest.training["merges"] == [["t", "</w>"]]
    assert cref.train_char_bpe_reference(words, 1)[0] == [("e", "s")]
    assert cref.train_char_bpe_reference(words, 1, tie_break="largest")[0] == [("t", "</w>")]


def test_bpe_dropout_limits() -> None:
    a, b, c, ab, abc = 0, 1, 2, 3, 4
    ranks = {(a, b): (0, ab), (ab, c): (1, abc)}
    stream = SampleKey(seed=7).stream()
    assert bpe_dropout_piece([a, b, c], ranks, 0.0, stream)[0] == [abc]
    assert bpe_dropout_piece([a, b, c], ranks, 1.0, stream)[0] == [a, b, c]
    # p=1/2: each outcome is one of the three segmentations the table allows.
    outcomes = {
        tuple(bpe_dropout_piece([a, b, c], ranks, 0.5, SampleKey(seed=s).stream())[0])
        for s in range(64)
    }
    assert outcomes == {(abc,), (ab, c), (a, b, c)}
