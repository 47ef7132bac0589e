"""Bin packers: assign records to context-length bins of a fixed token capacity.

* ``first_fit_decreasing``: longest record first, each into the lowest-numbered bin
  that still has room.
* ``best_fit_decreasing``: longest record first, each into the bin with the least room
  that still fits it (ties: lowest-numbered bin).
* ``greedy_in_order``: the baseline; records in their given order, a new bin whenever
  the next one does not fit (next-fit).

Ties between equal lengths are broken by record index, so plans are deterministic. The
fast paths work on *length classes*, not items: lengths are integers no larger than the
capacity, so a million records have at most ``capacity`` distinct lengths. FFD uses its
bin-at-a-time equivalent (fill bin 1 greedily from the largest remaining lengths, then
bin 2, ...) and emits runs of identical bins at once; best-fit keeps the open bins in
buckets by remaining capacity. Neither loops over tokens or, in the common case, items.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int
from .metrics import BatchReport, packed_report


@dataclass(frozen=True, eq=False)
class PackingPlan:
    """Which records go to which bin: ``order[bin_offsets[i]:bin_offsets[i + 1]]`` is bin i.

    ``order`` holds record indices (into the packed ``lengths``); every record appears
    exactly once, so sample IDs survive the reordering.
    """

    order: NDArray[np.int64]
    bin_offsets: NDArray[np.int64]
    lengths: NDArray[np.int64]
    capacity: int
    algorithm: str

    @property
    def n_bins(self) -> int:
        return int(self.bin_offsets.shape[0] - 1)

    def bin(self, i: int) -> NDArray[np.int64]:
        """Record indices of bin ``i``, in placement order."""
        return self.order[self.bin_offsets[i] : self.bin_offsets[i + 1]]

    def bins(self) -> list[NDArray[np.int64]]:
        """Record indices of every bin."""
        return [self.bin(i) for i in range(self.n_bins)]

    @property
    def bin_tokens(self) -> NDArray[np.int64]:
        """Tokens held by each bin."""
        if self.n_bins == 0:
            return np.zeros(0, dtype=np.int64)
        return np.add.reduceat(self.lengths[self.order], self.bin_offsets[:-1])

    def report(self) -> BatchReport:
        """Utilization of the whole plan (slots = bins * capacity)."""
        return packed_report(self.lengths, bins=self.n_bins, capacity=self.capacity)

    def batch_ranges(self, bins_per_batch: int) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` bin ranges of consecutive batches, for ``collate_bins``."""
        step = check_positive_int(bins_per_batch, "bins_per_batch")
        for start in range(0, self.n_bins, step):
            yield start, min(start + step, self.n_bins)

    def verify(self) -> None:
        """Raise BatchError unless every record is placed once and no bin overflows."""
        seen = np.bincount(self.order, minlength=self.lengths.shape[0])
        if self.order.shape[0] != self.lengths.shape[0] or bool(np.any(seen != 1)):
            raise BatchError("the plan drops or duplicates a record")
        if self.n_bins and int(self.bin_tokens.max()) > self.capacity:
            raise BatchError("a bin holds more tokens than the capacity")


def _check_lengths(lengths: ArrayLike, capacity: int) -> tuple[NDArray[np.int64], int]:
    cap = check_positive_int(capacity, "capacity")
    arr = np.asarray(lengths)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise BatchError("lengths must be a flat sequence of integer record lengths")
    ls = arr.astype(np.int64, copy=False)
    if ls.size and int(ls.min()) < 1:
        raise BatchError(
            f"record {int(np.argmin(ls))} has no tokens; drop empty records before packing"
        )
    if ls.size and int(ls.max()) > cap:
        worst = int(np.argmax(ls))
        raise BatchError(
            f"record {worst} has {int(ls[worst])} tokens, more than capacity={cap}; split "
            "long documents first (make_windows, pack_causal_examples) or truncate upstream"
        )
    return ls, cap


def _length_classes(ls: NDArray[np.int64]) -> tuple[NDArray[np.int64], list[int], list[int]]:
    """Items sorted by (length descending, index), and the distinct lengths with counts."""
    order = np.lexsort((np.arange(ls.shape[0]), -ls))
    neg_sorted, counts = np.unique(-ls[order], return_counts=True)
    return order, (-neg_sorted).tolist(), counts.tolist()


def _plan(
    order: NDArray[np.int64],
    item_bins: NDArray[np.int64],
    n_bins: int,
    ls: NDArray[np.int64],
    cap: int,
    algorithm: str,
) -> PackingPlan:
    # item_bins follows the sorted order, so a stable sort by bin keeps each bin's
    # records in placement (decreasing length) order.
    perm = np.argsort(item_bins, kind="stable")
    offsets = np.zeros(n_bins + 1, dtype=np.int64)
    np.cumsum(np.bincount(item_bins, minlength=n_bins), out=offsets[1:])
    return PackingPlan(order[perm], offsets, ls, cap, algorithm)


def first_fit_decreasing(lengths: ArrayLike, *, capacity: int) -> PackingPlan:
    """First-fit-decreasing bin packing of record lengths into bins of ``capacity`` tokens.

    >>> [b.tolist() for b in first_fit_decreasing([3, 5, 2, 4], capacity=7).bins()]
    [[1, 2], [3, 0]]
    """
    ls, cap = _check_lengths(lengths, capacity)
    if ls.size == 0:
        return PackingPlan(
            np.zeros(0, np.int64), np.zeros(1, np.int64), ls, cap, "first_fit_decreasing"
        )
    order, sizes, counts = _length_classes(ls)
    n_classes = len(sizes)
    neg_sizes = [-s for s in sizes]  # ascending, for bisect
    smallest = sizes[-1]
    # Union-find over classes: skip exhausted ones in near-constant time.
    parent = list(range(1, n_classes + 1))

    def available(i: int) -> int:
        root = i
        while root < n_classes and counts[root] == 0:
            root = parent[root]
        while i < n_classes and counts[i] == 0 and parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    allocations: list[tuple[int, int, int, int]] = []  # (class, first bin, bins, per bin)
    n_bins = 0
    remaining = int(ls.shape[0])
    while remaining:
        room = cap
        steps: list[tuple[int, int]] = []
        cls = available(bisect_left(neg_sizes, -room))
        while cls < n_classes:
            take = min(room // sizes[cls], counts[cls])
            steps.append((cls, take))
            room -= take * sizes[cls]
            if room < smallest:
                break
            cls = available(bisect_left(neg_sizes, -room, cls + 1))
        # The same greedy fill repeats for as many fresh bins as every class can supply.
        repeats = min(counts[c] // take for c, take in steps)
        for c, take in steps:
            allocations.append((c, n_bins, repeats, take))
            counts[c] -= repeats * take
            remaining -= repeats * take
        n_bins += repeats
    alloc = np.asarray(allocations, dtype=np.int64)
    alloc = alloc[np.argsort(alloc[:, 0], kind="stable")]  # class-major = sorted item order
    per_alloc = alloc[:, 2] * alloc[:, 3]
    owner = np.repeat(np.arange(alloc.shape[0]), per_alloc)
    first_item = np.zeros(alloc.shape[0], dtype=np.int64)
    np.cumsum(per_alloc[:-1], out=first_item[1:])
    within = np.arange(ls.shape[0]) - first_item[owner]
    item_bins = alloc[owner, 1] + within // alloc[owner, 3]
    return _plan(order, item_bins, n_bins, ls, cap, "first_fit_decreasing")


def best_fit_decreasing(lengths: ArrayLike, *, capacity: int) -> PackingPlan:
    """Best-fit-decreasing bin packing: each record goes to the fullest bin it fits."""
    ls, cap = _check_lengths(lengths, capacity)
    if ls.size == 0:
        return PackingPlan(
            np.zeros(0, np.int64), np.zeros(1, np.int64), ls, cap, "best_fit_decreasing"
        )
    order, sizes, counts = _length_classes(ls)
    smallest = sizes[-1]
    buckets: dict[int, NDArray[np.int64]] = {}  # room -> open bins with that room, ascending
    rooms: list[int] = []  # the keys of buckets, sorted
    bin_parts: list[NDArray[np.int64]] = []
    count_parts: list[NDArray[np.int64]] = []
    n_bins = 0

    def put(room: int, bins: NDArray[np.int64]) -> None:
        if room < smallest or bins.shape[0] == 0:
            return  # a bin with less room than the smallest record is closed for good
        held = buckets.get(room)
        if held is None:
            buckets[room] = bins
            insort(rooms, room)
        else:
            buckets[room] = np.sort(np.concatenate((held, bins)))

    for size, left in zip(sizes, counts, strict=True):
        moves: list[tuple[int, NDArray[np.int64], int, int]] = []
        # Rooms that fit `size`, smallest first: the best fit. A bin with room r takes
        # r // size records in a row, since its new room stays the smallest that fits.
        at = bisect_left(rooms, size)
        while left and at < len(rooms):
            room = rooms[at]
            per_bin = room // size
            held = buckets[room]
            need = -(-left // per_bin)
            taken = held[:need]
            if need >= held.shape[0]:
                del buckets[room]
                rooms.pop(at)
            else:
                buckets[room] = held[need:]
                at += 1
            last = left - (taken.shape[0] - 1) * per_bin if need <= held.shape[0] else per_bin
            moves.append((room, taken, per_bin, min(last, per_bin)))
            left -= min(left, taken.shape[0] * per_bin)
        if left:
            per_bin = cap // size
            need = -(-left // per_bin)
            moves.append(
                (cap, np.arange(n_bins, n_bins + need), per_bin, left - (need - 1) * per_bin)
            )
            n_bins += need
            left = 0
        for room, taken, per_bin, last in moves:
            per = np.full(taken.shape[0], per_bin, dtype=np.int64)
            per[-1] = last
            bin_parts.append(taken)
            count_parts.append(per)
            if last == per_bin:
                put(room - per_bin * size, taken)
            else:
                put(room - per_bin * size, taken[:-1])
                put(room - last * size, taken[-1:])
    item_bins = np.repeat(np.concatenate(bin_parts), np.concatenate(count_parts))
    return _plan(order, item_bins, n_bins, ls, cap, "best_fit_decreasing")


def greedy_in_order(lengths: ArrayLike, *, capacity: int) -> PackingPlan:
    """Baseline next-fit packing in the given order: open a new bin when a record won't fit."""
    ls, cap = _check_lengths(lengths, capacity)
    n = int(ls.shape[0])
    cum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(ls, out=cum[1:])
    starts: list[int] = []
    at = 0
    while at < n:
        starts.append(at)
        # The bin takes records at..end-1: the longest prefix whose tokens fit.
        at = int(np.searchsorted(cum, cum[at] + cap, side="right")) - 1
    offsets = np.asarray([*starts, n], dtype=np.int64)
    return PackingPlan(np.arange(n, dtype=np.int64), offsets, ls, cap, "greedy_in_order")
