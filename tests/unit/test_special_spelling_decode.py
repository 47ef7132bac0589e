"""A special token decodes to its spelling on tokenpact's own and tiktoken's byte-level
models, even when every character of the spelling is in GPT-2's byte alphabet (only a
Hugging Face ``tokenizer.json`` ByteLevel decoder maps added tokens through that
alphabet, see tests/conformance for DeepSeek's added ``ø``)."""

from __future__ import annotations

import pytest

import tokenpact as tp

# Every character is in GPT-2's byte alphabet, so the byte-alphabet reading differs
# from the spelling (é would be the single byte 0xE9).
SPELLING = "<|résumé|>"


def _merges_tokenizer() -> tp.Tokenizer:
    return tp.Tokenizer.from_merges([(104, 105)], special_tokens=[SPELLING])


def _ranks_tokenizer() -> tp.Tokenizer:
    ranks = [bytes([b]) for b in range(256)] + [b"hi"]
    return tp.Tokenizer.from_ranks(ranks, pattern="gpt4", special_tokens={SPELLING: 257})


@pytest.mark.parametrize("build", [_merges_tokenizer, _ranks_tokenizer])
def test_special_token_decodes_to_its_spelling(build, tmp_path) -> None:
    tok = build()
    ids = tok.encode("hi" + SPELLING, allowed_special="all")
    assert tok.decode(ids) == "hi" + SPELLING
    assert tok.decode_bytes(ids) == ("hi" + SPELLING).encode()
    tok.save(tmp_path / "t")
    again = tp.load(tmp_path / "t")
    assert again.decode(ids) == "hi" + SPELLING
    assert again.semantic_hash == tok.semantic_hash


def test_tiktoken_agrees() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256}
    enc = tiktoken.Encoding(
        "spelling", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={SPELLING: 257}
    )
    ours = _ranks_tokenizer()
    ids = [256, 257]
    assert ours.decode(ids) == enc.decode(ids) == "hi" + SPELLING
