"""Bad training input fails with a typed error that names the fix (engine and reference)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tokenpact.errors import ConfigError, InvalidInputError, TrainingError
from tokenpact.reference import train_bpe_reference

UNIT = r"[^\n]+"


def _reference(texts, *, vocab_size=300, n_special=0, **options):
    options.setdefault("pattern", "gpt4")
    return train_bpe_reference(texts, vocab_size=vocab_size, n_special=n_special, **options)


@pytest.mark.parametrize(
    "texts",
    [[], iter(()), [""], ["", "", ""]],
    ids=["empty-list", "empty-iterator", "one-empty-string", "only-empty-strings"],
)
def test_empty_corpus(tp: ModuleType, texts):
    with pytest.raises(TrainingError):
        tp.train_bpe(texts, vocab_size=300)


@pytest.mark.parametrize("texts", [[], [""], ["", "", ""]])
def test_reference_empty_corpus(texts):
    with pytest.raises(TrainingError):
        _reference(texts)


def test_vocab_size_below_base_plus_specials(tp: ModuleType):
    n = len(tp.DEFAULT_SPECIAL_TOKENS)
    with pytest.raises(TrainingError) as info:
        tp.train_bpe(["hello world"], vocab_size=256 + n - 1)
    # The message names the smallest size that works.
    assert str(256 + n) in str(info.value)


def test_vocab_size_below_byte_alphabet(tp: ModuleType):
    with pytest.raises(TrainingError):
        tp.train_bpe(["hello world"], vocab_size=255, special_tokens=())
    with pytest.raises(TrainingError):
        tp.train_bpe(["hello world"], vocab_size=0, special_tokens=())


def test_reference_vocab_size_below_base_plus_specials():
    with pytest.raises(TrainingError):
        _reference(["hello world"], vocab_size=260, n_special=5)
    with pytest.raises(TrainingError):
        _reference(["hello world"], vocab_size=255)


def test_vocab_size_exactly_base_plus_specials_learns_nothing(tp: ModuleType):
    """The boundary is legal: zero merges, stop reason vocab_size_reached."""
    n = len(tp.DEFAULT_SPECIAL_TOKENS)
    tok = tp.train_bpe(["hello hello hello"], vocab_size=256 + n)
    assert tok.merges == []
    assert tok.training["stop_reason"] == "vocab_size_reached"
    assert tok.training["merges_learned"] == 0
    assert tok.vocab_size == 256 + n
    reference = _reference(["hello hello hello"], vocab_size=256 + n, n_special=n)
    assert (reference.merges, reference.stop_reason) == ([], "vocab_size_reached")


def test_corpus_without_any_pair_is_not_an_error(tp: ModuleType):
    """Single-byte pre-tokens are a corpus; training just finds no pair."""
    tok = tp.train_bpe(["a b c"], vocab_size=300, pattern=r"\S", special_tokens=())
    assert tok.merges == []
    assert tok.training["stop_reason"] == "no_pairs_left"
    reference = _reference(["a b c"], pattern=r"\S")
    assert (reference.merges, reference.stop_reason) == ([], "no_pairs_left")


def test_unknown_tie_break(tp: ModuleType):
    with pytest.raises(ConfigError) as info:
        tp.train_bpe(["hello world"], vocab_size=300, tie_break="first_seen")
    # The message lists the accepted values.
    assert "lowest_pair_ids" in str(info.value)
    assert "subword_nmt" in str(info.value)


def test_reference_unknown_tie_break():
    with pytest.raises(ConfigError):
        _reference(["hello world"], tie_break="first_seen")


def test_invalid_pattern(tp: ModuleType):
    with pytest.raises(ConfigError):
        tp.train_bpe(["hello world"], vocab_size=300, pattern="(unclosed")


def test_reference_invalid_pattern():
    with pytest.raises(ConfigError):
        _reference(["hello world"], pattern="(unclosed")


def test_lone_surrogate_in_corpus(tp: ModuleType):
    with pytest.raises(InvalidInputError):
        tp.train_bpe(["fine text", "broken \ud800 text"], vocab_size=300)


def test_reference_lone_surrogate_in_corpus():
    with pytest.raises(InvalidInputError):
        _reference(["fine text", "broken \udc80 text"])


def test_errors_are_value_errors(tp: ModuleType):
    """Callers that catch ValueError keep working."""
    with pytest.raises(ValueError):
        tp.train_bpe([], vocab_size=300)
    with pytest.raises(ValueError):
        tp.train_bpe(["x"], vocab_size=300, tie_break="nope")


def test_text_the_pattern_skips_is_not_an_empty_corpus(tp: ModuleType):
    """Newlines only, split by a line pattern: bytes but no unit, so no pair to learn."""
    tok = tp.train_bpe(["\n\n", "\n"], vocab_size=300, pattern=UNIT, special_tokens=())
    assert tok.merges == []
    assert tok.training["stop_reason"] == "no_pairs_left"
    assert tok.training["initial_length"] == 0
    reference = _reference(["\n\n", "\n"], pattern=UNIT)
    assert (reference.merges, reference.stop_reason) == ([], "no_pairs_left")


def test_single_string_instead_of_corpus(tp: ModuleType):
    """Iterating a str would train on single characters; refuse it and say what to pass."""
    with pytest.raises(ConfigError):
        tp.train_bpe("hello world", vocab_size=300)
    with pytest.raises(ConfigError):
        _reference("hello world")


@pytest.mark.parametrize("option", [{"min_frequency": 0}, {"max_token_length": 0}])
def test_out_of_range_options(tp: ModuleType, option: dict):
    with pytest.raises(ConfigError):
        tp.train_bpe(["hello world"], vocab_size=300, **option)
    with pytest.raises(ConfigError):
        _reference(["hello world"], **option)
