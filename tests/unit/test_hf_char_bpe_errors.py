"""Damaged or unsupported BPE-over-characters files (no ByteLevel) raise ArtifactError
naming the file and the field; supported variants load."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp

BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _valid() -> dict[str, Any]:
    pieces = ["<unk>", "a", "##b", "##c", "ab", "abc", *BYTES]
    return {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": {
            "type": "Sequence",
            "decoders": [{"type": "ByteFallback"}, {"type": "WordPiece", "prefix": "##"}],
        },
        "model": {
            "type": "BPE",
            "unk_token": "<unk>",
            "continuing_subword_prefix": "##",
            "byte_fallback": True,
            "vocab": {p: i for i, p in enumerate(pieces)},
            "merges": ["a ##b", ["ab", "##c"]],
        },
    }


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_valid_file_loads_and_round_trips(tmp_path: Path) -> None:
    tok = tp.Tokenizer.load(_write(tmp_path, _valid()))
    ids = tok.encode("abc ab é")
    b = 6  # first byte piece
    assert ids == [5, 4, b + 0xC3, b + 0xA9]
    assert tok.decode(ids) == "abc ab é"  # ByteFallback, then WordPiece spacing
    assert tok.token_bytes(5) == b"abc"


def _decoder(node: dict[str, Any]):
    return lambda d: d.update(decoder=node)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda d: d["model"]["merges"].append("abc ##b"), r"model.merges\[2\].*[\"']abcb[\"']"),
        (lambda d: d["model"]["merges"].append("a ##z"), r"model.merges\[2\].*[\"']##z[\"']"),
        (lambda d: d["model"]["merges"].append("a 中"), r"model.merges\[2\].*splits a character"),
        (lambda d: d["model"]["merges"].append(7), r"model.merges\[2\]"),
        (lambda d: d["model"]["vocab"].pop("<0x41>"), "model.byte_fallback.*<0x41>"),
        (lambda d: d["model"].update(unk_token="[UNK]"), "model.unk_token"),
        (lambda d: d["model"].update(dropout=1.5), "model.dropout"),
        (_decoder({"type": "Fancy"}), "decoder: component type 'Fancy'"),
        (_decoder({"type": "ByteLevel"}), "decoder: component type 'ByteLevel'"),
        (
            _decoder({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Odd"}]}),
            r"decoder.decoders\[1\]: component type 'Odd'",
        ),
        (_decoder({"type": "Strip", "content": "ab", "start": 1}), "decoder.content"),
        (_decoder({"type": "Replace", "content": " "}), "Replace has no pattern"),
        (lambda d: d.update(pre_tokenizer={"type": "Fancy"}), "pre_tokenizer"),
    ],
)
def test_damaged_files_raise_artifact_error(tmp_path: Path, edit, match: str) -> None:
    data = copy.deepcopy(_valid())
    edit(data)
    path = _write(tmp_path, data)
    with pytest.raises(tp.ArtifactError, match=match) as info:
        tp.Tokenizer.load(path)
    assert str(path) in str(info.value)


def test_byte_level_bpe_keeps_rejecting_character_options(tmp_path: Path) -> None:
    data = copy.deepcopy(_valid())
    data["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
    data["decoder"] = {"type": "ByteLevel"}
    with pytest.raises(tp.ArtifactError, match="model.continuing_subword_prefix"):
        tp.Tokenizer.load(_write(tmp_path, data))


def test_dropout_loads_and_is_recorded(tmp_path: Path) -> None:
    data = copy.deepcopy(_valid())
    data["model"]["dropout"] = 0.25
    tok = tp.Tokenizer.load(_write(tmp_path, data))
    assert tok.source["dropout"] == 0.25
    assert tok.encode("abc") == [5]  # deterministic: no merge is dropped
