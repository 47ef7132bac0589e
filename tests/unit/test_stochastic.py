"""Replay contract: counter-based draws, BPE-dropout and Unigram sampling."""

from __future__ import annotations

import pytest

import tokenpact as tp
from tokenpact import _native
from tokenpact.errors import ConfigError
from tokenpact.stochastic import RNG_NAME, SampleKey, splitmix64, stream_key, uniform

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "low lower lowest newest widest tokenization tokenizer tokens",
    "def encode(self, text):\n    return [self.vocab[c] for c in text]\n",
] * 20


@pytest.fixture(scope="module")
def bpe() -> tp.Tokenizer:
    return tp.train_bpe(TEXTS, vocab_size=400, special_tokens=())


@pytest.fixture(scope="module")
def unigram() -> tp.train.UnigramTokenizer:
    return tp.train_unigram(TEXTS, vocab_size=120, character_coverage=1.0)


def test_python_twin_matches_rust() -> None:
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    assert _native.RNG_NAME == RNG_NAME
    for fields in [(0, 0, 0, 0), (7, 1, 2, 3), (2**63, 5, 2**40, 1)]:
        for occurrence in (0, 1, 999):
            assert _native.rng_uniform(*fields, occurrence) == uniform(
                stream_key(*fields), occurrence
            )


def test_string_sample_ids_are_stable() -> None:
    a = SampleKey(seed=1, sample_id="doc-17").fields()
    assert a == SampleKey(seed=1, sample_id="doc-17").fields()
    assert a != SampleKey(seed=1, sample_id="doc-18").fields()
    with pytest.raises(ConfigError):
        SampleKey(seed=-1).fields()


def test_dropout_zero_is_bpe_and_one_is_bytes(bpe: tp.Tokenizer) -> None:
    for text in TEXTS[:3]:
        key = SampleKey(seed=3, sample_id=1)
        assert tp.bpe_dropout(bpe, text, p=0.0, key=key) == bpe.encode(text)
        assert tp.bpe_dropout(bpe, text, p=1.0, key=key) == list(text.encode())


def test_dropout_replays_and_varies(bpe: tp.Tokenizer) -> None:
    text = TEXTS[0]
    key = SampleKey(seed=3, epoch=0, sample_id=9)
    first = tp.bpe_dropout(bpe, text, p=0.3, key=key)
    assert tp.bpe_dropout(bpe, text, p=0.3, key=key) == first
    assert bpe.decode(first) == text
    other = tp.bpe_dropout(bpe, text, p=0.3, key=SampleKey(seed=3, epoch=1, sample_id=9))
    assert other != first and bpe.decode(other) == text
    with pytest.raises(ConfigError):
        tp.bpe_dropout(bpe, text, p=1.5, key=key)


def test_unigram_sampling_replay(unigram: tp.train.UnigramTokenizer) -> None:
    text = TEXTS[1]
    key = SampleKey(seed=11, epoch=2, sample_id="s1", view=0)
    first = unigram.sample(text, alpha=0.05, key=key)
    assert unigram.sample(text, alpha=0.05, key=key) == first
    assert unigram.decode(first) == text
    views = {tuple(unigram.sample(text, alpha=0.05, key=SampleKey(11, e, "s1"))) for e in range(8)}
    assert len(views) > 1
    for ids in views:
        assert unigram.decode(list(ids)) == text
    record = unigram.sampling_record(0.05, key)
    assert record["rng"] == RNG_NAME and record["method"] == "unigram_sample"


def test_sampling_does_not_depend_on_workers(unigram: tp.train.UnigramTokenizer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(t, SampleKey(seed=5, epoch=1, sample_id=i)) for i, t in enumerate(TEXTS[:12])]
    serial = [unigram.sample(t, alpha=0.5, key=k) for t, k in jobs]
    for workers in (2, 4):
        with ThreadPoolExecutor(workers) as pool:
            parallel = list(
                pool.map(lambda job: unigram.sample(job[0], alpha=0.5, key=job[1]), jobs)
            )
        assert parallel == serial
    # Order of evaluation (prefetch, restarts) does not matter either.
    reversed_ = [unigram.sample(t, alpha=0.5, key=k) for t, k in reversed(jobs)]
    assert reversed_[::-1] == serial


def test_large_alpha_approaches_viterbi(unigram: tp.train.UnigramTokenizer) -> None:
    text = TEXTS[1]
    assert unigram.sample(text, alpha=200.0, key=SampleKey(1)) == unigram.encode(text)
    best = unigram.nbest(text, 3)
    assert best[0][0] == unigram.encode(text)
    assert best[0][1] >= best[1][1] >= best[2][1]
