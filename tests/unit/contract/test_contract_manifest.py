"""manifest.json: what it records, its JSON Schema, and the relation checker."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tokenpact.contract import build_manifest, check_manifest, validate_special_ids
from tokenpact.contract.example import example_files, example_golden
from tokenpact.contract.hashing import semantic_hash
from tokenpact.contract.schema import load_schema, manifest_errors
from tokenpact.special import DEFAULT_SPECIAL_TOKENS


@pytest.fixture()
def manifest(config: dict[str, Any]) -> dict[str, Any]:
    return build_manifest(config, files=example_files(), golden=example_golden())


def test_schema_is_draft_2020_12_and_valid() -> None:
    import jsonschema

    schema = load_schema("manifest.schema.json")
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_built_manifest_validates_and_checks(manifest: dict[str, Any], config: Any) -> None:
    assert manifest_errors(manifest) == []
    report = check_manifest(manifest, config=config, golden=example_golden())
    assert report.ok, report.format()


def test_manifest_records_the_toy_facts(manifest: dict[str, Any], config: Any) -> None:
    assert manifest["tokenizer"]["semantic_hash"] == semantic_hash(config)
    assert manifest["tokenizer_id"] == "tok-" + semantic_hash(config)[7:23]
    assert manifest["compatibility"] == {
        "max_id": 11,
        "required_rows": 12,
        "stable_id_prefix": 12,
        "model_config_hash": None,
    }
    assert manifest["special_tokens"]["ids"] == {
        "bos": 9,
        "eos": 10,
        "pad": None,
        "unk": None,
        "eot": 11,
    }
    assert manifest["special_tokens"]["stop_ids"] == [10, 11]
    assert manifest["model"]["model_size"] == 9
    assert manifest["model"]["merges"] == 4
    assert manifest["postprocessor_and_decoder"]["automatic_insertions"] == [
        {"position": "start", "token": "<|bos|>", "id": 9, "when": "add_special_tokens"}
    ]
    assert manifest["tests"]["cases"] == 4


def test_training_record_is_summarized_with_exact_decimals(config: Any) -> None:
    training = {
        "config": {"vocab_size": 12, "min_frequency": 2, "dropout": 0.1},
        "corpus": {"documents": 3, "bytes": 22, "digest": "sha256-multiset:ab"},
        "stop_reason": "vocab_size_reached",
        "merges_learned": 4,
        "seconds": 0.25,
    }
    manifest = build_manifest(config, files=example_files(), training=training)
    assert manifest["training"] == {
        "corpus": {"digest": "sha256-multiset:ab", "documents": 3, "bytes": 22},
        "trainer_flags_and_seed": {"vocab_size": 12, "min_frequency": 2, "dropout": "0.1"},
        "stop_reason": "vocab_size_reached",
        "merges_learned": 4,
    }
    assert manifest_errors(manifest) == []


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("postprocessor_and_decoder", "decoder"), {}, "decoder"),
        (("tokenizer", "semantic_hash"), "sha256:xyz", "semantic_hash"),
        (("schema_version",), 2, "schema_version"),
        (("special_tokens", "literal_text_policy"), "sometimes", "literal_text_policy"),
        (("input", "invalid_input_policy"), "ignore", "invalid_input_policy"),
        (
            ("tokenizer", "files"),
            [{"path": "../x", "sha256": "sha256:" + "0" * 64, "bytes": 1}],
            "files",
        ),
    ],
)
def test_schema_rejects_bad_manifests(
    manifest: dict[str, Any], path: tuple[str, ...], value: Any, needle: str
) -> None:
    bad = copy.deepcopy(manifest)
    target = bad
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    errors = manifest_errors(bad)
    assert errors and any(needle in e for e in errors), errors


def test_schema_rejects_missing_and_extra_fields(manifest: dict[str, Any]) -> None:
    bad = copy.deepcopy(manifest)
    del bad["training"]
    bad["surprise"] = 1
    errors = manifest_errors(bad)
    assert any("training" in e for e in errors) and any("surprise" in e for e in errors)


def test_relation_checks_catch_drift(manifest: dict[str, Any], config: Any) -> None:
    changed = copy.deepcopy(config)
    changed["model"]["merges"].reverse()
    report = check_manifest(manifest, config=changed)
    assert report.failed_names == {"manifest.semantic_hash"}
    assert "merge ranks" in report.failures[0].message


def test_relation_checks_catch_internal_inconsistency(manifest: dict[str, Any]) -> None:
    bad = copy.deepcopy(manifest)
    bad["special_tokens"]["ids"]["bos"] = 10
    bad["tokenizer"]["release_hash"] = "sha256:" + "0" * 64
    bad["compatibility"]["required_rows"] = 11
    report = check_manifest(bad)
    assert report.failed_names == {
        "manifest.special_ids",
        "manifest.release_hash",
        "manifest.compatibility",
    }


def test_golden_hash_is_checked(manifest: dict[str, Any]) -> None:
    golden = example_golden()
    golden["cases"][0]["ids"] = [8]
    assert check_manifest(manifest, golden=golden).failed_names == {"manifest.golden_hash"}


def test_files_on_disk_are_checked(manifest: dict[str, Any], tmp_path: Path) -> None:
    for name, data in example_files().items():
        (tmp_path / name).write_bytes(data)
    assert check_manifest(manifest, directory=tmp_path).ok
    (tmp_path / "tokenpact.json").write_bytes(b" " + example_files()["tokenpact.json"])
    report = check_manifest(manifest, directory=tmp_path)
    assert report.failed_names == {"manifest.files"}
    assert "release-file drift" in report.failures[0].message
    (tmp_path / "tokenpact.json").unlink()
    assert "missing" in check_manifest(manifest, directory=tmp_path).failures[0].message


def test_schema_errors_skip_relation_checks(manifest: dict[str, Any]) -> None:
    bad = copy.deepcopy(manifest)
    bad["compatibility"] = {}
    report = check_manifest(bad)
    assert "manifest.schema" in report.failed_names
    assert [c.name for c in report.skips] == ["manifest.relations"]


# ---------------------------------------------------------------- seed 004, exercise P2.3


def test_validate_special_ids_accepts_complete_unique_maps(manifest: dict[str, Any]) -> None:
    before = copy.deepcopy(manifest)
    assert validate_special_ids(manifest, ["<|bos|>", "<|eos|>"])
    assert manifest == before  # never mutated
    assert validate_special_ids({"special_tokens": {"<pad>": 38, "<bos>": 39}}, ["<bos>"])
    assert validate_special_ids({"<pad>": 38, "<bos>": 39, "<eos>": 40, "<unk>": 41}, [])


def test_validate_special_ids_rejects_missing_or_duplicate_ids() -> None:
    table = {"<pad>": 38, "<bos>": 39, "<eos>": 40, "<unk>": 41}
    assert not validate_special_ids(table, ["<bos>", "<eot>"])
    assert not validate_special_ids({**table, "<unk>": 40}, ["<bos>"])
    assert not validate_special_ids({"<bos>": True}, ["<bos>"])
    assert not validate_special_ids({"<bos>": -1}, ["<bos>"])
    duplicated = [{"content": "<bos>", "id": 1}, {"content": "<bos>", "id": 2}]
    assert not validate_special_ids({"special_tokens": duplicated}, ["<bos>"])
    assert not validate_special_ids({"special_tokens": 5}, [])


def test_validate_special_ids_takes_special_token_objects() -> None:
    table = {t.content: 300 + i for i, t in enumerate(DEFAULT_SPECIAL_TOKENS)}
    assert validate_special_ids(table, DEFAULT_SPECIAL_TOKENS)
    assert validate_special_ids(table, "<|bos|>")
