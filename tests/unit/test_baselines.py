"""Seed 004 baselines and the fit-split vocabulary builder (seed 000, 0x03)."""

from __future__ import annotations

import pytest

from tokenpact.baselines import (
    ByteTokenizer,
    CharacterTokenizer,
    SpecialTokenRegistry,
    WordTokenizer,
    build_word_vocab,
)
from tokenpact.errors import ConfigError, DecodeError, UnknownTokenError

SAMPLE = "Café robots read code: x += 1.\n"


def test_seed_004_sizes_and_promises() -> None:
    character = CharacterTokenizer.fit([SAMPLE])
    byte = ByteTokenizer()
    word = WordTokenizer.fit([SAMPLE])
    assert (character.vocab_size, len(character.encode(SAMPLE))) == (21, 31)
    assert (byte.vocab_size, len(byte.encode(SAMPLE))) == (256, 32)
    assert (word.vocab_size, len(word.encode(SAMPLE))) == (8, 7)
    assert character.decode(character.encode(SAMPLE)) == SAMPLE
    assert byte.decode(byte.encode(SAMPLE)) == SAMPLE
    assert word.encode("unseen-word") == [0]
    assert word.decode(word.encode(SAMPLE)) == " ".join(SAMPLE.split())
    assert byte.decode([0xC3, 0x28], errors="replace") == "\ufffd("
    with pytest.raises(DecodeError, match="errors='replace'"):
        byte.decode([0xC3, 0x28])


def test_empty_and_long_round_trips() -> None:
    long_text = "Café robots " * 400
    character = CharacterTokenizer.fit([SAMPLE])
    assert character.decode(character.encode("")) == ""
    assert character.decode(character.encode(long_text)) == long_text
    assert ByteTokenizer().decode(ByteTokenizer().encode(long_text)) == long_text


def test_unknown_characters_are_visible() -> None:
    character = CharacterTokenizer.fit(["abc"])
    assert character.encode("cab?") == [3, 1, 2, 0]
    assert character.decode(character.encode("cab?")) == "cab"
    with pytest.raises(UnknownTokenError):
        character.decode([99])


def test_special_token_registry_ids_38_to_41() -> None:
    registry = SpecialTokenRegistry(base_vocabulary_size=38)
    assert registry.stoi == {"<pad>": 38, "<bos>": 39, "<eos>": 40, "<unk>": 41}
    assert registry.wrap([]) == [39, 40]
    assert registry.wrap([14, 15, 20, 36]) == [39, 14, 15, 20, 36, 40]
    with pytest.raises(ConfigError, match="reserved special ID"):
        registry.wrap([38])


def test_word_vocab_counts_only_the_fit_split() -> None:
    train = ["the cat sat", "the dog sat", "a rare word"]
    test = ["rare again"]
    leaky = build_word_vocab(train + test, min_freq=2, specials=["<s>", "</s>", "<blank>", "<unk>"])
    clean = build_word_vocab(train, min_freq=2, specials=["<s>", "</s>", "<blank>", "<unk>"])
    assert "rare" in leaky and "rare" not in clean
    assert clean.itos == ["<s>", "</s>", "<blank>", "<unk>", "sat", "the"]
    assert clean["rare"] == clean["<unk>"] == 3
    assert clean.lookup_indices(["the", "zebra"]) == [5, 3]
    strict = build_word_vocab(train, min_freq=2, default=None)
    with pytest.raises(UnknownTokenError, match="set_default_index"):
        strict["zebra"]
