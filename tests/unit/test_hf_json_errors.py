"""Damaged or unsupported tokenizer.json files raise ArtifactError naming file, field, fix."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.formats.hf_json import byte_encoder


def _mapped(piece: bytes) -> str:
    return "".join(byte_encoder()[b] for b in piece)


def _valid() -> dict[str, Any]:
    vocab = {_mapped(bytes([b])): b for b in range(256)}
    vocab[_mapped(b"ab")] = 256
    vocab[_mapped(b"abc")] = 257
    return {
        "version": "1.0",
        "added_tokens": [
            {
                "id": 258,
                "content": "<|eos|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            },
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": ["a b", "ab c"]},
    }


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_valid_file_loads(tmp_path: Path) -> None:
    tok = tp.Tokenizer.load(_write(tmp_path, _valid()))
    assert tok.encode("abc ab") == [257, 32, 256]


def test_added_token_written_over_a_vocabulary_id_gets_tokenizers_id(tmp_path: Path) -> None:
    # tokenizers ignores the written ID of a token that is not in the vocabulary and gives
    # it the next free one (issue 13: the two libraries used to disagree silently).
    data = copy.deepcopy(_valid())
    data["added_tokens"][0]["id"] = 256
    with pytest.warns(tp.errors.AddedTokenIdWarning, match="written as 256 and gets 258") as got:
        tok = tp.Tokenizer.load(_write(tmp_path, data))
    assert tok.special_tokens["<|eos|>"] == 258
    # The warning names the caller's line, not a frame inside tokenpact.
    assert [w.filename for w in got] == [__file__]


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda d: d["model"].update(type="Fancy"), "model: component type 'Fancy'"),
        (lambda d: d.update(decoder={"type": "Fancy"}), "decoder: component type 'Fancy'"),
        (lambda d: d["model"]["merges"].append("abc zz"), "not in the vocabulary"),
        (lambda d: d["model"]["merges"].append("abc"), "separated by a space"),
        (lambda d: d["model"]["vocab"].update({_mapped(b"zz"): 5}), "used twice"),
        (lambda d: d["model"]["vocab"].update({_mapped(b"zz"): 300}), "has no piece"),
        (lambda d: d["added_tokens"][0].update(lstrip="yes"), r"added_tokens\[0\]\.lstrip"),
        (lambda d: d["added_tokens"][0].update(rstrip=1), r"added_tokens\[0\]\.rstrip"),
        (lambda d: d["added_tokens"][0].update(single_word=None), r"\[0\]\.single_word"),
        (lambda d: d["added_tokens"][0].update(normalized="false"), r"\[0\]\.normalized"),
        (lambda d: d["added_tokens"][0].update(special=0), r"added_tokens\[0\]\.special"),
    ],
)
def test_damaged_files_raise_artifact_error(tmp_path: Path, edit, match: str) -> None:
    data = copy.deepcopy(_valid())
    edit(data)
    path = _write(tmp_path, data)
    with pytest.raises(tp.ArtifactError, match=match) as info:
        tp.Tokenizer.load(path)
    assert str(path) in str(info.value)


def test_truncated_json_raises_artifact_error(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_valid())[:500], encoding="utf-8")
    with pytest.raises(tp.ArtifactError, match="cannot read tokenizer.json"):
        tp.Tokenizer.load(path)


def test_added_token_flags_are_loaded_and_hashed(tmp_path: Path) -> None:
    """Flags change matching, so they are part of the config and the semantic hash."""
    plain = tp.Tokenizer.load(_write(tmp_path, _valid()))
    data = copy.deepcopy(_valid())
    data["added_tokens"][0].update(lstrip=True)
    flagged = tp.Tokenizer.load(_write(tmp_path, data))
    assert plain.added_token_flags == {} and "added_token_flags" not in plain.to_config()
    assert flagged.added_token_flags["<|eos|>"] == tp.AddedTokenFlags(lstrip=True)
    assert flagged.to_config()["added_token_flags"] == [
        {"id": 258, "content": "<|eos|>", "single_word": False, "lstrip": True,
         "rstrip": False, "normalized": False}
    ]  # fmt: skip
    assert flagged.semantic_hash != plain.semantic_hash
    # The absorbed spaces belong to the token: no space token before it.
    enc = flagged.encode_structured("ab  <|eos|>", allowed_special="all")
    assert enc.ids == [256, 258] and enc.offsets == [(0, 2), (2, 11)]
    assert enc.origins == ["content", "control"]
    assert plain.encode("ab  <|eos|>", allowed_special="all") == [256, 32, 32, 258]
