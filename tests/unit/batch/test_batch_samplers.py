"""Samplers: deterministic, budget-respecting, and every record accounted for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.batch import (
    DistributedSampler,
    TokenBudgetBatchSampler,
    check_coverage,
    length_buckets,
)
from tokenpact.errors import BatchError


def test_length_buckets() -> None:
    assert length_buckets([1, 128, 129, 600], [128, 512]).tolist() == [0, 0, 1, 2]
    with pytest.raises(BatchError, match="strictly increasing"):
        length_buckets([1], [512, 128])


@given(
    st.lists(st.integers(1, 50), min_size=1, max_size=200),
    st.integers(50, 400),
    st.sampled_from(["padded", "packed"]),
    st.integers(1, 8),
    st.booleans(),
)
def test_token_budget_batches_cover_every_record_once(
    lengths: list[int], budget: int, layout: str, multiple: int, bucketed: bool
) -> None:
    sampler = TokenBudgetBatchSampler(
        lengths,
        max_tokens=budget + multiple * 50,
        layout=layout,  # type: ignore[arg-type]
        multiple=multiple,
        bucket_boundaries=[8, 16, 32] if bucketed else None,
        seed=3,
    )
    batches = sampler.batches()
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    ls = np.asarray(lengths)
    for batch in batches:
        if layout == "packed":
            cost = int(ls[batch].sum())
        else:
            width = -(-int(ls[batch].max()) // multiple) * multiple
            cost = len(batch) * width
        assert cost <= sampler.max_tokens
        if bucketed:
            assert len(set(length_buckets(ls[batch], [8, 16, 32]).tolist())) == 1


def test_token_budget_sampler_is_deterministic_per_epoch() -> None:
    lengths = np.random.default_rng(0).integers(1, 100, size=300)
    a = TokenBudgetBatchSampler(lengths, max_tokens=512, seed=7)
    b = TokenBudgetBatchSampler(lengths, max_tokens=512, seed=7)
    assert [x.tolist() for x in a.batches()] == [x.tolist() for x in b.batches()]
    b.set_epoch(1)
    assert [x.tolist() for x in a.batches()] != [x.tolist() for x in b.batches()]
    assert list(iter(b)) == [x.tolist() for x in b.batches(1)]
    assert len(b) == len(b.batches(1))


def test_token_budget_sampler_max_records_and_errors() -> None:
    s = TokenBudgetBatchSampler([1] * 10, max_tokens=100, max_records=3, shuffle=False)
    assert [len(b) for b in s.batches()] == [3, 3, 3, 1]
    with pytest.raises(BatchError, match="record 1 alone costs 80 tokens"):
        TokenBudgetBatchSampler([3, 80], max_tokens=64)
    with pytest.raises(BatchError, match="layout"):
        TokenBudgetBatchSampler([3], max_tokens=64, layout="jagged")  # type: ignore[arg-type]
    with pytest.raises(BatchError, match="at least one token"):
        TokenBudgetBatchSampler([3, 0], max_tokens=64)


def test_bucketing_reduces_padding() -> None:
    lengths = np.random.default_rng(1).integers(1, 512, size=2000)

    def pad(sampler: TokenBudgetBatchSampler) -> int:
        return sum(
            len(b) * int(lengths[b].max()) - int(lengths[b].sum()) for b in sampler.batches()
        )

    plain = TokenBudgetBatchSampler(lengths, max_tokens=4096, seed=0)
    bucketed = TokenBudgetBatchSampler(
        lengths, max_tokens=4096, seed=0, bucket_boundaries=[32, 64, 128, 256]
    )
    assert pad(bucketed) < pad(plain)


@given(
    st.integers(0, 50),
    st.integers(1, 8),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
)
def test_distributed_assignments_cover_every_record_once(
    n: int, world: int, drop_last: bool, shuffle: bool, epoch: int
) -> None:
    samplers = [
        DistributedSampler(
            n, world_size=world, rank=r, seed=5, shuffle=shuffle, drop_last=drop_last
        )
        for r in range(world)
    ]
    assignments = [s.assignment(epoch) for s in samplers]
    check_coverage(assignments)
    sizes = {len(a.indices) for a in assignments}
    assert sizes == {len(samplers[0])}  # every rank takes the same number of steps
    if drop_last:
        assert len(assignments[0].dropped) == n % world
    else:
        assert sum(int(a.repeated.sum()) for a in assignments) == (-n) % world


def test_distributed_sampler_matches_torch_semantics_without_shuffle() -> None:
    s = DistributedSampler(10, world_size=4, rank=1, shuffle=False)
    assert list(s) == [1, 5, 9]
    s = DistributedSampler(10, world_size=4, rank=3, shuffle=False)
    assert list(s) == [3, 7, 1]  # padded by repeating from the start
    s = DistributedSampler(10, world_size=4, rank=3, shuffle=False, drop_last=True)
    assert list(s) == [3, 7]
    assert s.assignment().dropped.tolist() == [8, 9]


def test_assignment_is_recorded_and_reproducible() -> None:
    a = DistributedSampler(100, world_size=4, rank=2, seed=11)
    b = DistributedSampler(100, world_size=4, rank=2, seed=11)
    assert a.assignment(3).digest == b.assignment(3).digest
    assert a.assignment(3).digest != a.assignment(4).digest
    record = a.assignment(3).as_dict()
    assert {"seed", "epoch", "rank", "world_size", "drop_last", "indices"} <= set(record)
    assert (record["seed"], record["epoch"], record["rank"]) == (11, 3, 2)
    a.set_epoch(3)
    assert list(a) == record["indices"]


def test_distributed_sampler_errors() -> None:
    with pytest.raises(BatchError, match="below world_size"):
        DistributedSampler(10, world_size=2, rank=2)
    with pytest.raises(BatchError, match="world_size must be a positive integer"):
        DistributedSampler(10, world_size=0, rank=0)
    with pytest.raises(BatchError, match="one assignment per rank"):
        check_coverage([DistributedSampler(10, world_size=2, rank=0).assignment()])
