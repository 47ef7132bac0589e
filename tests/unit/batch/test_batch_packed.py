"""Packed collation: boundaries, the declared stream policy, and runtime handoff kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import (
    IGNORE_INDEX,
    RecordTable,
    SequenceRecord,
    StreamPolicy,
    collate_bins,
    collate_packed,
    first_fit_decreasing,
)
from tokenpact.errors import BatchError

I = IGNORE_INDEX  # noqa: E741


@pytest.fixture
def docs() -> list[SequenceRecord]:
    return [
        SequenceRecord("d0", [1, 2, 3], token_owners="doc"),
        SequenceRecord("d1", [4, 5], token_owners="doc", sequence_bundle_hash="bundle-1"),
        SequenceRecord("d2", [6, 7, 8, 9], token_owners="doc"),
    ]


def test_independent_policy(docs: list[SequenceRecord]) -> None:
    b = collate_packed(docs)
    assert b.policy_name == "independent"
    assert b.cu_seqlens.tolist() == [0, 3, 5, 9]
    assert b.attention_cu_seqlens.tolist() == [0, 3, 5, 9]
    assert b.seq_idx.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert b.seq_idx.dtype == np.int32
    assert b.labels.tolist() == [2, 3, I, 5, I, 7, 8, 9, I]
    assert b.bundle_hashes == (None, "bundle-1", None)


def test_stream_policy_is_declared_and_crosses_boundaries(docs: list[SequenceRecord]) -> None:
    b = collate_packed(docs, policy=StreamPolicy())
    assert b.policy_name == "stream"
    assert b.labels.tolist() == [2, 3, 4, 5, 6, 7, 8, 9, I]
    assert b.position_ids.tolist() == list(range(9))
    assert b.attention_cu_seqlens.tolist() == [0, 9]
    assert b.attention_max_seqlen == 9
    # Record boundaries stay available for ownership and reconstruction.
    assert b.cu_seqlens.tolist() == [0, 3, 5, 9]
    assert b.max_seqlen == 4
    assert (b.dense_causal_mask() == np.tri(9, dtype=bool)).all()


def test_stream_policy_parts_are_independent(docs: list[SequenceRecord]) -> None:
    b = collate_packed(
        docs,
        policy=StreamPolicy(
            attend_across=False, continue_positions=False, supervise_boundaries=True
        ),
    )
    assert b.attention_cu_seqlens.tolist() == [0, 3, 5, 9]
    assert b.position_ids.tolist() == [0, 1, 2, 0, 1, 0, 1, 2, 3]
    assert b.labels[2] == 4  # the boundary target is trained, as declared


def test_unknown_policy(docs: list[SequenceRecord]) -> None:
    with pytest.raises(BatchError, match="StreamPolicy"):
        collate_packed(docs, policy="stream")  # type: ignore[arg-type]


def test_dense_mask_is_block_diagonal(docs: list[SequenceRecord]) -> None:
    mask = collate_packed(docs).dense_causal_mask()
    assert mask.shape == (9, 9)
    assert mask[4, 3] and not mask[3, 2] and not mask[4, 5]
    assert not mask[5, 4]  # d2 cannot see d1
    with pytest.raises(BatchError, match="variable-length attention kernel"):
        collate_packed(docs).dense_causal_mask(max_elements=10)


def test_flash_attn_kwargs(docs: list[SequenceRecord]) -> None:
    kw = collate_packed(docs).flash_attn_varlen_kwargs()
    assert kw["cu_seqlens_q"].dtype == np.int32
    assert kw["cu_seqlens_k"].tolist() == [0, 3, 5, 9]
    assert kw["max_seqlen_q"] == kw["max_seqlen_k"] == 4


def test_hf_flattening_kwargs_need_unshifted_labels(docs: list[SequenceRecord]) -> None:
    with pytest.raises(BatchError, match="label_convention='unshifted'"):
        collate_packed(docs).hf_flattening_kwargs()
    kw = collate_packed(docs, label_convention="unshifted").hf_flattening_kwargs()
    assert kw["input_ids"].shape == (1, 9)
    # DataCollatorWithFlattening puts -100 on the first label of every example.
    assert kw["labels"].tolist() == [[I, 2, 3, I, 5, I, 7, 8, 9]]
    assert kw["position_ids"].tolist() == [[0, 1, 2, 0, 1, 0, 1, 2, 3]]
    assert kw["seq_idx"].tolist() == [[0, 0, 0, 1, 1, 2, 2, 2, 2]]
    assert kw["cu_seq_lens_q"].tolist() == [0, 3, 5, 9]
    assert kw["max_length_q"] == kw["max_length_k"] == 4


def test_hf_kwargs_as_torch(docs: list[SequenceRecord]) -> None:
    torch = pytest.importorskip("torch")
    kw = collate_packed(docs, label_convention="unshifted").hf_flattening_kwargs(
        return_tensors="pt"
    )
    assert kw["cu_seq_lens_q"].dtype == torch.int32


def test_records_reconstruct_every_field(docs: list[SequenceRecord]) -> None:
    b = collate_packed(docs)
    assert [r.tolist() for r in b.records("position_ids")] == [[0, 1, 2], [0, 1], [0, 1, 2, 3]]
    assert b.token_ownership().tolist() == ["doc"] * 9


def test_bins_describe_capacity(docs: list[SequenceRecord]) -> None:
    b = collate_packed(docs, bins=[0, 2, 3], capacity=5)
    assert b.bin_offsets is not None and b.bin_offsets.tolist() == [0, 5, 9]
    assert b.report.bins == 2 and b.report.slots == 10 and b.report.variation_pad == 1
    with pytest.raises(BatchError, match="more than capacity=4"):
        collate_packed(docs, bins=[0, 2, 3], capacity=4)
    with pytest.raises(BatchError, match="record offsets"):
        collate_packed(docs, bins=[0, 3, 2])
    with pytest.raises(BatchError, match="pass bins="):
        collate_packed(docs, capacity=8)


def test_flat_report(docs: list[SequenceRecord]) -> None:
    r = collate_packed(docs).report
    assert (r.real_tokens, r.slots, r.pad_tokens, r.bins) == (9, 9, 0, 1)
    assert r.attention_useful == 9 + 4 + 16
    assert r.utilization == 1.0


def test_collate_bins_follows_the_plan() -> None:
    lengths = [5, 3, 4, 2, 6]
    table = RecordTable(np.arange(sum(lengths)), offsets=np.concatenate(([0], np.cumsum(lengths))))
    plan = first_fit_decreasing(lengths, capacity=8)
    assert [b.tolist() for b in plan.bins()] == [[4, 3], [0, 1], [2]]
    batch = collate_bins(table, plan, start=0, stop=2)
    assert batch.sample_ids == ("4", "3", "0", "1")
    assert batch.bin_offsets is not None and batch.bin_offsets.tolist() == [0, 8, 16]
    assert batch.report.utilization == 1.0
    whole = collate_bins(table, plan)
    assert whole.report.bins == 3 and whole.report.slots == 24
    with pytest.raises(BatchError, match="bin range"):
        collate_bins(table, plan, start=2, stop=2)
    with pytest.raises(BatchError, match="from the plan"):
        collate_bins(table, plan, capacity=8)


def test_gather_paths_agree() -> None:
    # Short records take the vectorized gather, long ones the per-record copy.
    rng = np.random.default_rng(3)
    for low, high in ((1, 4), (40, 90)):
        lengths = rng.integers(low, high, size=50)
        pool = rng.integers(0, 1000, size=int(lengths.sum()) + 500)
        starts = rng.integers(0, 500, size=50) + np.concatenate(([0], np.cumsum(lengths)[:-1]))
        table = RecordTable(pool, starts=starts, lengths=lengths)
        order = rng.permutation(50)
        batch = collate_packed(table, indices=order)
        expected = np.concatenate([pool[starts[i] : starts[i] + lengths[i]] for i in order])
        assert batch.input_ids.tolist() == expected.tolist()


def test_batches_never_alias_the_source_table() -> None:
    table = RecordTable(np.arange(1, 7), offsets=[0, 2, 6])
    for batch in (collate_packed(table), collate_packed(table, indices=[1, 0])):
        batch.input_ids[:] = 0
    assert table.input_ids.tolist() == [1, 2, 3, 4, 5, 6]
