"""Transition classes, the prefix proof, changed documents, compression and reachability."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact import migrate
from tokenpact.errors import ConfigError

OLD_MERGES = [(c, c) for c in b"abcdfghijklm"]
NEW_MERGES = [(101, 114), (114, 101), (61, 61), (49, 48)]
CORPUS = ["error here", "aaa bbb", "x == 10", "plain"]


def _old() -> tp.Tokenizer:
    return tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=tp.DEFAULT_SPECIAL_TOKENS)


def test_append_only_with_prefix_proof_and_measurements() -> None:
    old = _old()
    new = migrate.build_extended(old, NEW_MERGES)
    report = migrate.diff(old, new, CORPUS)
    assert report.transition == "append-only"
    assert report.prefix_proof["holds"] and report.prefix_proof["problems"] == []
    # "error here" and "x == 10" use the new merges; "aaa bbb" and "plain" do not.
    assert report.changed_documents == 2
    assert [e["document"] for e in report.examples] == [0, 2]
    assert report.new_tokens < report.old_tokens
    assert report.compression_gain == pytest.approx(1 - report.new_tokens / report.old_tokens)
    pieces = {d["piece"]: d["count"] for d in report.new_ids}
    # "er" wins over "re" (lower rank) in "error" and "here": "re" never forms.
    assert pieces["er"] == 2 and pieces["re"] == 0 and pieces["=="] == 1
    assert report.unreachable_ids == [274]  # IDs 268..272 are the specials, 273.. new
    assert report.to_dict()["corpus"]["compression_gain"] > 0


def test_repackage_and_byte_identical(tmp_path: Path) -> None:
    old = _old()
    assert migrate.diff(old, old, CORPUS).transition == "byte-identical"
    old.export_hf(tmp_path / "tokenizer.json")
    repacked = tp.Tokenizer.from_hf(tmp_path / "tokenizer.json")
    report = migrate.diff(old, repacked, CORPUS)
    assert report.transition == "repackage", report.to_dict()
    assert report.changed_documents == 0 and report.golden_differences == []


def test_template_only() -> None:
    old = _old()
    report = migrate.diff(
        old,
        old,
        CORPUS,
        old_template={"source": "a", "modes": []},
        new_template={"source": "b", "modes": []},
    )
    assert report.transition == "template-only"


def test_incompatible_when_ids_move() -> None:
    old = _old()
    retrained = tp.Tokenizer.from_merges(
        OLD_MERGES + NEW_MERGES, special_tokens=tp.DEFAULT_SPECIAL_TOKENS
    )
    report = migrate.diff(old, retrained, CORPUS)
    assert report.transition == "incompatible"
    assert any("ID 268" in p for p in report.prefix_proof["problems"])
    with pytest.raises(ConfigError):
        migrate.diff(old, retrained, "one string")
