"""Damaged Unigram / Metaspace / Precompiled nodes in tokenizer.json raise ArtifactError
naming the field (and the file); valid ones load."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp


def _valid() -> dict[str, Any]:
    return {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Nmt"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "Unigram",
            "unk_id": 0,
            "byte_fallback": False,
            "vocab": [["<unk>", 0.0], ["\u2581", -1.0], ["a", -1.5], ["\u2581a", -1.0]],
        },
    }


def _charsmap(blob: bytes) -> dict[str, Any]:
    return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_valid_file_loads(tmp_path: Path) -> None:
    tok = tp.Tokenizer.load(_write(tmp_path, _valid()))
    assert tok.encode("a a") == [3, 3]
    assert tok.encode("b") == [1, 0]


def _set_normalizer(node: dict[str, Any]):
    return lambda d: d.update(normalizer=node)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda d: d["model"].update(unk_id=4), "model.unk_id"),
        (lambda d: d["model"].update(unk_id=-1), "model.unk_id"),
        (lambda d: d["model"]["vocab"].append(["a", -2.0]), "model.vocab.*'a' appears twice"),
        (lambda d: d["model"]["vocab"].append(["b"]), r"model.vocab\[4\]"),
        (lambda d: d["model"]["vocab"].append(["b", "x"]), r"model.vocab\[4\]"),
        (lambda d: d["model"].update(vocab=[]), "model.vocab"),
        (_set_normalizer(_charsmap(b"\x01")), "precompiled_charsmap"),
        (_set_normalizer(_charsmap(b"\xff\x00\x00\x00abcd")), "precompiled_charsmap"),
        (_set_normalizer(_charsmap(b"\x04\x00\x00\x00\x00\x00\x00\x00\xff\xfe")), "not UTF-8"),
        (
            _set_normalizer({"type": "Precompiled", "precompiled_charsmap": "@@not base64"}),
            "precompiled_charsmap",
        ),
        (_set_normalizer({"type": "Precompiled", "precompiled_charsmap": None}), "charsmap"),
        (lambda d: d["pre_tokenizer"].update(replacement="__"), "replacement"),
        (lambda d: d["pre_tokenizer"].update(prepend_scheme="sometimes"), "prepend_scheme"),
        (lambda d: d["pre_tokenizer"].update(add_prefix_space=False), "add_prefix_space"),
        (
            lambda d: d.update(
                pre_tokenizer={
                    "type": "Sequence",
                    "pretokenizers": [{"type": "Whitespace"}, d["pre_tokenizer"]],
                }
            ),
            r"pre_tokenizer\[1\]: Metaspace after another",
        ),
        (lambda d: d.update(pre_tokenizer={"type": "UnicodeScripts"}), "UnicodeScripts"),
    ],
)
def test_damaged_files_raise_artifact_error(tmp_path: Path, edit, match: str) -> None:
    data = copy.deepcopy(_valid())
    edit(data)
    path = _write(tmp_path, data)
    with pytest.raises(tp.ArtifactError, match=match) as info:
        tp.Tokenizer.load(path)
    assert str(path) in str(info.value)


def test_prefix_space_must_come_first(tmp_path: Path) -> None:
    from tokenpact.formats.hf_json import parse_pre_tokenizer

    node = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
        ],
    }
    with pytest.raises(tp.ArtifactError, match="add_prefix_space=true.* after another"):
        parse_pre_tokenizer(tmp_path / "tokenizer.json", node)


def test_unknown_character_without_unk_id_is_an_input_error(tmp_path: Path) -> None:
    data = copy.deepcopy(_valid())
    data["model"]["unk_id"] = None
    tok = tp.Tokenizer.load(_write(tmp_path, data))
    assert tok.encode("a") == [3]
    with pytest.raises(tp.InvalidInputError, match="no unk_id"):
        tok.encode("z")
    with pytest.raises(tp.InvalidInputError, match="no unk_id"):
        tok.encode_structured("a z")


def test_garbled_charsmap_never_panics(tmp_path: Path) -> None:
    """A charsmap whose trie is noise loads (HF loads it too) and encodes without crashing."""
    import random

    rng = random.Random(7)
    for _ in range(20):
        units = bytes(rng.randrange(256) for _ in range(4 * rng.randint(1, 64)))
        pool = "xé\u2581\x00".encode() * rng.randint(0, 4)
        data = copy.deepcopy(_valid())
        data["normalizer"] = _charsmap(len(units).to_bytes(4, "little") + units + pool)
        tok = tp.Tokenizer.load(_write(tmp_path, data))
        for text in ("abc", "é\u0301 x", "\x00\x01", "日本🙂", ""):
            tok.encode_structured(text)
