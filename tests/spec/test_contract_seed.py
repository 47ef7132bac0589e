"""Seed 000 0x02B / 0x0F, seed 003 and seed 004 facts for the contract layer.

The checker example has IDs 0..11, 12 input rows, 12 output rows and a verified tied head;
each negative fixture from 0x02B must be rejected by the named check.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tokenpact.contract import reconcile, seal_bundle, validate_special_ids
from tokenpact.contract.example import example_bundle, example_config, example_files
from tokenpact.contract.golden import golden_inputs
from tokenpact.contract.hashing import SEMANTIC, semantic_hash
from tokenpact.contract.semantics import max_id, required_rows
from tokenpact.errors import ContractError

OTHER = "sha256:" + "e" * 64


def test_checker_example_passes() -> None:
    bundle = example_bundle()
    config = bundle["tokenizer"]["config"]
    assert max_id(config) == 11 and required_rows(config) == 12
    ids = {t["id"] for t in config["special_tokens"]} | set(range(len(config["model"]["vocab"])))
    assert ids == set(range(12))
    checkpoint = bundle["checkpoint"]
    assert checkpoint["input_embedding_rows"] == 12 and checkpoint["output_vocab_rows"] == 12
    assert checkpoint["tied_output_head"] and checkpoint["tied_storage_verified"]
    report = reconcile(bundle)
    assert report.ok, report.format()


def test_padded_row_counts_are_allowed() -> None:
    bundle = example_bundle()
    bundle["checkpoint"]["input_embedding_rows"] = 16
    bundle["checkpoint"]["output_vocab_rows"] = 64
    assert reconcile(seal_bundle(bundle)).ok


def _stale(section: str, key: str) -> Callable[[dict[str, Any]], None]:
    def edit(bundle: dict[str, Any]) -> None:
        bundle[section][key] = OTHER
        for doc in bundle[section].get("documents") or ():
            if key in doc:
                doc[key] = OTHER

    return edit


def _swap_ids(b: dict[str, Any]) -> None:
    vocab = b["tokenizer"]["config"]["model"]["vocab"]
    vocab[5], vocab[6] = vocab[6], vocab[5]


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(bundle: dict[str, Any]) -> None:
        target = bundle
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _dataset_max_id(value: int) -> Callable[[dict[str, Any]], None]:
    def edit(bundle: dict[str, Any]) -> None:
        bundle["dataset"]["max_token_id"] = value
        bundle["dataset"]["documents"][0]["max_token_id"] = value

    return edit


# (edit, reseal, exact set of failed checks or the one required check)
# Resealed fixtures describe a bundle whose declared hashes were recomputed after the edit:
# the stale binding is then the only failure. Unsealed ones keep the old declared hashes.
FIXTURES: dict[str, tuple[Callable[[dict[str, Any]], None], bool, set[str]]] = {
    "same size, different ID assignment": (_swap_ids, False, {"hashes.tokenizer_semantic"}),
    "same IDs, different merge rank": (
        lambda b: b["tokenizer"]["config"]["model"]["merges"].reverse(),
        False,
        {"hashes.tokenizer_semantic"},
    ),
    "same IDs, different normalizer": (
        _set(("tokenizer", "config", "normalizer"), {"type": "nfkc"}),
        False,
        {"hashes.tokenizer_semantic"},
    ),
    "null decoder replaced by {}": (
        _set(("tokenizer", "config", "decoder"), {}),
        False,
        {"tokenizer.components"},
    ),
    "stale dataset tokenizer hash": (
        _stale("dataset", "tokenizer_hash"),
        True,
        {"dataset.tokenizer_hash"},
    ),
    "stale dataset corpus hash": (_stale("dataset", "corpus_hash"), True, {"dataset.corpus_hash"}),
    "stale dataset template hash": (
        _stale("dataset", "template_hash"),
        True,
        {"dataset.template_hash"},
    ),
    "checkpoint tokenizer mismatch": (
        _stale("checkpoint", "tokenizer_hash"),
        True,
        {"checkpoint.tokenizer_hash"},
    ),
    "checkpoint template mismatch": (
        _stale("checkpoint", "template_hash"),
        True,
        {"checkpoint.template_hash"},
    ),
    "checkpoint BOS mismatch": (
        _set(("checkpoint", "special_ids", "bos"), 0),
        True,
        {"checkpoint.special_ids"},
    ),
    "checkpoint stop mismatch": (
        _set(("checkpoint", "special_ids", "stop"), [10]),
        True,
        {"checkpoint.special_ids"},
    ),
    "input rows do not cover max_id": (
        _set(("checkpoint", "input_embedding_rows"), 11),
        True,
        {"checkpoint.input_rows"},
    ),
    "output rows do not cover max_id": (
        _set(("checkpoint", "output_vocab_rows"), 11),
        True,
        {"checkpoint.output_rows"},
    ),
    "tied head not verified": (
        _set(("checkpoint", "tied_storage_verified"), False),
        True,
        {"checkpoint.tied_head"},
    ),
    "template source drift": (
        lambda b: b["template"].__setitem__("source", b["template"]["source"] + " "),
        False,
        {"hashes.template"},
    ),
    "raw release-file drift": (
        _set(("tokenizer", "files", 0, "sha256"), OTHER),
        False,
        {"hashes.tokenizer_release"},
    ),
    "dataset stores an ID the tokenizer cannot emit": (
        _dataset_max_id(12),
        True,
        {"dataset.max_token_id"},
    ),
}
EXACT = {name for name, (_, resealed, _) in FIXTURES.items() if resealed}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_negative_fixture_is_rejected_by_the_named_check(name: str) -> None:
    edit, reseal, expected = FIXTURES[name]
    bundle = example_bundle()
    edit(bundle)
    if reseal:
        bundle = seal_bundle(bundle)
    report = reconcile(bundle)
    assert not report.ok
    if name in EXACT:
        assert report.failed_names == expected, report.format()
    else:
        assert expected <= report.failed_names, report.format()
    with pytest.raises(ContractError):
        reconcile(bundle, raise_on_failure=True)


def test_swapped_ids_that_were_resealed_break_every_binding() -> None:
    bundle = example_bundle()
    _swap_ids(bundle)
    report = reconcile(seal_bundle(bundle))
    assert {
        "dataset.tokenizer_hash",
        "checkpoint.tokenizer_hash",
        "golden.tokenizer_hash",
        "manifest.semantic_hash",
    } <= report.failed_names


def test_null_decoder_and_empty_decoder_differ() -> None:
    config = example_config()
    with_null = {**config, "decoder": None}
    assert semantic_hash(with_null) != semantic_hash(config)
    with pytest.raises(ContractError, match="empty object"):
        semantic_hash({**config, "decoder": {}})


def test_raw_release_file_drift_on_disk(tmp_path: Path) -> None:
    for name, data in example_files().items():
        (tmp_path / name).write_bytes(data)
    assert reconcile(example_bundle(), root=tmp_path).ok
    # Same values, different bytes: semantic identity holds, release identity does not.
    (tmp_path / "tokenpact.json").write_bytes(example_files()["tokenpact.json"] + b"\n")
    report = reconcile(example_bundle(), root=tmp_path)
    assert report.failed_names == {"tokenizer.release_files"}


def test_semantic_domain_name_follows_the_seed() -> None:
    assert SEMANTIC == "tokenizer-semantic-v1"


def test_golden_inputs_cover_every_0x0f_class() -> None:
    classes = {case["class"] for case in golden_inputs(example_config())}
    required = {
        "empty",
        "whitespace",
        "leading_trailing_whitespace",
        "repeated_newlines",
        "ascii",
        "composed_unicode",
        "decomposed_unicode",
        "emoji",
        "combining_marks",
        "mixed_scripts",
        "right_to_left",
        "numbers",
        "long_digit_run",
        "code_indentation",
        "identifiers",
        "long_no_whitespace",
        "special_literal",
        "long_input",
        "malformed_input",
        "url",
        "compatibility_characters",
        "no_space_script",
    }
    assert required <= classes
    literal = [c for c in golden_inputs(example_config()) if c["class"] == "special_literal"]
    assert len(literal) == 3  # one per special-token spelling


def test_seed_003_manifest_fields_are_present() -> None:
    manifest = example_bundle()["tokenizer"]["manifest"]
    paths = [
        ("schema_version",),
        ("tokenizer", "files", 0, "sha256"),  # artifact digest
        ("library", "name"),
        ("library", "version"),
        ("input", "type"),
        ("input", "encoding"),
        ("input", "invalid_input_policy"),
        ("normalization", "unicode_version"),
        ("normalization", "form"),
        ("boundaries", "pre_tokenizer"),
        ("boundaries", "protected_spans"),
        ("model", "type"),
        ("model", "vocabulary_hash"),
        ("model", "ranks_hash"),
        ("model", "byte_fallback"),
        ("special_tokens", "ids"),
        ("special_tokens", "literal_text_policy"),
        ("postprocessor_and_decoder", "automatic_insertions"),
        ("postprocessor_and_decoder", "decode_error_policy"),
        ("training",),
        ("tests", "golden_hash"),
        ("compatibility", "model_config_hash"),
        ("compatibility", "stable_id_prefix"),
    ]
    for path in paths:
        value: Any = manifest
        for key in path:
            value = value[key]
    assert manifest["special_tokens"]["literal_text_policy"] == "ordinary"


def test_seed_004_validate_special_ids_exercise() -> None:
    # The chapter's registry: <pad> 38, <bos> 39, <eos> 40, <unk> 41.
    registry = {"special_tokens": {"<pad>": 38, "<bos>": 39, "<eos>": 40, "<unk>": 41}}
    before = copy.deepcopy(registry)
    assert validate_special_ids(registry, ["<pad>", "<bos>", "<eos>", "<unk>"])
    assert not validate_special_ids(registry, ["<pad>", "<bos>", "<eos>", "<unk>", "<eot>"])
    assert not validate_special_ids({"special_tokens": {"<pad>": 38, "<bos>": 38}}, ["<bos>"])
    assert registry == before
