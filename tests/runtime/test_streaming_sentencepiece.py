"""Streaming encode of SentencePiece ``.model`` files on the native ``sentencepiece``
rule: a sentence is cut before an ASCII space that follows another character once every
normalizer step before it has read only bytes that arrived.

Properties, for every chunking of real multilingual text (str chunks, raw UTF-8 split
inside code points, recognized spellings whole or split): ``concat(pushes) + finish()
== tok.encode(text)``, and after every push ``committed + provisional() ==
tok.encode(text received so far)`` (what is committed is final for the empty
continuation too). Models: Mistral's released BPE ``.model`` files (identity
normalizer, spaces kept) and BPE models trained here with SentencePiece's ``nmt_nfkc``
charsmap or none, with/without extra-whitespace removal and the dummy prefix (Unigram
models: ``test_streaming_unigram.py``).
"""

from __future__ import annotations

import functools
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder

from .families import family, texts
from .stream_checks import check_sentencepiece_stream

MISTRAL = ["mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7"]
# Every combination of remove_extra_whitespaces and add_dummy_prefix: the tail after a
# cut is normalized "in the middle", which each combination derives differently.
TRAINED = [
    "bpe-nfkc",
    "bpe-nfkc-no-prefix",
    "bpe-identity-keep-spaces",
    "bpe-identity-keep-spaces-no-prefix",
]


@functools.cache
def _trained(kind: str):
    """A small SentencePiece model trained on the test texts (SentencePiece itself)."""
    spm = pytest.importorskip("sentencepiece")
    import tokenpact as tp

    directory = Path(tempfile.mkdtemp(prefix="tp-spm-stream-"))
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in texts()[:800]), encoding="utf-8")
    options = {
        "bpe-nfkc": {"model_type": "bpe", "normalization_rule_name": "nmt_nfkc"},
        "bpe-nfkc-no-prefix": {
            "model_type": "bpe",
            "normalization_rule_name": "nmt_nfkc",
            "add_dummy_prefix": False,
        },
        "bpe-identity-keep-spaces": {
            "model_type": "bpe",
            "normalization_rule_name": "identity",
            "remove_extra_whitespaces": False,
            "byte_fallback": True,
            "user_defined_symbols": ["<tool>", "[REF]"],
        },
        "bpe-identity-keep-spaces-no-prefix": {
            "model_type": "bpe",
            "normalization_rule_name": "identity",
            "remove_extra_whitespaces": False,
            "add_dummy_prefix": False,
        },
    }[kind]
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / kind),
        vocab_size=3000,
        character_coverage=0.995,
        minloglevel=2,
        **options,
    )
    return tp.Tokenizer.load(directory / f"{kind}.model")


def _tok(name: str):
    return family(name) if name in MISTRAL else _trained(name)


def _text(tok, data) -> str:
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    text = text[: data.draw(st.integers(0, 1200), label="length")]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    if rng.random() < 0.3:
        # Runs of spaces, tabs and newlines: the cut must not split a run.
        words = text.split(" ")
        text = "".join(w + rng.choice([" ", "  ", "   ", "\t ", " \n "]) for w in words)
    spellings = sorted({**tok.special_tokens, **tok.added_tokens})
    for _ in range(rng.randint(0, 3) if spellings else 0):
        s = rng.choice(spellings)
        piece = s if rng.random() < 0.7 else s[: rng.randint(1, len(s))]
        at = rng.randint(0, len(text))
        text = text[:at] + piece + text[at:]
    return text


@pytest.mark.parametrize("name", MISTRAL + TRAINED)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60, deadline=None)
@given(data=st.data())
def test_stream_equals_one_shot_encode(name: str, data) -> None:
    tok = _tok(name)
    check_sentencepiece_stream(tok, data, _text(tok, data))


@pytest.mark.parametrize("name", MISTRAL + TRAINED)
def test_commits_while_streaming_and_the_tail_stays_short(name: str) -> None:
    """On real text most IDs are committed before the end; after every push what stays
    provisional is the text since a space at most one word and the normalizer's reach
    back (here: words of at most 12 characters)."""
    tok = _tok(name)
    rng = random.Random(5)
    words = [w[:12] for t in texts()[:80] for w in t.split() if w]
    text = " ".join(words)
    data = text.encode()
    enc = StreamingEncoder(tok, scan_step=0)
    assert enc.rule == "sentencepiece"
    early: list[int] = []
    at = 0
    while at < len(data):
        n = rng.randint(1, 64)
        early += enc.push_bytes(data[at : at + n])
        at += n
        # One word (<= 12 characters, 48 bytes), the space before it and the reach.
        assert len(enc.pending_text.encode()) <= 48 + 1 + 64
    assert early + enc.finish() == tok.encode(text)
    assert len(early) > 0.9 * len(tok.encode(text))


def test_seed_euro_split_into_three_chunks_and_cancellation() -> None:
    tok = _tok("mistral-sp-v3")
    enc = StreamingEncoder(tok)
    ids = enc.push_bytes(b"cost: \xe2") + enc.push_bytes(b"\x82") + enc.push_bytes(b"\xac 5")
    assert ids + enc.finish() == tok.encode("cost: € 5")
    enc.push_bytes(b"abc def \xe2\x82")
    enc.reset()
    assert enc.committed == [] and enc.pending_text == "" and enc.provisional() == []
    assert enc.push("x") + enc.finish() == tok.encode("x")


def test_a_spelling_after_a_cut_starts_a_new_sentence() -> None:
    """After a committed cut the tail is inside a sentence (no dummy prefix); after a
    decided spelling a new sentence starts (with its own dummy prefix)."""
    tok = _tok("mistral-sp-v3")
    special = "[INST]"
    assert special in tok.special_tokens
    text = f"one two three {special} four five {special}six"
    for cut in range(1, len(text)):
        enc = StreamingEncoder(tok, allowed_special="all")
        ids = enc.push(text[:cut]) + enc.push(text[cut:]) + enc.finish()
        assert ids == tok.encode(text, allowed_special="all")


def test_hostile_run_without_a_space() -> None:
    """No space: nothing can be cut, the whole run stays provisional, and pushes are
    not quadratic (the tail is rescanned only after doubling)."""
    tok = _tok("mistral-sp-v3")
    text = "日本語のテキスト" * 20_000
    data = text.encode()
    enc = StreamingEncoder(tok)
    committed: list[int] = []
    for at in range(0, len(data), 64):
        committed += enc.push_bytes(data[at : at + 64])
    assert committed == []
    assert enc.finish() == tok.encode(text)


@pytest.mark.parametrize("name", MISTRAL + TRAINED)
def test_bpe_models_declare_the_sentence_cut(name: str) -> None:
    """The engine declares the native sentence cut exactly where the encoder uses it."""
    tok = _tok(name)
    assert "streaming_encode_sentencepiece" in tok.engine.capabilities
    assert "streaming_encode_pretokens" not in tok.engine.capabilities
    assert StreamingEncoder(tok).rule == "sentencepiece"
    assert StreamingEncoder(tok, native=False).rule == "hold"
