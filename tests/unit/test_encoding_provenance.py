"""Every Encoding names the tokenizer (and chat template) behind its IDs (seed 0x04A).

The tokenizer hash is computed once per tokenizer and only when read: an encode never
pays for it.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import pickle
import weakref
from typing import Any

import pytest

import tokenpact as tp
import tokenpact.contract
from tokenpact.encoding import Encoding, EncodingProvenance
from tokenpact.truncation import Padding, Truncation

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Grüße aus Köln — 東京の天気は晴れです。",
    "def encode(self, text):\n    return [self.vocab[c] for c in text]\n",
] * 10


def _tokenizer(vocab_size: int = 300) -> tp.Tokenizer:
    return tp.train_bpe(TEXTS, vocab_size=vocab_size, special_tokens=("<pad>", "<s>", "</s>"))


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Counts how often a tokenizer's semantic hash is actually computed."""
    calls: list[Any] = []
    real = tokenpact.contract.semantic_hash

    def counting(tok: Any) -> str:
        calls.append(tok)
        return real(tok)

    monkeypatch.setattr(tokenpact.contract, "semantic_hash", counting)
    return calls


def _every_path(tok: tp.Tokenizer) -> list[Encoding]:
    """Encodings from every structured path, overflow windows included."""
    single = tok.encode_structured(TEXTS[0])
    pair = tok.encode_structured(TEXTS[0], TEXTS[1])
    cut = tok.encode_structured(TEXTS[0], truncation=Truncation(max_length=8, stride=2))
    padded = tok.encode_structured(TEXTS[2], padding=Padding(length=200, pad_id=0))
    batch = tok.encode_structured_batch(TEXTS[:3], padding=Padding(pad_id=0))
    bytes_ = tok.encode_structured(TEXTS[1], coordinate="raw_utf8_bytes")
    assert cut.overflowing
    return [single, pair, cut, *cut.overflowing, padded, *batch, bytes_]


def test_every_structured_path_carries_the_tokenizer_hash(hash_calls: list[Any]) -> None:
    tok = _tokenizer()
    encodings = _every_path(tok)
    for _ in range(20):
        encodings.append(tok.encode_structured(TEXTS[1]))
    assert hash_calls == []  # encoding never computed the hash
    assert {id(e.provenance) for e in encodings} == {id(encodings[0].provenance)}
    assert all(e.tokenizer_hash == tok.semantic_hash for e in encodings)
    assert all(e.template_hash is None for e in encodings)
    assert len(hash_calls) == 1  # computed once, on first read, for all of them
    later = tok.encode_structured(TEXTS[2])
    assert later.tokenizer_hash == tok.semantic_hash and len(hash_calls) == 1


def test_different_tokenizers_different_hashes_and_unequal_encodings() -> None:
    a, b = _tokenizer(300), _tokenizer(320)
    text = "a"  # one byte: the same ID under both vocabularies
    ea, eb = a.encode_structured(text), b.encode_structured(text)
    assert ea.ids == eb.ids
    assert ea.tokenizer_hash != eb.tokenizer_hash
    assert ea != eb  # the provenance is part of what an encoding is
    assert ea == a.encode_structured(text)


def test_pickle_copy_and_asdict_hold_strings_not_the_tokenizer(hash_calls: list[Any]) -> None:
    tok = _tokenizer()
    enc = tok.encode_structured(TEXTS[0], truncation=Truncation(max_length=6))
    blob = pickle.dumps(enc)  # a Tokenizer does not pickle; the provenance resolves first
    back = pickle.loads(blob)
    assert back == enc and back.tokenizer_hash == tok.semantic_hash
    assert back.overflowing[0].tokenizer_hash == tok.semantic_hash
    assert copy.deepcopy(enc) == enc
    assert dataclasses.asdict(enc)["provenance"] == enc.provenance
    assert enc.provenance is not None
    assert enc.provenance.to_json() == {"tokenizer_hash": tok.semantic_hash, "template_hash": None}
    assert "tokenizer_hash='sha256:" in repr(enc.provenance)
    assert len(hash_calls) == 1


def test_an_encoding_outlives_its_tokenizer_and_the_tokenizer_is_collectable() -> None:
    tok = _tokenizer()
    expected = tok.semantic_hash  # computed on another instance below
    fresh = _tokenizer()
    enc = fresh.encode_structured(TEXTS[0])
    assert "<deferred>" in repr(enc.provenance)
    del fresh
    assert enc.tokenizer_hash == expected  # the unresolved provenance kept what it needs
    gone = _tokenizer()
    ref = weakref.ref(gone)
    gone.encode_structured(TEXTS[0])  # encoding dropped, hash never read
    del gone
    gc.collect()
    assert ref() is None


def test_hand_built_encoding_has_no_provenance() -> None:
    enc = Encoding(
        ids=[1],
        tokens=["a"],
        offsets=[(0, 1)],
        coordinate="raw_codepoints",
        special_tokens_mask=[0],
        origins=["content"],
        attention_mask=[1],
        type_ids=[0],
        sequence_ids=[0],
        original_length=1,
    )
    assert enc.provenance is None and enc.tokenizer_hash is None and enc.template_hash is None
    stamped = dataclasses.replace(enc, provenance=EncodingProvenance("sha256:" + "a" * 64))
    assert stamped.tokenizer_hash == "sha256:" + "a" * 64 and stamped != enc
