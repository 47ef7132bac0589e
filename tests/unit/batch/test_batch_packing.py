"""Bin packers against short item-by-item reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.batch import best_fit_decreasing, first_fit_decreasing, greedy_in_order
from tokenpact.errors import BatchError


def _decreasing(lengths: list[int]) -> list[int]:
    return sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))


def ffd_reference(lengths: list[int], capacity: int) -> list[list[int]]:
    room: list[int] = []
    bins: list[list[int]] = []
    for i in _decreasing(lengths):
        for b, r in enumerate(room):
            if r >= lengths[i]:
                room[b] -= lengths[i]
                bins[b].append(i)
                break
        else:
            room.append(capacity - lengths[i])
            bins.append([i])
    return bins


def bfd_reference(lengths: list[int], capacity: int) -> list[list[int]]:
    room: list[int] = []
    bins: list[list[int]] = []
    for i in _decreasing(lengths):
        fits = [(r, b) for b, r in enumerate(room) if r >= lengths[i]]
        if fits:
            _, b = min(fits)
            room[b] -= lengths[i]
            bins[b].append(i)
        else:
            room.append(capacity - lengths[i])
            bins.append([i])
    return bins


def greedy_reference(lengths: list[int], capacity: int) -> list[list[int]]:
    bins: list[list[int]] = []
    used = capacity
    for i, n in enumerate(lengths):
        if used + n > capacity:
            bins.append([])
            used = 0
        bins[-1].append(i)
        used += n
    return bins


@st.composite
def packing_inputs(draw: st.DrawFn) -> tuple[list[int], int]:
    capacity = draw(st.integers(1, 40))
    lengths = draw(st.lists(st.integers(1, capacity), max_size=80))
    return lengths, capacity


@given(packing_inputs())
def test_packers_match_references(case: tuple[list[int], int]) -> None:
    lengths, capacity = case
    for packer, reference in (
        (first_fit_decreasing, ffd_reference),
        (best_fit_decreasing, bfd_reference),
        (greedy_in_order, greedy_reference),
    ):
        plan = packer(lengths, capacity=capacity)
        plan.verify()
        assert [b.tolist() for b in plan.bins()] == reference(lengths, capacity)


def test_many_equal_lengths_use_runs_of_identical_bins() -> None:
    lengths = [3] * 1000 + [5] * 7
    plan = first_fit_decreasing(lengths, capacity=10)
    plan.verify()
    assert [b.tolist() for b in plan.bins()] == ffd_reference(lengths, 10)


def test_plan_report_and_bin_tokens() -> None:
    plan = first_fit_decreasing([6, 4, 3], capacity=8)
    assert plan.bin_tokens.tolist() == [6, 7]
    report = plan.report()
    assert (report.bins, report.slots, report.real_tokens) == (2, 16, 13)
    assert list(plan.batch_ranges(1)) == [(0, 1), (1, 2)]


def test_greedy_wastes_more_than_ffd() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, 4097, size=5000)
    greedy = greedy_in_order(lengths, capacity=8192).report().utilization
    ffd = first_fit_decreasing(lengths, capacity=8192).report().utilization
    bfd = best_fit_decreasing(lengths, capacity=8192).report().utilization
    assert ffd > greedy and bfd > greedy
    assert ffd > 0.99


def test_empty_input_gives_an_empty_plan() -> None:
    for packer in (first_fit_decreasing, best_fit_decreasing, greedy_in_order):
        plan = packer([], capacity=8)
        assert plan.n_bins == 0
        plan.verify()


@pytest.mark.parametrize(
    ("lengths", "capacity", "message"),
    [
        ([3, 9], 8, "record 1 has 9 tokens, more than capacity=8; split"),
        ([3, 0], 8, "record 1 has no tokens"),
        ([3, 2], 0, "capacity must be a positive integer"),
        ([[1, 2]], 8, "flat sequence"),
        ([1.5], 8, "flat sequence"),
    ],
)
def test_bad_packing_input(lengths: object, capacity: int, message: str) -> None:
    for packer in (first_fit_decreasing, best_fit_decreasing, greedy_in_order):
        with pytest.raises(BatchError, match=message):
            packer(lengths, capacity=capacity)  # type: ignore[arg-type]
