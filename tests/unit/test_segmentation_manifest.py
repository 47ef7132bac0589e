"""Stochastic segmentation manifests (seed 000, 0x08): complete, replayable, fail closed."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.contract import (
    EvaluationPolicy,
    SegmentationManifest,
    normalization_hash,
    replay_segmentation,
    segmentation_manifest,
)
from tokenpact.contract.segmentation import FIELDS
from tokenpact.errors import ContractError, ReplayError
from tokenpact.stochastic import RNG_NAME, SampleKey

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "low lower lowest newest widest tokenization tokenizer tokens",
    "Die Straße in Köln ist schön; la façade est très belle, ¿verdad?",
    "Сегодня хорошая погода, и мы идём гулять в парк.",
] * 15

# The seed's list, each item with the record fields that carry it.
SEED_MANIFEST = {
    "model hash": ["model_hash"],
    "normalization hash": ["normalization_hash"],
    "method": ["method"],
    "alpha or dropout probability": ["parameter_name", "parameter"],
    "candidate support / n-best policy": ["support"],
    "RNG algorithm and implementation version": ["rng", "implementation"],
    "base seed and worker/rank derivation": ["seed", "key_derivation", "worker_derivation"],
    "epoch, sample and optimizer-update draw scope": ["epoch", "sample_id", "view", "draw_scope"],
    "stable path or eligible-occurrence order": ["draw_order"],
    "evaluation policy": ["evaluation"],
}


@pytest.fixture(scope="module")
def bpe() -> tp.Tokenizer:
    return tp.train_bpe(TEXTS, vocab_size=420, special_tokens=())


@pytest.fixture(scope="module")
def unigram() -> Any:
    return tp.train_unigram(TEXTS, vocab_size=160, character_coverage=1.0)


@pytest.fixture(scope="module")
def record(bpe: tp.Tokenizer) -> dict[str, Any]:
    key = SampleKey(seed=7, epoch=2, sample_id="doc-17", view=1)
    return segmentation_manifest(bpe, method="bpe_dropout", parameter=0.3, key=key).to_json()


def test_bpe_dropout_manifest_has_every_seed_field(bpe: tp.Tokenizer, record: dict) -> None:
    assert set(record) == set(FIELDS)
    for item, keys in SEED_MANIFEST.items():
        for k in keys:
            assert record[k] not in (None, ""), f"{item}: {k} is empty"
    assert record["model_hash"] == bpe.semantic_hash
    assert record["normalization_hash"] == normalization_hash(bpe)
    assert (record["method"], record["parameter_name"], record["parameter"]) == (
        "bpe_dropout",
        "dropout_p",
        0.3,
    )
    assert record["rng"] == RNG_NAME == tp._native.RNG_NAME
    assert (record["seed"], record["epoch"], record["sample_id"], record["view"]) == (
        7,
        2,
        "doc-17",
        1,
    )
    assert record["evaluation"]["mode"] == "deterministic"
    assert "worker" in record["worker_derivation"]


def test_bpe_dropout_replay_is_identical(bpe: tp.Tokenizer, record: dict) -> None:
    stored = json.loads(json.dumps(record))  # records travel as JSON
    for text in TEXTS[:4]:
        ids = tp.bpe_dropout(bpe, text, p=0.3, key=SampleKey(7, 2, "doc-17", 1))
        assert ids != bpe.encode(text)  # the draw did something
        assert replay_segmentation(bpe, text, stored, expected=ids) == ids
        manifest = SegmentationManifest.from_json(stored)
        assert replay_segmentation(bpe, text, manifest) == ids


def test_unigram_sampling_record_replays(unigram: Any) -> None:
    for i, text in enumerate(TEXTS[:4]):
        key = SampleKey(seed=11, epoch=3, sample_id=i)
        ids = unigram.sample(text, alpha=0.2, key=key)
        record = unigram.sampling_record(0.2, key)
        assert set(record) == set(FIELDS) and record["method"] == "unigram_sample"
        assert record["parameter_name"] == "alpha" and "full lattice" in record["support"]
        assert (
            replay_segmentation(unigram, text, json.loads(json.dumps(record)), expected=ids) == ids
        )


@pytest.mark.parametrize("name", FIELDS)
def test_a_record_missing_any_field_is_refused(bpe: tp.Tokenizer, record: dict, name: str) -> None:
    broken = {k: v for k, v in record.items() if k != name}
    with pytest.raises(ReplayError, match=f"missing \\['{name}'\\]"):
        replay_segmentation(bpe, TEXTS[0], broken)


BAD_VALUES = [
    ("format", "something-else"),
    ("format_version", 2),
    ("method", "bpe_dropin"),
    ("model_hash", "d24f01adc909"),
    ("normalization_hash", None),
    ("parameter_name", "alpha"),
    ("parameter", 1.5),
    ("parameter", "0.3"),
    ("parameter", math.nan),
    ("support", "nbest:64"),
    ("rng", "pcg64/1"),
    ("implementation", ""),
    ("seed", -1),
    ("seed", True),
    ("epoch", 1.0),
    ("sample_id", None),
    ("view", "0"),
    ("key_derivation", "python random.Random(seed)"),
    ("worker_derivation", "seed + worker_id"),
    ("draw_scope", "one draw per optimizer update"),
    ("draw_order", "left-to-right position"),
    ("evaluation", {"mode": "stochastic", "draws": 2, "seeds": [1], "aggregate": "mean"}),
    ("evaluation", {"mode": "deterministic"}),
    ("evaluation", "deterministic"),
]


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
def test_a_malformed_or_foreign_field_is_refused(
    bpe: tp.Tokenizer, record: dict, name: str, value: Any
) -> None:
    with pytest.raises(ReplayError, match=name):
        replay_segmentation(bpe, TEXTS[0], {**record, name: value})


def test_unknown_fields_and_non_objects_are_refused(bpe: tp.Tokenizer, record: dict) -> None:
    with pytest.raises(ReplayError, match="unknown \\['nbest_size'\\]"):
        replay_segmentation(bpe, TEXTS[0], {**record, "nbest_size": 64})
    with pytest.raises(ReplayError, match="JSON object"):
        replay_segmentation(bpe, TEXTS[0], [record])  # type: ignore[arg-type]


def test_alpha_must_be_positive(unigram: Any) -> None:
    record = unigram.sampling_record(0.5, SampleKey(1))
    for alpha in (0, -1.0, math.inf):
        with pytest.raises(ReplayError, match="alpha"):
            replay_segmentation(unigram, TEXTS[1], {**record, "parameter": alpha})


def test_tampered_key_or_wrong_model_is_refused(
    bpe: tp.Tokenizer, record: dict, unigram: Any
) -> None:
    text = TEXTS[0]
    ids = replay_segmentation(bpe, text, record)
    for name, value in [("seed", 8), ("epoch", 3), ("sample_id", "doc-18"), ("view", 0)]:
        with pytest.raises(ReplayError, match="differs from the recorded IDs"):
            replay_segmentation(bpe, text, {**record, name: value}, expected=ids)
    with pytest.raises(ReplayError, match="differs from the recorded IDs"):
        replay_segmentation(bpe, text, {**record, "parameter": 0.31}, expected=ids)
    with pytest.raises(ReplayError, match="load the tokenizer the record names"):
        replay_segmentation(unigram, text, record)
    other = "sha256:" + "0" * 64
    with pytest.raises(ReplayError, match="normalization"):
        replay_segmentation(bpe, text, {**record, "normalization_hash": other})
    assert issubclass(ReplayError, ContractError)


def test_evaluation_policy(bpe: tp.Tokenizer) -> None:
    stochastic = EvaluationPolicy("stochastic", draws=3, seeds=(1, 2, 3), aggregate="mean")
    made = segmentation_manifest(
        bpe, method="bpe_dropout", parameter=0.1, key=SampleKey(1), evaluation=stochastic
    )
    assert made.to_json()["evaluation"] == {
        "mode": "stochastic",
        "draws": 3,
        "seeds": [1, 2, 3],
        "aggregate": "mean",
    }
    assert replay_segmentation(bpe, "lowest", made) == tp.bpe_dropout(
        bpe, "lowest", p=0.1, key=SampleKey(1)
    )
    with pytest.raises(ReplayError, match="one seed per draw"):
        EvaluationPolicy("stochastic", draws=2, seeds=(1,), aggregate="mean")
    with pytest.raises(ReplayError, match="no draws"):
        EvaluationPolicy("deterministic", draws=1)
    with pytest.raises(ReplayError, match="unknown"):
        segmentation_manifest(bpe, method="wordpiece", parameter=0.1, key=SampleKey(1))
    with pytest.raises(ReplayError, match="dropout_p"):
        segmentation_manifest(bpe, method="bpe_dropout", parameter=2.0, key=SampleKey(1))


def test_junk_in_any_field_or_text_is_a_typed_error(bpe: tp.Tokenizer, record: dict) -> None:
    legitimate = {"implementation", "sample_id"}  # any string is a valid value for these
    for name in FIELDS:
        for value in [None, -1, 1.5, [], {}, True, 2**64, [["a"]], {"mode": None}]:
            if name in legitimate and isinstance(value, str):
                continue
            with pytest.raises(ReplayError):
                replay_segmentation(bpe, TEXTS[0], {**record, name: value})
    for text in (None, b"bytes", "lone \ud800 surrogate"):
        with pytest.raises(tp.InvalidInputError):
            replay_segmentation(bpe, text, record)  # type: ignore[arg-type]
    with pytest.raises(tp.InvalidInputError, match="surrogate"):
        tp.bpe_dropout(bpe, "lone \ud800", p=0.1, key=SampleKey(1))
