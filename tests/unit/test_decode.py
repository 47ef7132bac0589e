"""Decoding, token lookup and special-token policy errors (engine)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tokenpact.errors import (
    ConfigError,
    DecodeError,
    InvalidInputError,
    SpecialTokenError,
    UnknownTokenError,
)

# ab, bc, abc, abab (seed 0x07) and the euro sign's first two bytes as ID 260.
EURO_MERGES = [(97, 98), (98, 99), (256, 99), (256, 256), (0xE2, 0x82)]
CORPUS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 3


@pytest.fixture(scope="module")
def euro_tok(tp: ModuleType):
    return tp.Tokenizer.from_merges(EURO_MERGES, pattern="gpt4")


@pytest.fixture(scope="module")
def special_tok(tp: ModuleType):
    return tp.train_bpe(CORPUS, vocab_size=300, special_tokens=tp.DEFAULT_SPECIAL_TOKENS)


# ---- decode -----------------------------------------------------------------------------


def test_strict_decode_of_invalid_utf8(euro_tok):
    for ids in ([260], [0xAC], [0xFF], [97, 0x80, 98]):
        with pytest.raises(DecodeError) as info:
            euro_tok.decode(ids)
        # The message names the lossy alternative.
        assert "replace" in str(info.value)


def test_replace_decode_and_raw_bytes(euro_tok):
    assert euro_tok.decode([97, 0x80, 98], errors="replace") == "a\ufffdb"
    assert euro_tok.decode([0xFF], errors="replace") == "\ufffd"
    # Bytes never fail: they are the piece round trip.
    assert euro_tok.decode_bytes([97, 0x80, 98]) == b"a\x80b"
    assert euro_tok.decode_bytes([260, 0xAC]) == "\u20ac".encode()


def test_empty_id_list(euro_tok):
    assert euro_tok.decode([]) == ""
    assert euro_tok.decode_bytes([]) == b""


def test_unknown_decode_error_policy(euro_tok):
    with pytest.raises(ConfigError):
        euro_tok.decode([97], errors="ignore-everything")


@pytest.mark.parametrize("bad", ["vocab_size", -1, 2**32 + 97], ids=["end", "negative", "wrap"])
def test_unknown_id(euro_tok, bad):
    # 2**32 + 97 would wrap to a valid ID ("a") under a careless 32-bit cast.
    token_id = euro_tok.vocab_size if bad == "vocab_size" else bad
    with pytest.raises(UnknownTokenError) as info:
        euro_tok.decode([97, token_id])
    assert str(token_id) in str(info.value)
    with pytest.raises(UnknownTokenError):
        euro_tok.decode_bytes([token_id])
    with pytest.raises(UnknownTokenError):
        euro_tok.token_bytes(token_id)


# ---- token lookup -----------------------------------------------------------------------


def test_token_id_and_bytes(euro_tok):
    assert euro_tok.token_id("abc") == 258
    assert euro_tok.token_id(b"abab") == 259
    assert euro_tok.token_id(b"\xe2\x82") == 260
    assert euro_tok.token_id("a") == 97
    assert euro_tok.token_bytes(258) == b"abc"


@pytest.mark.parametrize("piece", ["abcd", b"\xe2\x82\xac", "", "zzzz-not-a-token"])
def test_token_id_of_unknown_piece(euro_tok, piece):
    with pytest.raises(UnknownTokenError):
        euro_tok.token_id(piece)


# ---- special-token policy ---------------------------------------------------------------


def test_special_spelling_is_plain_text_by_default(special_tok):
    ids = special_tok.encode("the cat <|eot|> sat")
    assert not set(ids) & set(special_tok.special_tokens.values())
    assert special_tok.decode(ids) == "the cat <|eot|> sat"


def test_allowed_special_emits_the_id(special_tok):
    eot = special_tok.special_tokens["<|eot|>"]
    assert eot in special_tok.encode("the cat <|eot|>", allowed_special="all")
    assert eot in special_tok.encode("the cat <|eot|>", allowed_special={"<|eot|>"})
    # Allowing a different spelling does not allow this one.
    assert eot not in special_tok.encode("the cat <|eot|>", allowed_special={"<|bos|>"})


@pytest.mark.parametrize("disallowed", ["all", {"<|eot|>"}])
def test_disallowed_special_raises_and_names_the_fix(special_tok, disallowed):
    with pytest.raises(SpecialTokenError) as info:
        special_tok.encode("the cat <|eot|> sat", disallowed_special=disallowed)
    message = str(info.value)
    assert "<|eot|>" in message
    assert "allowed_special" in message
    assert isinstance(info.value, ValueError)


def test_disallowed_special_passes_clean_text(special_tok):
    assert special_tok.encode("the cat sat", disallowed_special="all") == special_tok.encode(
        "the cat sat"
    )


# ---- invalid text -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a\ud800b", "\udfff", "ok \udc80"])
def test_lone_surrogate_raises_invalid_input(euro_tok, text):
    with pytest.raises(InvalidInputError):
        euro_tok.encode(text)
