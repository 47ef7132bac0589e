"""Distributed assignment records (seed 000, 0x04B): complete, replayable, fail closed."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.batch import (
    BucketingPolicy,
    DistributedSampler,
    check_coverage,
    length_buckets,
    replay_assignment,
)
from tokenpact.batch.sampler_replay import RECORD_FIELDS
from tokenpact.contract import template_hash
from tokenpact.errors import ReplayError

DATASET = "sha256:" + "d" * 64
TOKENIZER = "sha256:" + "1" * 64
TEMPLATE = template_hash(None)
IDS = {"dataset_hash": DATASET, "tokenizer_hash": TOKENIZER, "template_hash": TEMPLATE}
LENGTHS = np.random.default_rng(4).integers(1, 300, size=203)
POLICY = BucketingPolicy(max_tokens=1024, boundaries=(32, 64, 128), multiple=8)


def _sampler(rank: int = 1, **options: Any) -> DistributedSampler:
    kwargs: dict[str, Any] = {
        "world_size": 4,
        "rank": rank,
        "seed": 9,
        **IDS,
        "lengths": LENGTHS,
        "bucketing": POLICY,
    }
    kwargs.update(options)
    return DistributedSampler(len(LENGTHS), **kwargs)


@pytest.fixture
def record() -> dict[str, Any]:
    return json.loads(json.dumps(_sampler().assignment(2).to_record()))


def test_record_carries_identities_policy_and_batches(record: dict[str, Any]) -> None:
    assert set(record) == set(RECORD_FIELDS)
    assert {k: record[k] for k in IDS} == IDS
    assert record["bucketing"] == {
        "max_tokens": 1024,
        "boundaries": [32, 64, 128],
        "layout": "padded",
        "multiple": 8,
        "max_records": None,
    }
    assert (record["seed"], record["epoch"], record["rank"], record["world_size"]) == (9, 2, 1, 4)
    assert record["drop_last"] is False and record["lengths_hash"].startswith("sha256:")
    flat = sorted(i for b in record["batches"] for i in b)
    assert flat == sorted(record["indices"])  # the batches hold exactly the rank's shard
    for batch in record["batches"]:
        width = -(-int(LENGTHS[batch].max()) // 8) * 8
        assert len(batch) * width <= 1024
        assert len(set(length_buckets(LENGTHS[batch], [32, 64, 128]).tolist())) == 1


def test_replay_reproduces_every_rank_and_epoch() -> None:
    for epoch in (0, 1, 5):
        assignments = [_sampler(rank).assignment(epoch) for rank in range(4)]
        check_coverage(assignments)
        for a in assignments:
            stored = json.loads(json.dumps(a.to_record()))
            again = replay_assignment(stored, lengths=LENGTHS, **IDS)
            assert again.digest == a.digest == stored["digest"]
            assert again.indices.tolist() == a.indices.tolist()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 60),
    st.integers(1, 6),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.booleans(),
)
def test_replay_property(
    n: int, world: int, drop_last: bool, shuffle: bool, epoch: int, bucketed: bool
) -> None:
    lengths = (np.arange(n) % 37) + 1
    for rank in range(world):
        sampler = DistributedSampler(
            n,
            world_size=world,
            rank=rank,
            seed=2,
            shuffle=shuffle,
            drop_last=drop_last,
            **IDS,
            lengths=lengths if bucketed else None,
            bucketing=BucketingPolicy(max_tokens=64, boundaries=(8, 16)) if bucketed else None,
        )
        record = sampler.assignment(epoch).to_record()
        replayed = replay_assignment(record, lengths=lengths if bucketed else None)
        assert replayed.digest == record["digest"]


@pytest.mark.parametrize("name", RECORD_FIELDS)
def test_a_missing_field_is_refused(record: dict[str, Any], name: str) -> None:
    del record[name]
    with pytest.raises(ReplayError, match=f"missing \\['{name}'\\]"):
        replay_assignment(record, lengths=LENGTHS)


TAMPERED = [
    ("format", "tokenpact.sampler-assignment/1", "format"),
    ("seed", 10, "different indices"),
    ("epoch", 3, "different indices"),
    ("rank", 0, "different indices"),
    ("rank", 4, "below world_size"),
    ("world_size", 0, "world_size"),
    ("shuffle", False, "different indices"),
    ("shuffle", "yes", "shuffle"),
    ("drop_last", True, "indices has 51 entries"),
    ("dataset_size", 202, "lengths"),
    ("dataset_hash", None, "dataset_hash"),
    ("tokenizer_hash", "d24f01ad", "tokenizer_hash"),
    ("template_hash", None, "template_hash"),
    ("bucketing", None, "need a bucketing policy"),
    ("bucketing", {"max_tokens": 1024}, "bucketing"),
    ("lengths_hash", "sha256:" + "0" * 64, "not the ones this epoch was batched by"),
    ("lengths_hash", None, "records lengths_hash and batches"),
    ("batches", None, "records lengths_hash and batches"),
    ("dropped", [3], "different dropped"),
    ("repeated", [0], "different repeated"),
    ("digest", "0" * 64, "digest"),
    ("digest", None, "digest"),
]


@pytest.mark.parametrize(("name", "value", "message"), TAMPERED)
def test_a_tampered_field_is_refused(
    record: dict[str, Any], name: str, value: Any, message: str
) -> None:
    record[name] = value
    with pytest.raises(ReplayError, match=message):
        replay_assignment(record, lengths=LENGTHS)


def test_edited_results_and_policies_are_refused(record: dict[str, Any]) -> None:
    edits = {
        "indices": lambda r: r["indices"].__setitem__(0, r["indices"][1]),
        "batches": lambda r: r["batches"].insert(0, r["batches"].pop()),
        "bucketing": lambda r: r["bucketing"].__setitem__("max_tokens", 2048),
    }
    for edit in edits.values():
        broken = copy.deepcopy(record)
        edit(broken)
        with pytest.raises(ReplayError, match="different|digest"):
            replay_assignment(broken, lengths=LENGTHS)
    with pytest.raises(ReplayError, match="unknown \\['note'\\]"):
        replay_assignment({**record, "note": "x"}, lengths=LENGTHS)
    with pytest.raises(ReplayError, match="pass the record lengths"):
        replay_assignment(record)
    with pytest.raises(ReplayError, match="not the ones"):
        replay_assignment(record, lengths=LENGTHS + 1)
    with pytest.raises(ReplayError, match="JSON object"):
        replay_assignment([record])  # type: ignore[arg-type]


def test_the_data_at_hand_must_match_the_record(record: dict[str, Any]) -> None:
    other = "sha256:" + "e" * 64
    for name in IDS:
        with pytest.raises(ReplayError, match=f"made for {name}"):
            replay_assignment(record, lengths=LENGTHS, **{name: other})


def test_lengths_without_bucketing_change_nothing() -> None:
    plain = _sampler(lengths=None, bucketing=None).assignment(1)
    with_lengths = _sampler(bucketing=None).assignment(1)
    assert with_lengths.digest == plain.digest and with_lengths.batches is None
    assert replay_assignment(with_lengths.to_record()).digest == plain.digest
    policy = BucketingPolicy(max_tokens=64, boundaries=[8, 16])  # type: ignore[arg-type]
    assert policy.boundaries == (8, 16) and hash(policy) == hash(BucketingPolicy(64, (8, 16)))


def test_sampler_without_identities_is_not_auditable() -> None:
    record = DistributedSampler(10, world_size=2, rank=0).assignment().to_record()
    with pytest.raises(ReplayError, match="dataset_hash.*tokenizer_hash.*template_hash"):
        replay_assignment(record)
    with pytest.raises(tp.errors.BatchError, match="sha256"):
        DistributedSampler(10, world_size=2, rank=0, tokenizer_hash="abc")
    with pytest.raises(tp.errors.BatchError, match="needs the record lengths"):
        DistributedSampler(10, world_size=2, rank=0, bucketing=POLICY)
    with pytest.raises(tp.errors.BatchError, match="strictly increasing"):
        BucketingPolicy(max_tokens=10, boundaries=(8, 8))


def test_an_epoch_of_real_encodings_is_bound_to_its_tokenizer() -> None:
    texts = ["Grüße aus Köln.", "東京の天気は晴れです。", "The cat sleeps."] * 7
    tok = tp.train_bpe(texts * 3, vocab_size=300, special_tokens=())
    encodings = tok.encode_structured_batch(texts)
    lengths = [len(e) for e in encodings]
    identities = {
        "dataset_hash": "sha256:" + "5" * 64,
        "tokenizer_hash": encodings[0].tokenizer_hash,
        "template_hash": TEMPLATE,
    }
    sampler = DistributedSampler(
        len(texts),
        world_size=2,
        rank=1,
        **identities,
        lengths=lengths,
        bucketing=BucketingPolicy(max_tokens=64),
    )
    record = sampler.assignment(1).to_record()
    assert record["tokenizer_hash"] == tok.semantic_hash
    replay_assignment(record, lengths=lengths, **identities)
    other = tp.train_bpe(texts * 3, vocab_size=290, special_tokens=())
    with pytest.raises(ReplayError, match="made for tokenizer_hash"):
        replay_assignment(record, lengths=lengths, tokenizer_hash=other.semantic_hash)


JUNK = [None, "x", -1, 1.5, [], {}, [[-1]], [["a"]], [-3], 2**70, 2**62, {"mode": None}]


def test_junk_in_any_field_is_a_replay_error(record: dict[str, Any]) -> None:
    """Fuzzed values (wrong types, huge ints, nested junk) never escape as another error."""
    for name in RECORD_FIELDS:
        for value in JUNK:
            if value == record[name]:
                continue  # e.g. an empty dropped list is this record's true value
            with pytest.raises(ReplayError):
                replay_assignment({**record, name: value}, lengths=LENGTHS)
    for name in record["bucketing"]:
        for value in JUNK:
            if value == record["bucketing"][name]:
                continue
            broken = copy.deepcopy(record)
            broken["bucketing"][name] = value
            with pytest.raises(ReplayError):
                replay_assignment(broken, lengths=LENGTHS)
    for lengths in ("x", [1.5], [[1]], list(LENGTHS[:-1])):
        with pytest.raises(ReplayError):
            replay_assignment(record, lengths=lengths)


def test_a_sample_segments_the_same_on_any_rank() -> None:
    """Seed 0x04B: rank must not change a sample's IDs; stochastic segmentation is keyed
    by the sample (not the worker), so 1 rank and 4 ranks give the same draws."""
    texts = [f"Beispiel {i}: Grüße, lowest newest widest tokens" for i in range(30)]
    tok = tp.train_bpe(texts * 3, vocab_size=320, special_tokens=())

    def segmented(world: int) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for rank in range(world):
            sampler = DistributedSampler(len(texts), world_size=world, rank=rank, seed=1, **IDS)
            for i in sampler.assignment(3).indices.tolist():
                key = tp.SampleKey(seed=1, epoch=3, sample_id=i)
                out[i] = tp.bpe_dropout(tok, texts[i], p=0.3, key=key)
        return out

    assert segmented(1) == segmented(4)
