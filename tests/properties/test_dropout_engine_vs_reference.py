"""The Rust BPE-dropout engine agrees with the Python reference (seed 000, 0x08).

``tp.bpe_dropout`` runs ``src/bpe/dropout.rs``; ``bpe_dropout_reference`` spells out
the replay contract (one draw per eligible occurrence ordered by rank then position,
draws numbered across the text). Both must give the same IDs for every text, p and
key, including the extremes: p=0 is deterministic BPE and p=1 gives the bytes.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.errors import ConfigError
from tokenpact.stochastic import SampleKey, bpe_dropout_batch, bpe_dropout_reference

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "low lower lowest newest widest tokenization tokenizer tokens",
    "def encode(self, text):\n    return [self.vocab[c] for c in text]\n",
    "aaaa abab aaab baba \u00e9\u00e9 \u4e2d\u4e2d\u4e2d 1234 12345",
] * 10
PATTERNS = ("gpt4", "gpt2", r"[^\n]+|\n")


@cache
def tokenizer(pattern: str, vocab_size: int) -> tp.Tokenizer:
    return tp.train_bpe(CORPUS, vocab_size=vocab_size, pattern=pattern, special_tokens=())


texts = st.one_of(
    st.text(alphabet="ab low\u00e9\u4e2d.\n", max_size=60),
    st.text(max_size=30),
    st.sampled_from(CORPUS),
)
keys = st.builds(
    SampleKey,
    seed=st.integers(0, 2**64 - 1),
    epoch=st.integers(0, 50),
    sample_id=st.one_of(st.integers(0, 2**40), st.text(max_size=8)),
    view=st.integers(0, 3),
)
probabilities = st.one_of(st.sampled_from([0.0, 1.0, 0.1, 0.5]), st.floats(0.0, 1.0))


@given(
    text=texts,
    p=probabilities,
    key=keys,
    pattern=st.sampled_from(PATTERNS),
    vocab_size=st.sampled_from([256, 300, 420]),
)
def test_engine_matches_reference(
    text: str, p: float, key: SampleKey, pattern: str, vocab_size: int
) -> None:
    tok = tokenizer(pattern, vocab_size)
    if not tok.merges:
        with pytest.raises(ConfigError):
            tp.bpe_dropout(tok, text, p=p, key=key)
        return
    ours = tp.bpe_dropout(tok, text, p=p, key=key)
    ref = bpe_dropout_reference(tok, text, p=p, key=key)
    note(f"ours={ours} ref={ref}")
    assert ours == ref
    assert tok.decode_bytes(ours) == tok.decode_bytes(tok.encode(text))


# One pre-token of more than 64 bytes takes the engine's ordered-set path.
long_texts = st.builds(
    lambda head, reps: head * reps,
    st.text(alphabet="ab lo\u00e9", min_size=1, max_size=12),
    st.integers(6, 40),
)


@given(text=long_texts, p=probabilities, key=keys, vocab_size=st.sampled_from([300, 420]))
def test_long_pretokens_match_reference(
    text: str, p: float, key: SampleKey, vocab_size: int
) -> None:
    tok = tokenizer(r"[^\n]+|\n", vocab_size)
    ours = tp.bpe_dropout(tok, text, p=p, key=key)
    assert ours == bpe_dropout_reference(tok, text, p=p, key=key)
    assert tok.decode_bytes(ours) == text.encode()


@given(text=texts, key=keys, pattern=st.sampled_from(PATTERNS))
def test_extremes(text: str, key: SampleKey, pattern: str) -> None:
    tok = tokenizer(pattern, 420)
    assert tp.bpe_dropout(tok, text, p=0.0, key=key) == tok.encode(text)
    # p=1 drops every merge: the UTF-8 bytes of the pre-tokens (all of the text here,
    # since every pattern covers all of it).
    assert tp.bpe_dropout(tok, text, p=1.0, key=key) == list(text.encode())


@given(
    batch=st.lists(st.tuples(texts, keys), max_size=6),
    p=probabilities,
    threads=st.sampled_from([None, 1, 2]),
)
def test_batch_matches_single(batch: list[tuple[str, SampleKey]], p: float, threads: int) -> None:
    tok = tokenizer("gpt4", 420)
    items = [t for t, _ in batch]
    ks = [k for _, k in batch]
    out = bpe_dropout_batch(tok, items, p=p, keys=ks, threads=threads)
    assert out == [tp.bpe_dropout(tok, t, p=p, key=k) for t, k in batch]


def test_invalid_arguments() -> None:
    tok = tokenizer("gpt4", 420)
    key = SampleKey(seed=1)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ConfigError):
            tp.bpe_dropout(tok, "text", p=bad, key=key)
    with pytest.raises(ConfigError):
        bpe_dropout_batch(tok, ["a", "b"], p=0.1, keys=[key])
