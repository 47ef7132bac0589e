"""Golden vectors (seed 000 0x0F) generated from and replayed against real tokenizers."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest
from contract_helpers import CORPUS, GOLDEN_OPTIONS

from tokenpact.contract import golden
from tokenpact.contract.golden import INLINE_TOKENS, field_digest


@pytest.fixture(scope="module")
def doc(tok: Any) -> dict[str, Any]:
    return golden.generate(tok, **GOLDEN_OPTIONS)


def _cases(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {case["name"]: case for case in doc["cases"]}


def test_generated_set_replays_cleanly(tok: Any, doc: dict[str, Any]) -> None:
    report = golden.verify(tok, doc)
    assert report.ok, report.format()
    assert len(report.checks) == len(doc["cases"]) + 1  # + the semantic-hash check


def test_default_sizes_cross_internal_boundaries_and_stay_small(tok: Any) -> None:
    from tokenpact.contract.canonical import canonical_bytes

    full = golden.generate(tok)
    cases = _cases(full)
    assert len(cases["long_no_whitespace"]["text"]) == golden.LONG_SPAN_CHARS
    assert len(cases["long_input"]["text"]) == golden.LONG_INPUT_CHARS
    # Long cases keep their IDs and store digests of the bulky per-token fields.
    assert len(cases["long_input"]["ids"]) > INLINE_TOKENS
    assert isinstance(cases["long_input"]["offsets"], str)
    assert len(canonical_bytes(full)) < 400_000
    assert golden.verify(tok, full).ok


def test_every_case_is_self_consistent(tok: Any, doc: dict[str, Any]) -> None:
    specials = set(tok.special_tokens.values())
    for case in doc["cases"]:
        if case["error"] is not None or isinstance(case["pieces"], str):
            continue
        raw = case["text"].encode("utf-8")
        pieces = [bytes.fromhex(p) for p in case["pieces"]]
        assert pieces == [tok.token_bytes(i) for i in case["ids"]]
        assert case["special_mask"] == [int(i in specials) for i in case["ids"]]
        for (start, end), piece, tid in zip(case["offsets"], pieces, case["ids"], strict=True):
            assert raw[start:end] == piece or (tid in specials and start == end)
        assert case["normalized"] == case["text"]
    assert doc["coordinate"] == "raw_utf8_bytes"


def test_special_spellings_stay_ordinary_text_unless_allowed(tok: Any, doc: dict[str, Any]) -> None:
    cases = _cases(doc)
    literal = [c for c in doc["cases"] if c["class"] == "special_literal"]
    assert len(literal) == len(tok.special_tokens)
    assert all(sum(c["special_mask"]) == 0 for c in literal)
    allowed = cases["allowed_special_all"]
    assert sorted(
        i for i, m in zip(allowed["ids"], allowed["special_mask"], strict=True) if m
    ) == sorted(tok.special_tokens.values())
    bos = cases["add_special_tokens"]
    assert bos["ids"][0] == tok.bos_id and bos["offsets"][0] == [0, 0]


def test_plain_cases_decode_back_to_their_text(doc: dict[str, Any]) -> None:
    for case in doc["cases"]:
        if case["error"] is None and case["policy"]["add_special_tokens"] is False:
            assert case["decoded"] == case["text"], case["name"]


def test_malformed_input_is_rejected_per_policy(doc: dict[str, Any]) -> None:
    case = _cases(doc)["lone_surrogate"]
    assert case["error"] == "InvalidInputError"
    assert case["codepoints"] == [0x61, 0xD800, 0x62] and case["ids"] is None


def test_drifted_tokenizer_is_reported_case_by_case(
    tp: ModuleType, tok: Any, doc: dict[str, Any]
) -> None:
    # Drop the merges from the first one "The cat sleeps." needs: same pattern and specials,
    # different IDs for common text.
    used = [i for i in tok.encode("The cat sleeps.") if 256 <= i < 256 + len(tok.merges)]
    cut = min(used) - 256
    drifted = tp.Tokenizer.from_merges(
        tok.merges[:cut], pattern=tok.pattern, special_tokens=list(tok.special_tokens)
    )
    report = golden.verify(drifted, doc)
    assert "golden.semantic_hash" in report.failed_names
    assert "golden.ascii_sentence" in report.failed_names
    message = next(c.message for c in report.failures if c.name == "golden.ascii_sentence")
    assert "ids differ at index" in message
    behaviour_only = golden.verify(drifted, doc, check_hash=False)
    assert "golden.semantic_hash" not in behaviour_only.failed_names
    assert not behaviour_only.ok


def test_digested_fields_are_compared_by_digest(tok: Any) -> None:
    doc = golden.generate(tok, long_span_chars=300, long_input_chars=1200, inline_tokens=8)
    long_case = _cases(doc)["long_input"]
    assert long_case["pieces"] == field_digest(
        "pieces", [tok.token_bytes(i).hex() for i in long_case["ids"]]
    )
    tampered = copy.deepcopy(doc)
    _cases(tampered)["long_input"]["offsets"] = field_digest("offsets", [])
    report = golden.verify(tok, tampered)
    assert report.failed_names == {"golden.long_input"}


def test_schema_problems_are_reported(tok: Any, doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    del bad["cases"][0]["ids"]
    assert golden.verify(tok, bad).failed_names == {"golden.schema"}


def test_generation_is_deterministic(tp: ModuleType, doc: dict[str, Any]) -> None:
    again = tp.train_bpe(CORPUS, vocab_size=320, min_frequency=2)
    assert golden.generate(again, **GOLDEN_OPTIONS) == doc
