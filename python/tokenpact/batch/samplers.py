"""Deterministic sampling: length buckets, token-budget batches, distributed shards.

Every order here is a pure function of ``(seed, epoch)`` and the lengths, never of
thread count or hash order; record indices (and so sample IDs) are carried through every
reordering, and each epoch places every record exactly once unless a documented policy
(``drop_last``, distributed repeat padding) says otherwise, in which case the assignment
records which indices were dropped or repeated. The assignment also records the dataset,
tokenizer and template hashes and the bucketing policy, so ``replay_assignment``
(``sampler_replay.py``) can redo an epoch.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int

ASSIGNMENT_FORMAT = "tokenpact.sampler-assignment/2"
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def is_sha256(value: object) -> bool:
    return isinstance(value, str) and bool(_SHA256.match(value))


def _rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(epoch)])


def _check_nonnegative(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise BatchError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


def _lengths(lengths: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(lengths)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise BatchError("lengths must be a flat sequence of integer record lengths")
    ls = arr.astype(np.int64, copy=False)
    if ls.size and int(ls.min()) < 1:
        raise BatchError("every record needs at least one token; drop empty records first")
    return ls


def length_buckets(lengths: ArrayLike, boundaries: ArrayLike) -> NDArray[np.int64]:
    """Bucket of each record: bucket ``k`` holds lengths in ``(b[k-1], b[k]]``.

    >>> length_buckets([3, 8, 9, 100], [8, 64]).tolist()
    [0, 0, 1, 2]
    """
    bounds = np.asarray(boundaries, dtype=np.int64)
    if bounds.ndim != 1 or bool(np.any(np.diff(bounds) <= 0)):
        raise BatchError("bucket boundaries must be strictly increasing lengths, e.g. [128, 512]")
    return np.searchsorted(bounds, _lengths(lengths), side="left").astype(np.int64)


class TokenBudgetBatchSampler:
    """Batches of record indices whose cost stays within ``max_tokens``.

    The cost is ``rows * aligned longest`` for the padded layout and the token sum for the
    packed one, so the number of records per batch varies. With ``bucket_boundaries``
    records are grouped by length bucket (shuffled within it) before batching, which
    removes most length-variation PAD; batch order is then shuffled so buckets interleave.
    Usable as a PyTorch ``batch_sampler``.

    >>> s = TokenBudgetBatchSampler([6, 4, 3, 5], max_tokens=12, shuffle=False)
    >>> [b.tolist() for b in s.batches()]
    [[0, 1], [2, 3]]
    """

    def __init__(
        self,
        lengths: ArrayLike,
        *,
        max_tokens: int,
        layout: Literal["padded", "packed"] = "padded",
        multiple: int = 1,
        bucket_boundaries: ArrayLike | None = None,
        max_records: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
    ) -> None:
        self.lengths = _lengths(lengths)
        self.max_tokens = check_positive_int(max_tokens, "max_tokens")
        if layout not in ("padded", "packed"):
            raise BatchError(f"layout={layout!r} is unknown; use 'padded' or 'packed'")
        self.layout = layout
        self.multiple = check_positive_int(multiple, "multiple")
        self.max_records = (
            None if max_records is None else check_positive_int(max_records, "max_records")
        )
        self.buckets = (
            None if bucket_boundaries is None else length_buckets(self.lengths, bucket_boundaries)
        )
        self.shuffle = bool(shuffle)
        self.seed = _check_nonnegative(seed, "seed")
        self.epoch = 0
        cost = self.lengths if layout == "packed" else self._aligned(self.lengths)
        if cost.size and int(cost.max()) > self.max_tokens:
            worst = int(np.argmax(cost))
            raise BatchError(
                f"record {worst} alone costs {int(cost[worst])} tokens, more than "
                f"max_tokens={self.max_tokens}; raise the budget or split the record"
            )

    def _aligned(self, values: NDArray[np.int64]) -> NDArray[np.int64]:
        return -(-values // self.multiple) * self.multiple

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order ``__iter__`` yields."""
        self.epoch = _check_nonnegative(epoch, "epoch")

    def batches(self, epoch: int | None = None) -> list[NDArray[np.int64]]:
        """All batches of an epoch (default: the current one), in yield order."""
        ep = self.epoch if epoch is None else _check_nonnegative(epoch, "epoch")
        n = int(self.lengths.shape[0])
        rng = _rng(self.seed, ep)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        if self.buckets is not None:
            order = order[np.argsort(self.buckets[order], kind="stable")]
            cuts = np.flatnonzero(np.diff(self.buckets[order])) + 1
            runs = np.split(order, cuts)
        else:
            runs = [order]
        batches: list[NDArray[np.int64]] = []
        for run in runs:
            batches.extend(self._split(run))
        if self.shuffle and len(batches) > 1:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches

    def _split(self, run: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        ls = self.lengths[run]
        n = int(run.shape[0])
        limit = self.max_records or n
        out: list[NDArray[np.int64]] = []
        if self.layout == "packed":
            cum = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(ls, out=cum[1:])
        at = 0
        while at < n:
            if self.layout == "packed":
                end = int(np.searchsorted(cum, cum[at] + self.max_tokens, side="right")) - 1
            else:
                # The first record fixes a minimum width, which bounds the rows to look at.
                rows = self.max_tokens // int(self._aligned(ls[at : at + 1])[0])
                window = ls[at : at + rows]
                cost = np.arange(1, window.shape[0] + 1) * self._aligned(
                    np.maximum.accumulate(window)
                )
                end = at + int(np.searchsorted(cost, self.max_tokens, side="right"))
            end = min(end, at + limit, n)
            out.append(run[at:end])
            at = end
        return out

    def __iter__(self) -> Iterator[list[int]]:
        return (batch.tolist() for batch in self.batches())

    def __len__(self) -> int:
        return len(self.batches())


@dataclass(frozen=True)
class BucketingPolicy:
    """How each rank groups its shard into batches: the :class:`TokenBudgetBatchSampler`
    options (``boundaries`` empty: token-budget batches without length buckets).

    Recorded in the assignment; the in-shard shuffle uses a seed derived from
    ``(seed, rank)`` (see :func:`rank_seed`), so ranks do not share one pattern.
    """

    max_tokens: int
    boundaries: tuple[int, ...] = ()
    layout: Literal["padded", "packed"] = "padded"
    multiple: int = 1
    max_records: int | None = None

    def __post_init__(self) -> None:
        check_positive_int(self.max_tokens, "max_tokens")
        check_positive_int(self.multiple, "multiple")
        if self.max_records is not None:
            check_positive_int(self.max_records, "max_records")
        if self.layout not in ("padded", "packed"):
            raise BatchError(f"layout={self.layout!r} is unknown; use 'padded' or 'packed'")
        bounds = list(self.boundaries)
        object.__setattr__(self, "boundaries", tuple(bounds))  # a list would be unhashable
        if any(isinstance(b, bool) or not isinstance(b, int) for b in bounds) or any(
            b <= a for a, b in zip(bounds, bounds[1:], strict=False)
        ):
            raise BatchError("bucket boundaries must be strictly increasing ints, e.g. (128, 512)")

    def to_json(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "boundaries": list(self.boundaries),
            "layout": self.layout,
            "multiple": self.multiple,
            "max_records": self.max_records,
        }


def rank_seed(seed: int, rank: int) -> int:
    """The in-shard batching seed of ``rank``: numpy's SeedSequence over ``(seed, rank)``."""
    return int(np.random.SeedSequence([int(seed), int(rank)]).generate_state(1)[0])


def lengths_hash(lengths: ArrayLike) -> str:
    """``sha256:`` of the record lengths as little-endian int64 (what batching depended on)."""
    data = np.ascontiguousarray(np.asarray(lengths, dtype="<i8")).tobytes()
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, eq=False)
class SamplerAssignment:
    """The record indices one rank reads in one epoch, and everything needed to redo it:
    the identities of the data (dataset, tokenizer, template hashes), the bucketing policy
    and, with one, the rank's batches (global record indices)."""

    seed: int
    epoch: int
    rank: int
    world_size: int
    shuffle: bool
    drop_last: bool
    dataset_size: int
    indices: NDArray[np.int64]
    repeated: NDArray[np.bool_]
    dropped: NDArray[np.int64]
    dataset_hash: str | None = None
    tokenizer_hash: str | None = None
    template_hash: str | None = None
    bucketing: BucketingPolicy | None = None
    lengths_hash: str | None = None
    batches: tuple[NDArray[np.int64], ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready description (indices as lists); the payload ``digest`` seals."""
        return {
            "format": ASSIGNMENT_FORMAT,
            "seed": self.seed,
            "epoch": self.epoch,
            "rank": self.rank,
            "world_size": self.world_size,
            "shuffle": self.shuffle,
            "drop_last": self.drop_last,
            "dataset_size": self.dataset_size,
            "dataset_hash": self.dataset_hash,
            "tokenizer_hash": self.tokenizer_hash,
            "template_hash": self.template_hash,
            "bucketing": None if self.bucketing is None else self.bucketing.to_json(),
            "lengths_hash": self.lengths_hash,
            "indices": self.indices.tolist(),
            "repeated": np.flatnonzero(self.repeated).tolist(),
            "dropped": self.dropped.tolist(),
            "batches": None if self.batches is None else [b.tolist() for b in self.batches],
        }

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON form: equal digests mean identical assignments."""
        blob = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def to_record(self) -> dict[str, Any]:
        """The audit record: :meth:`as_dict` sealed with its ``digest``; what
        ``replay_assignment`` takes."""
        return {**self.as_dict(), "digest": self.digest}


class DistributedSampler:
    """Deterministic shard of a dataset for one rank, with a recorded assignment.

    Semantics follow PyTorch's ``DistributedSampler`` (shuffle, then pad by repeating from
    the start or drop the tail, then take every ``world_size``-th index from ``rank``), but
    the permutation comes from numpy's generator seeded with ``(seed, epoch)``.

    ``dataset_hash``, ``tokenizer_hash`` and ``template_hash`` identify what the indices
    point at; they are recorded in every assignment, and ``replay_assignment`` refuses a
    record without them. With ``bucketing`` (and the record ``lengths``) each rank also
    groups its shard into token-budget batches, recorded in the assignment.

    >>> s = DistributedSampler(5, world_size=2, rank=1, shuffle=False)
    >>> list(s), s.assignment().repeated.tolist()
    ([1, 3, 0], [False, False, True])
    """

    def __init__(
        self,
        dataset_size: int,
        *,
        world_size: int,
        rank: int,
        seed: int = 0,
        shuffle: bool = True,
        drop_last: bool = False,
        dataset_hash: str | None = None,
        tokenizer_hash: str | None = None,
        template_hash: str | None = None,
        lengths: ArrayLike | None = None,
        bucketing: BucketingPolicy | None = None,
    ) -> None:
        self.dataset_size = _check_nonnegative(dataset_size, "dataset_size")
        self.world_size = check_positive_int(world_size, "world_size")
        self.rank = _check_nonnegative(rank, "rank")
        if self.rank >= self.world_size:
            raise BatchError(f"rank {rank} must be below world_size {world_size}")
        self.seed = _check_nonnegative(seed, "seed")
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        for name, value in (
            ("dataset_hash", dataset_hash),
            ("tokenizer_hash", tokenizer_hash),
            ("template_hash", template_hash),
        ):
            if value is not None and not is_sha256(value):
                raise BatchError(f"{name} {value!r} is not 'sha256:<64 lowercase hex>'")
        self.dataset_hash = dataset_hash
        self.tokenizer_hash = tokenizer_hash
        self.template_hash = template_hash
        if bucketing is not None and not isinstance(bucketing, BucketingPolicy):
            raise BatchError("bucketing must be a BucketingPolicy or None")
        self.bucketing = bucketing
        self.lengths = None if lengths is None else _lengths(lengths)
        if self.lengths is not None and self.lengths.shape[0] != self.dataset_size:
            raise BatchError(
                f"lengths has {self.lengths.shape[0]} entries for {self.dataset_size} records"
            )
        if bucketing is not None and self.lengths is None:
            raise BatchError("bucketing needs the record lengths: pass lengths=[...]")
        self._lengths_hash = None if self.lengths is None else lengths_hash(self.lengths)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch; call it before every epoch so shuffles differ."""
        self.epoch = _check_nonnegative(epoch, "epoch")

    def global_order(self, epoch: int | None = None) -> NDArray[np.int64]:
        """The epoch's order of all records, before sharding."""
        ep = self.epoch if epoch is None else _check_nonnegative(epoch, "epoch")
        n = self.dataset_size
        if self.shuffle:
            return _rng(self.seed, ep).permutation(n).astype(np.int64)
        return np.arange(n, dtype=np.int64)

    def assignment(self, epoch: int | None = None, *, rank: int | None = None) -> SamplerAssignment:
        """What ``rank`` (default: this rank) reads in ``epoch`` (default: current)."""
        ep = self.epoch if epoch is None else _check_nonnegative(epoch, "epoch")
        rk = self.rank if rank is None else _check_nonnegative(rank, "rank")
        if rk >= self.world_size:
            raise BatchError(f"rank {rk} must be below world_size {self.world_size}")
        order = self.global_order(ep)
        n, ws = self.dataset_size, self.world_size
        if self.drop_last:
            total = (n // ws) * ws
            dropped = order[total:]
            padded = order[:total]
        else:
            total = -(-n // ws) * ws
            dropped = np.zeros(0, dtype=np.int64)
            padded = np.resize(order, total) if n else order  # resize repeats cyclically
        positions = np.arange(rk, total, ws)
        indices = padded[positions]
        batches = None
        lengths_digest = None
        if self.bucketing is not None and self.lengths is not None:
            # Lengths matter to the epoch only through the batches.
            lengths_digest = self._lengths_hash
            policy = self.bucketing
            batcher = TokenBudgetBatchSampler(
                self.lengths[indices] if indices.size else np.zeros(0, dtype=np.int64),
                max_tokens=policy.max_tokens,
                layout=policy.layout,
                multiple=policy.multiple,
                bucket_boundaries=list(policy.boundaries) or None,
                max_records=policy.max_records,
                shuffle=self.shuffle,
                seed=rank_seed(self.seed, rk),
            )
            batches = tuple(indices[b] for b in batcher.batches(ep))
        return SamplerAssignment(
            seed=self.seed,
            epoch=ep,
            rank=rk,
            world_size=ws,
            shuffle=self.shuffle,
            drop_last=self.drop_last,
            dataset_size=n,
            indices=indices,
            repeated=positions >= n,
            dropped=dropped,
            dataset_hash=self.dataset_hash,
            tokenizer_hash=self.tokenizer_hash,
            template_hash=self.template_hash,
            bucketing=self.bucketing,
            lengths_hash=lengths_digest,
            batches=batches,
        )

    def __iter__(self) -> Iterator[int]:
        return iter(self.assignment().indices.tolist())

    def __len__(self) -> int:
        n, ws = self.dataset_size, self.world_size
        return n // ws if self.drop_last else -(-n // ws)


def check_coverage(assignments: list[SamplerAssignment]) -> None:
    """Raise BatchError unless the ranks' assignments cover every record exactly once.

    Repeated (padding) entries and the declared ``dropped`` tail are accounted for, so
    this reconciles distributed ownership after an epoch.
    """
    if not assignments:
        raise BatchError("pass the assignments of every rank")
    first = assignments[0]
    ranks = sorted(a.rank for a in assignments)
    if ranks != list(range(first.world_size)):
        raise BatchError(f"expected one assignment per rank 0..{first.world_size - 1}, got {ranks}")
    parts = [a.indices[~a.repeated] for a in assignments] + [first.dropped]
    seen = np.bincount(np.concatenate(parts), minlength=first.dataset_size)
    if seen.shape[0] != first.dataset_size or bool(np.any(seen != 1)):
        missing = np.flatnonzero(seen == 0)[:5].tolist()
        doubled = np.flatnonzero(seen > 1)[:5].tolist()
        raise BatchError(f"records missing {missing} or duplicated {doubled} across ranks")
