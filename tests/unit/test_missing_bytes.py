"""Byte-level vocabularies without single-byte tokens for bytes UTF-8 never contains.

0xC0, 0xC1 and 0xF5..0xFF cannot occur in UTF-8 text, so published vocabularies often
omit them and Hugging Face loads such files. tokenpact loads them too; every other byte
still needs its token (a typed error names the byte). Decision (docs/PIPELINE.md): the
missing bytes have no ID, so ``token_bytes``/``decode`` never produce them and ``encode``
(str input, always valid UTF-8) never needs them; there is no bytes-input encoder.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.errors import ArtifactError, ConfigError
from tokenpact.reference import bpe as ref

IMPOSSIBLE = {0xC0, 0xC1, *range(0xF5, 0x100)}
BASE = [bytes([b]) for b in range(256) if b not in IMPOSSIBLE]
RANKS = BASE + [b"th", b"the", b" the", b"in", b"ing", "é".encode(), "東京".encode()[:3]]


def test_ranks_without_impossible_bytes_load_and_encode() -> None:
    tok = tp.Tokenizer.from_ranks(RANKS, pattern="gpt4")
    assert tok.vocab_size == len(RANKS)
    text = "the thing in the café — 東京 \U0001f40d"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert all(tok.token_bytes(i) == RANKS[i] for i in ids)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=80))
def test_engine_equals_reference_without_impossible_bytes(text: str) -> None:
    tok = tp.Tokenizer.from_ranks(RANKS, pattern="gpt4")
    table = ref.tiktoken_merge_rank(RANKS)
    expected = ref.encode_text_reference(
        text,
        "gpt4",
        table.merge_rank,
        byte_ids=table.byte_ids,
        piece_ids=table.piece_ids,
        whole_piece_first=True,
    )
    assert tok.encode(text) == expected


def test_a_byte_that_utf8_uses_is_still_required() -> None:
    ranks = [r for r in RANKS if r != b"A"]
    with pytest.raises(ArtifactError, match="0x41"):
        tp.Tokenizer.from_ranks(ranks, pattern="gpt4")
    with pytest.raises(ConfigError, match="65"):
        ref.tiktoken_merge_rank(ranks)
