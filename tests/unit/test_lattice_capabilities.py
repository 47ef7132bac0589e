"""N-best lists, sampling and likelihoods are engine capabilities: every Unigram model has
them (trained, loaded, pickled), other models refuse with a CapabilityError naming the
capability."""

from __future__ import annotations

import pickle

import pytest

import tokenpact as tp
from tokenpact.core import Capability
from tokenpact.errors import CapabilityError, ConfigError

TEXTS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 20


@pytest.fixture(scope="module")
def unigram() -> tp.Tokenizer:
    return tp.train_unigram(TEXTS, vocab_size=40)


def test_every_unigram_model_declares_the_lattice(unigram: tp.Tokenizer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lattice = {Capability.NBEST, Capability.SAMPLE, Capability.LOG_LIKELIHOOD}
    assert lattice <= unigram.capabilities
    path = tp.export(unigram, "sentencepiece", tmp_path / "m.model")
    loaded = tp.load(path)
    assert type(loaded) is tp.Tokenizer and lattice <= loaded.capabilities
    text = "the cat sat"
    assert loaded.nbest(text, 3) == unigram.nbest(text, 3)
    assert loaded.log_likelihood(text) == unigram.log_likelihood(text)
    key = tp.SampleKey(seed=4)
    assert loaded.sample(text, key=key) == unigram.sample(text, key=key)
    again = pickle.loads(pickle.dumps(loaded))
    assert again.sample(text, key=key) == loaded.sample(text, key=key)
    assert unigram.nbest(text, 0) == []
    assert unigram.sample("", seed=1) == []


@pytest.mark.parametrize(
    ("call", "capability"),
    [
        (lambda t: t.nbest("ab", 2), "nbest"),
        (lambda t: t.log_likelihood("ab"), "log_likelihood"),
        (lambda t: t.sample("ab", seed=1), "sample"),
        (lambda t: t.samples("ab", 2, seed=1), "sample"),
        (lambda t: t.sample("ab", generator="lcg64_v1", seed=1), "sample"),
    ],
)
def test_other_models_name_the_missing_capability(call, capability: str) -> None:  # type: ignore[no-untyped-def]
    bpe = tp.Tokenizer.from_merges([(97, 98)])
    with pytest.raises(CapabilityError, match=capability) as info:
        call(bpe)
    assert info.value.capability == capability
    assert isinstance(info.value, ConfigError)
    assert pickle.loads(pickle.dumps(info.value)).capability == capability


def test_bad_sampling_arguments(unigram: tp.Tokenizer) -> None:
    with pytest.raises(ConfigError, match="alpha"):
        unigram.sample("cat", alpha=0.0, seed=1)
    with pytest.raises(ConfigError, match="key"):
        unigram.sample("cat")
    with pytest.raises(ConfigError, match="not both"):
        unigram.sample("cat", key=tp.SampleKey(seed=1), seed=1)
    with pytest.raises(ConfigError, match="SampleKey"):
        unigram.sample("cat", key=tp.SampleKey(seed=1), generator="lcg64_v1")
    with pytest.raises(ConfigError, match="seed"):
        unigram.samples("cat", 2, seed=-1)
    with pytest.raises(ConfigError, match="n must"):
        unigram.nbest("cat", -1)
    # splitmix64-counter/1 through samples(): draw i is sample_id i.
    drawn = unigram.samples("the cat", 3, generator="splitmix64-counter/1", seed=9)
    assert drawn[2] == unigram.sample("the cat", key=tp.SampleKey(seed=9, sample_id=2))
