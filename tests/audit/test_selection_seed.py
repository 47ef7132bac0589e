"""Seed 000 0x0C1: the compact-268 / balanced-272 / expanded-279 selection, exactly."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tokenpact.audit import cost
from tokenpact.audit.selection import (
    CandidateReport,
    Gates,
    SealedTestSplit,
    candidate_set_hash,
    evaluate_candidates,
    select,
)
from tokenpact.audit.splits import SplitRecord, assign_splits, validate_split_manifest
from tokenpact.audit.vocab import audit_vocabulary, exposure_counts
from tokenpact.errors import ConfigError, ContractError

from . import seed_0c1 as seed


@pytest.fixture(scope="module")
def cands(tp: Any) -> dict[str, Any]:
    return seed.candidates(tp)


@pytest.fixture(scope="module")
def reports(cands: dict[str, Any]) -> list[CandidateReport]:
    return evaluate_candidates(
        cands,
        fit=seed.texts("fit"),
        validation=seed.texts("validation"),
        validation_slices=seed.slices("validation"),
        shape=seed.SHAPE,
        gates=seed.GATES,
        baseline="compact-268",
    )


def test_candidates_are_nested_with_ids_preserved(cands: dict[str, Any]) -> None:
    sizes = {name: tok.vocab_size for name, tok in cands.items()}
    assert sizes == {"compact-268": 268, "balanced-272": 272, "expanded-279": 279}
    small, mid, big = (cands[n].vocab() for n in ("compact-268", "balanced-272", "expanded-279"))
    assert mid[: len(small)] == small and big[: len(mid)] == mid
    assert [small[i] for i in range(264, 268)] == [b"th", b"the", b"in", b"ing"]


def test_split_manifest_has_one_owner_per_group() -> None:
    assert validate_split_manifest(seed.RECORDS) == {"fit": 6, "validation": 3, "test": 3}
    leak = [*seed.RECORDS, SplitRecord("r13", "g-prose-1", "test", "prose", "the cat")]
    with pytest.raises(ContractError, match="g-prose-1"):
        validate_split_manifest(leak)


def test_expanded_is_shortest_but_rejected_for_parameters_and_exposure(
    reports: list[CandidateReport],
) -> None:
    by_id = {r.candidate_id: r for r in reports}
    tokens = {k: r.validation_tokens for k, r in by_id.items()}
    assert tokens["expanded-279"] < tokens["balanced-272"] < tokens["compact-268"]
    assert {k: r.vocab_params for k, r in by_id.items()} == {
        "compact-268": 17_420,
        "balanced-272": 17_680,
        "expanded-279": 18_135,
    }
    expanded = by_id["expanded-279"]
    assert not expanded.eligible
    assert [f.split(":")[0] for f in expanded.failures] == ["parameters", "exposure"]
    assert by_id["balanced-272"].eligible and by_id["compact-268"].eligible
    assert all(r.reconstruction_failures == 0 for r in reports)  # byte rows: lossless


def test_balanced_272_wins_and_test_split_gives_27_positions(
    cands: dict[str, Any], reports: list[CandidateReport]
) -> None:
    selection = select(reports)
    assert selection.winner == "balanced-272"
    assert selection.to_dict()["test_consulted"] is False
    sealed = SealedTestSplit(seed.texts("test"))
    result = sealed.evaluate(selection, cands["balanced-272"])
    assert (result["records"], result["positions"]) == (3, 27)
    with pytest.raises(ContractError, match="already evaluated"):
        sealed.evaluate(selection, cands["balanced-272"])


def test_test_split_refuses_a_candidate_that_is_not_the_frozen_winner(
    cands: dict[str, Any], reports: list[CandidateReport]
) -> None:
    with pytest.raises(ContractError, match="frozen winner"):
        SealedTestSplit(seed.texts("test")).evaluate(select(reports), cands["compact-268"])


def test_selection_is_independent_of_candidate_order(reports: list[CandidateReport]) -> None:
    forward, backward = select(reports), select(list(reversed(reports)))
    assert forward.winner == backward.winner
    assert forward.candidate_set_hash == backward.candidate_set_hash
    assert forward.candidate_set_hash == candidate_set_hash(
        sorted(r.semantic_hash for r in reports)
    )


def test_ties_break_on_parameters_then_candidate_id(reports: list[CandidateReport]) -> None:
    base = next(r for r in reports if r.candidate_id == "balanced-272")
    twin = dataclasses.replace(base, candidate_id="aaa-twin", semantic_hash="sha256:00")
    assert select([base, twin]).winner == "aaa-twin"  # same tokens and parameters: ID decides
    cheaper = dataclasses.replace(base, candidate_id="zzz", vocab_params=base.vocab_params - 1)
    assert select([base, cheaper]).winner == "zzz"


def test_no_eligible_candidate_is_a_contract_error(reports: list[CandidateReport]) -> None:
    failing = [dataclasses.replace(r, failures=["parameters: too many"]) for r in reports]
    with pytest.raises(ContractError, match="no candidate passes"):
        select(failing)
    with pytest.raises(ConfigError, match="unique"):
        select([reports[0], reports[0]])


def test_reconstruction_gate_rejects_a_lossy_candidate(tp: Any) -> None:
    from tests.conformance import peer_data

    bert = tp.Tokenizer.load(peer_data.minilm_tokenizer_json())  # lowercases, [UNK]
    byte = seed.build_candidate(tp, seed.COMPACT)
    reports = evaluate_candidates(
        {"bert": bert, "bytes": byte},
        fit=["Hello"],
        validation=["Hello ☃"],
        validation_slices=["x"],
        shape=seed.SHAPE,
        gates=Gates(),
    )
    bad = next(r for r in reports if r.candidate_id == "bert")
    assert bad.failures and bad.failures[0].startswith("exact reconstruction")
    assert select(reports).winner == "bytes"


def test_seed_th_and_ing_reachable_but_never_emitted_in_fit(cands: dict[str, Any]) -> None:
    tok = cands["compact-268"]
    fit_ids, _ = tok.encode_batch_flat(seed.texts("fit"))
    exposure = exposure_counts(fit_ids, tok.vocab_size)
    audit = audit_vocabulary(tok, exposure=exposure)
    for token_id, piece in ((264, "th"), (267, "ing")):
        assert tok.encode(piece) == [token_id]
        assert exposure[token_id] == 0
        assert audit.class_of(token_id) == "alone"  # reachable: zero count is not a proof
    assert exposure[265] > 0  # "the" consumes "th" in every fit occurrence
    assert audit.class_of(256) == "special"


def test_expanded_partial_utf8_row_is_reachable_only_in_context(cands: dict[str, Any]) -> None:
    tok = cands["expanded-279"]
    audit = audit_vocabulary(tok)
    partial = tok.token_id("中".encode()[:2])
    assert partial == 276 and audit.partial_utf8[partial]
    assert audit.class_of(partial) == "context"
    witness = audit.witnesses[partial]
    assert partial in tok.encode(witness)


def test_assign_splits_is_by_group_and_stable() -> None:
    groups = [f"g{i // 3}" for i in range(300)]
    roles = assign_splits(groups)
    assert roles == assign_splits(groups)
    owner: dict[str, str] = {}
    for g, role in zip(groups, roles, strict=True):
        assert owner.setdefault(g, role) == role
    assert set(roles) == {"fit", "validation", "test"}
    with pytest.raises(ConfigError):
        assign_splits(groups, fractions=(0.5, 0.5, 0.5))


def test_logits_flops_in_reports(reports: list[CandidateReport]) -> None:
    for r in reports:
        assert r.logits_flops == cost(r.vocab_size, 64, positions=r.validation_tokens).logits_flops
