"""Seed 000 0x08 WordPiece worked example ("unwanted"), reference and engine.

The engine runs from a hand-written ``tokenizer.json`` (WordPiece model, whitespace
pre-tokenizer, optional Lowercase normalizer), so no peer library is needed.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tokenpact.reference import wordpiece_reference

# initial root: un, runn, play, ","; continuation root: ##want, ##ed, ##ing, ##er.
VOCAB = {
    "[UNK]": 0, "un": 1, "##want": 2, "##ed": 3, "runn": 4, "##ing": 5, "play": 6,
    "##er": 7, ",": 8,
}  # fmt: skip


def _load(tp: ModuleType, tmp_path: Path, lowercase: bool) -> Any:
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": 0, "content": "[UNK]", "special": True, "normalized": False}
            | {"single_word": False, "lstrip": False, "rstrip": False}
        ],
        "normalizer": {"type": "Lowercase"} if lowercase else None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": VOCAB,
        },
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return tp.Tokenizer.load(path)


def test_reference_unwanted() -> None:
    assert [t[0] for t in wordpiece_reference("unwanted", VOCAB, unk="[UNK]")] == [1, 2, 3]
    assert wordpiece_reference("want", VOCAB, unk="[UNK]") == [(0, 0, 4)]
    assert wordpiece_reference("playingx", VOCAB, unk="[UNK]") == [(0, 0, 8)]
    assert [t[0] for t in wordpiece_reference("running", VOCAB, unk="[UNK]")] == [4, 5]
    assert wordpiece_reference("un" * 51, VOCAB, unk="[UNK]") == [(0, 0, 102)]


def test_engine_unwanted(tp: ModuleType, tmp_path: Path) -> None:
    tok = _load(tp, tmp_path, lowercase=False)
    assert tok.encode("unwanted") == [1, 2, 3]
    enc = tok.encode_structured("unwanted want playingx Unwanted running")
    assert enc.ids == [1, 2, 3, 0, 0, 0, 4, 5]
    assert enc.offsets == [(0, 2), (2, 6), (6, 8), (9, 13), (14, 22), (23, 31), (32, 36)] + [
        (36, 39)
    ]
    assert enc.tokens[:3] == ["un", "##want", "##ed"]
    assert enc.origins == ["content"] * 8  # a model-emitted [UNK] is content
    assert tok.decode([1, 2, 3, 8, 4, 5]) == "unwanted, running"


def test_engine_lowercase_then_match(tp: ModuleType, tmp_path: Path) -> None:
    """Seed: "Unwanted" is [UNK] cased but succeeds after a declared lowercase step."""
    tok = _load(tp, tmp_path, lowercase=True)
    enc = tok.encode_structured("Unwanted")
    assert enc.ids == [1, 2, 3]
    assert enc.offsets == [(0, 2), (2, 6), (6, 8)]


@pytest.mark.parametrize("word", ["unwanteded", "unwant", "runnun", "ununun", "", "x"])
def test_engine_equals_reference(tp: ModuleType, tmp_path: Path, word: str) -> None:
    tok = _load(tp, tmp_path, lowercase=False)
    enc = tok.encode_structured(word)
    want = wordpiece_reference(word, VOCAB, unk="[UNK]")
    assert list(zip(enc.ids, enc.offsets, strict=True)) == [(i, (s, e)) for i, s, e in want]
