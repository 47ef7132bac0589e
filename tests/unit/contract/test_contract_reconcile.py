"""reconcile(): structure first, every hash re-derived, every binding reported."""

from __future__ import annotations

from typing import Any

import pytest

from tokenpact.contract import corpus_hash, derive_hashes, reconcile, seal_bundle
from tokenpact.contract.reconcile import HASH_NAMES
from tokenpact.errors import ContractError


def _rebind_corpus(bundle: dict[str, Any]) -> None:
    """Bind the dataset to the (edited) corpus, as if it had been re-encoded from it."""
    bundle["dataset"]["corpus_hash"] = corpus_hash(bundle["corpus"])


def test_every_failure_is_reported_not_just_the_first(bundle: dict[str, Any]) -> None:
    bundle["dataset"]["tokenizer_hash"] = "sha256:" + "0" * 64
    bundle["checkpoint"]["tied_storage_verified"] = False
    bundle["checkpoint"]["input_embedding_rows"] = 3
    report = reconcile(bundle)
    assert {
        "hashes.bundle",
        "dataset.tokenizer_hash",
        "dataset.records",
        "checkpoint.tied_head",
        "checkpoint.input_rows",
        "golden.rows",
    } == report.failed_names
    text = report.format()
    assert "6 of" in text and "resize the embeddings" in text


def test_raise_on_failure_lists_every_failed_check(bundle: dict[str, Any]) -> None:
    bundle["checkpoint"]["tied_storage_verified"] = False
    bundle["checkpoint"]["special_ids"]["bos"] = 1
    with pytest.raises(ContractError) as info:
        reconcile(seal_bundle(bundle), raise_on_failure=True)
    assert "checkpoint.tied_head" in str(info.value)
    assert "checkpoint.special_ids" in str(info.value)


def test_structure_errors_stop_before_bindings(bundle: dict[str, Any]) -> None:
    del bundle["checkpoint"]
    bundle["dataset"]["record_count"] = -1
    report = reconcile(bundle)
    assert report.failed_names == {"structure.schema"}
    assert len(report.failures) >= 2
    assert [c.name for c in report.skips] == ["bindings"]


def test_floats_are_structure_errors(bundle: dict[str, Any]) -> None:
    bundle["corpus"]["pipeline"]["threshold"] = 0.8  # type: ignore[assignment]
    assert "structure.canonical_values" in reconcile(bundle).failed_names


def test_canonical_order_of_set_like_arrays(bundle: dict[str, Any]) -> None:
    bundle["checkpoint"]["special_ids"]["stop"] = [11, 10]
    bundle["template"]["modes"] = ["training", "generation"]
    report = reconcile(seal_bundle(bundle))
    assert report.failed_names == {"structure.canonical_order"}
    assert "ascending" in report.failures[0].message and "modes" in report.failures[0].message


def test_fit_corpus_must_be_training_documents(bundle: dict[str, Any]) -> None:
    bundle["corpus"]["documents"][1]["split"] = "test"
    _rebind_corpus(bundle)
    report = reconcile(seal_bundle(bundle))
    assert report.failed_names == {"corpus.train_only"}


def test_dataset_records_must_agree_with_the_summary(bundle: dict[str, Any]) -> None:
    bundle["dataset"]["record_count"] = 3
    report = reconcile(seal_bundle(bundle))
    assert report.failed_names == {"dataset.records"}
    assert "record_count 3" in report.failures[0].message


def test_checkpoint_that_names_no_tokenizer_fails_in_a_bundle(bundle: dict[str, Any]) -> None:
    bundle["checkpoint"]["tokenizer_hash"] = None
    assert reconcile(seal_bundle(bundle)).failed_names == {"checkpoint.tokenizer_hash"}


def test_checkpoint_without_output_head(bundle: dict[str, Any]) -> None:
    bundle["checkpoint"]["output_vocab_rows"] = None
    bundle["checkpoint"]["tied_output_head"] = False
    assert reconcile(seal_bundle(bundle)).ok


def test_golden_ids_need_rows(bundle: dict[str, Any]) -> None:
    bundle["checkpoint"]["input_embedding_rows"] = 9  # BOS (9) is a golden ID
    assert "golden.rows" in reconcile(seal_bundle(bundle)).failed_names


def test_training_corpus_digest_must_match_the_corpus_manifest(bundle: dict[str, Any]) -> None:
    bundle["corpus"]["fit_digest"] = "sha256-multiset:aa"
    bundle["tokenizer"]["manifest"]["training"] = {
        "corpus": {"digest": "sha256-multiset:bb", "documents": 3, "bytes": 22},
        "trainer_flags_and_seed": {},
        "stop_reason": None,
        "merges_learned": 4,
    }
    _rebind_corpus(bundle)
    report = reconcile(seal_bundle(bundle))
    assert report.failed_names == {"corpus.fit_digest"}


def test_underivable_hash_is_reported_and_dependents_skipped(bundle: dict[str, Any]) -> None:
    bundle["tokenizer"]["config"]["special_tokens"][0]["id"] = 10  # duplicate ID
    report = reconcile(bundle)
    assert {"tokenizer.components", "hashes.tokenizer_semantic"} <= report.failed_names
    skipped = {c.name for c in report.skips}
    assert {"hashes.tokenizer_release", "hashes.bundle", "bindings"} <= skipped


def test_seal_and_derive(bundle: dict[str, Any]) -> None:
    assert set(derive_hashes(bundle)) == set(HASH_NAMES)
    assert seal_bundle(bundle) == bundle
    report = reconcile(bundle)
    assert report.ok and not report.skips
    assert report.to_json()["ok"] is True
