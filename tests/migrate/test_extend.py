"""Append-only extension: old IDs, ranks and specials are kept; engine == reference."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact import migrate
from tokenpact.errors import ConfigError

WORDS = st.text(alphabet="abcde =10", min_size=1, max_size=12)
CORPUS = st.lists(WORDS, min_size=1, max_size=25)


def _train(texts: list[str], merges: int = 12) -> tp.Tokenizer:
    return tp.train_bpe(texts * 2, vocab_size=256 + 5 + merges, min_frequency=2)


def _new_pairs(old: tp.Tokenizer, new: tp.Tokenizer) -> set[tuple[int, int]]:
    return set(new.merges[len(old.merges) :])


def _touches_new_merges(old: tp.Tokenizer, new: tp.Tokenizer, text: str) -> bool:
    """Does the old segmentation of some pre-token hold a pair that a new merge joins?"""
    pairs = _new_pairs(old, new)
    for start, end in old.pretokenize(text):
        ids = old.encode(text[start:end])
        if any(p in pairs for p in zip(ids, ids[1:], strict=False)):
            return True
    return False


def test_seed_example_layout() -> None:
    """compact -> balanced: the four appended merges get the IDs after the specials."""
    base = ["the cat sat on the mat"] * 4
    tok = _train(base, merges=7)
    more = ["er re == 10 er re == 10 error reread ==10"] * 6
    new = migrate.extend_bpe(tok, more, add_merges=4)
    assert new.vocab_size == tok.vocab_size + 4
    assert new.special_tokens == tok.special_tokens
    assert new.merges[: len(tok.merges)] == tok.merges
    for i in range(tok.vocab_size):
        assert new.token_bytes(i) == tok.token_bytes(i)
    added = [new.token_bytes(i) for i in range(tok.vocab_size, new.vocab_size)]
    assert all(len(piece) >= 2 for piece in added)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(base=CORPUS, extra=CORPUS, add=st.integers(0, 10), probe=st.lists(WORDS, max_size=8))
def test_engine_matches_reference_and_old_text_is_stable(
    base: list[str], extra: list[str], add: int, probe: list[str]
) -> None:
    tok = _train(base)
    fast = migrate.extend_merges(tok, extra, add_merges=add)
    slow = migrate.extend_merges_reference(tok, extra, add_merges=add)
    assert fast == slow
    new = migrate.build_extended(tok, fast)
    assert new.merges[: len(tok.merges)] == tok.merges
    assert new.special_tokens == tok.special_tokens
    for i in range(tok.vocab_size):
        assert new.token_bytes(i) == tok.token_bytes(i)
    for text in [*base, *probe]:
        ids = new.encode(text)
        assert new.decode(ids) == text
        if not _touches_new_merges(tok, new, text):
            assert ids == tok.encode(text)


def test_first_new_id_reserves_a_range() -> None:
    tok = _train(["aaa bbb aaa bbb ccc"] * 3, merges=3)
    new = migrate.extend_bpe(
        tok, ["dddd eeee dddd eeee"] * 3, add_merges=2, first_new_id=tok.vocab_size + 3
    )
    assert new.vocab_size == tok.vocab_size + 5
    assert new.encode("dddd")[0] >= tok.vocab_size + 3
    assert new.encode("<|tokenpact_reserved_270|>") != [tok.vocab_size]  # never from text
    with pytest.raises(ConfigError, match="first_new_id"):
        migrate.extend_bpe(tok, ["dd"], add_merges=1, first_new_id=tok.vocab_size - 1)


def test_add_tokens_appends_and_keeps_roles() -> None:
    tok = _train(["hello world"] * 3, merges=3)
    new = migrate.add_tokens(tok, ["<|tool|>"], special=True)
    assert new.special_tokens["<|tool|>"] == tok.vocab_size
    assert new.bos_id == tok.bos_id and new.eos_id == tok.eos_id and new.pad_id == tok.pad_id
    assert new.encode("<|tool|>") != [tok.vocab_size]  # untrusted text stays text
    assert new.encode("<|tool|>", allowed_special="all") == [tok.vocab_size]
    plain = migrate.add_tokens(tok, ["hello world"])
    # Added tokens, special or not, match only with permission (tokenpact's trust rule).
    assert plain.encode("say hello world", allowed_special={"hello world"})[-1] == tok.vocab_size
    assert migrate.id_space(plain) == tok.vocab_size + 1
    with pytest.raises(ConfigError, match="already a token"):
        migrate.add_tokens(new, ["<|tool|>"])


def test_extend_bpe_rejects_non_bpe_and_bad_counts() -> None:
    tok = _train(["hello world"] * 3, merges=3)
    with pytest.raises(ConfigError, match="add_merges"):
        migrate.extend_bpe(tok, ["x"], add_merges=-1)
    with pytest.raises(ConfigError, match="iterable of strings"):
        migrate.extend_bpe(tok, "hello", add_merges=1)


def test_extend_hf_gpt2_style_layout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A tokenizer.json numbering bytes like GPT-2 is extended in its own ID space."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    hf.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 20, trainer)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    try:
        tok = tp.Tokenizer.from_hf(path)
        migrate.extend_merges(tok, ["x"], add_merges=0)
    except ConfigError:
        pytest.skip("this tokenizer.json layout is not extensible (multi-step pre-tokenizer)")
    new = migrate.extend_bpe(tok, ["zebra zebra zebra quiz quiz"] * 5, add_merges=3)
    for i in range(tok.vocab_size):
        assert new.token_bytes(i) == tok.token_bytes(i)
    assert new.merges[: len(tok.merges)] == tok.merges
