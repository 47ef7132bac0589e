"""Splits by group hash, leakage per role pair, mixture accounting, corpus manifest."""

from __future__ import annotations

import random

import pytest

from tokenpact.contract import CorpusManifest
from tokenpact.data import (
    Document,
    SplitSpec,
    account_mixture,
    build_corpus_manifest,
    canonicalize_for_dedup,
    check_leakage,
    expected_token_shares,
    role_by_doc,
    split_documents,
)
from tokenpact.errors import ConfigError, ContractError

SPEC = SplitSpec({"fit": 0.8, "validation": 0.1, "test": 0.1}, salt="s1")


def test_adding_documents_never_moves_an_existing_one(real_docs: list[Document]) -> None:
    before = role_by_doc(split_documents(real_docs[:200], SPEC))
    after = role_by_doc(split_documents(real_docs, SPEC))
    assert all(after[doc_id] == role for doc_id, role in before.items())
    shuffled = real_docs[:]
    random.Random(3).shuffle(shuffled)
    assert role_by_doc(split_documents(shuffled, SPEC)) == after
    counts = {r: list(after.values()).count(r) for r in SPEC.roles}
    assert counts["fit"] > counts["validation"] > 0 and counts["test"] > 0


def test_a_group_has_one_owner_and_the_salt_matters() -> None:
    docs = [Document(f"d{i}", f"text {i}", group_id=f"page{i % 7}") for i in range(70)]
    roles = role_by_doc(split_documents(docs, SPEC))
    for group in range(7):
        assert len({roles[f"d{i}"] for i in range(group, 70, 7)}) == 1
    other = SplitSpec(SPEC.roles, salt="s2")
    assert [SPEC.role_of(f"g{i}") for i in range(50)] != [other.role_of(f"g{i}") for i in range(50)]
    with pytest.raises(ConfigError, match="sum to 1"):
        SplitSpec({"fit": 0.5, "test": 0.1})


def test_leakage_per_role_pair(real_docs: list[Document]) -> None:
    base = [d for d in real_docs if len(d.text.split()) > 40]
    fit, test = base[:20], base[20:30]
    passage = " ".join(base[3].text.split()[:14])
    leaked = [
        Document("t-exact", "  " + base[0].text + "\n", source="x"),
        Document("t-near", base[1].text.replace(base[1].text.split()[5], "CHANGED", 1)),
        Document("t-gram", "Quoted: " + passage + " and then something else entirely."),
    ]
    report = check_leakage({"fit": fit, "validation": [], "test": test + leaked})
    counts = report.overlap("fit", "test")
    assert counts["exact"] == 1
    assert counts["near"] >= 2  # the exact copy is also a near copy
    assert counts["ngram"] >= 3
    assert report.examples[("fit", "test")]["exact"] == [(base[0].doc_id, "t-exact")]
    assert report.overlap("fit", "validation") == {"exact": 0, "near": 0, "ngram": 0}
    with pytest.raises(ContractError, match="fit/test"):
        report.check_fit()
    clean = check_leakage({"fit": fit, "test": test})
    clean.check_fit()


def test_seed_mixture_twenty_eighty() -> None:
    assert expected_token_shares({"a": 0.5, "b": 0.5}, {"a": 200, "b": 800}) == {
        "a": 0.2,
        "b": 0.8,
    }
    docs = [Document(f"a{i}", "x" * 10, source="a") for i in range(5)]
    docs += [Document(f"b{i}", "y" * 10, source="b") for i in range(5)]
    lengths = {d.doc_id: 200 if d.source == "a" else 800 for d in docs}
    report = account_mixture(docs, lengths)
    assert report.token_share() == {"a": 0.2, "b": 0.8}
    assert report.totals() == {"documents": 10, "bytes": 100, "tokens": 5000}


def test_corpus_manifest_records_both_digests() -> None:
    docs = [Document("d1", " The  cat ", source="web"), Document("d0", "Le chat", source="books")]
    manifest = build_corpus_manifest(
        docs,
        revision="r1",
        roles={"d1": "fit", "d0": "test"},
        clean=canonicalize_for_dedup,
        pipeline={"dedup": "exact-sha256+nfc+collapse+keep"},
        seed=7,
    )
    doc = manifest.to_json()
    assert [d["document_id"] for d in doc["documents"]] == ["d0", "d1"]
    assert [d["split"] for d in doc["documents"]] == ["test", "train"]
    assert doc["documents"][1]["raw_sha256"] != doc["documents"][1]["clean_sha256"]
    assert CorpusManifest.from_json(doc).hash == manifest.hash
    with pytest.raises(ContractError, match="split_names"):
        build_corpus_manifest(docs, revision="r1", roles={"d1": "holdout"})
