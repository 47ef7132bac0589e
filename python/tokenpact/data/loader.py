"""Training-time loading: packed sequences from encoded datasets, deterministic, resumable.

A :class:`TokenLoader` reads one or more encoded datasets (memory-mapped, each shard
hashed on first touch) as fixed-length training sequences. Sample ``j`` of a dataset is
tokens ``[j * seq_len, (j + 1) * seq_len]`` of its stream (documents end to end, in
``doc_id`` order): ``seq_len`` inputs and, one further, the last target. Labels never
cross a document boundary, positions restart at every document and ``cu_seqlens``
marks each document's piece, as :mod:`tokenpact.batch` defines them.

The epoch's global order is a pure function of the seed, the epoch, the datasets'
manifests, the weights and ``seq_len``: never of the world size or the worker count.
Step ``s`` of a run hands rank ``r`` of ``W`` the ``batch_size`` global positions
starting at ``cursor + s * batch_size * W + r * batch_size``; with ``k`` workers,
worker ``w`` of a rank builds the steps ``s = w (mod k)``, which ``DataLoader``'s
round robin hands back in step order. The state is ``(epoch, cursor)``: O(1) to
restore, and valid for any world size or worker count that follows.

>>> loader = TokenLoader(["web/", "code/"], weights=[0.7, 0.3], seq_len=4096,
...                      batch_size=8, seed=1234, rank=rank, world_size=world,
...                      tokenizer=tok)  # doctest: +SKIP
>>> for batch in loader:  # doctest: +SKIP
...     step(batch.input_ids, batch.labels, batch.cu_seqlens)
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..batch.records import IGNORE_INDEX
from ..contract.loader_state import (
    STATE_KIND,
    STATE_VERSION,
    canonical_hash,
    exact_counts,
)
from ..errors import ConfigError, ContractError, ReplayError
from .dataset import EncodedDataset, open_dataset

if TYPE_CHECKING:
    from ..core import Tokenizer

_MAX_SEQ_LEN = 1 << 24
_MAX_BATCH = 1 << 16
# The native row gather for a single mapped stream; False runs the numpy reference
# (the tests compare the two batch by batch).
NATIVE_ROWS = True

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class BatchProvenance:
    """What rebuilds a batch exactly: :meth:`TokenLoader.replay` takes it back."""

    fingerprint: str
    epoch: int
    seed: int
    rank: int
    world_size: int
    step: int
    positions: tuple[int, int]  # global positions [first, stop) of the epoch order
    sources: tuple[int, ...]
    samples: tuple[int, ...]
    datasets: tuple[str, ...]
    cursor_after: int  # the epoch cursor once every rank has taken this step

    def as_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "epoch": self.epoch,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "step": self.step,
            "positions": list(self.positions),
            "sources": list(self.sources),
            "samples": list(self.samples),
            "datasets": list(self.datasets),
            "cursor_after": self.cursor_after,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchProvenance:
        try:
            return cls(
                fingerprint=str(data["fingerprint"]),
                epoch=int(data["epoch"]),
                seed=int(data["seed"]),
                rank=int(data["rank"]),
                world_size=int(data["world_size"]),
                step=int(data["step"]),
                positions=(int(data["positions"][0]), int(data["positions"][1])),
                sources=tuple(int(v) for v in data["sources"]),
                samples=tuple(int(v) for v in data["samples"]),
                datasets=tuple(str(v) for v in data["datasets"]),
                cursor_after=int(data["cursor_after"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ReplayError(
                f"malformed batch provenance ({exc}); pass batch.provenance"
            ) from None


@dataclass(eq=False)
class PackedBatch:
    """``batch_size`` packed rows of ``seq_len`` tokens, with their boundaries.

    ``tokens`` holds ``seq_len + 1`` IDs per row in the datasets' dtype; ``input_ids``
    and ``targets`` are views of it. ``cu_seqlens`` (int32) covers the batch flattened
    row after row: every document piece and every row end is a boundary, ready for a
    varlen attention kernel. ``labels``, ``position_ids`` and ``document_ids`` are built
    on first access (they are per-token work a varlen step may not need).
    """

    tokens: NDArray[Any]
    cu_seqlens: NDArray[np.int32]
    first_documents: NDArray[np.int64]  # per row: the document its first token belongs to
    provenance: BatchProvenance
    # Document starts inside the rows: row ``cut_rows[i]``, offset ``cuts[i]`` in
    # (0, seq_len] (seq_len: the last target starts a new document).
    cuts: NDArray[np.int64] = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    cut_rows: NDArray[np.int64] = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))

    @property
    def input_ids(self) -> NDArray[Any]:
        return self.tokens[:, :-1]

    @property
    def targets(self) -> NDArray[Any]:
        return self.tokens[:, 1:]

    @property
    def seq_len(self) -> int:
        return int(self.tokens.shape[1] - 1)

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    @cached_property
    def labels(self) -> NDArray[np.int64]:
        """Next-token targets; ``IGNORE_INDEX`` where the next token starts another document."""
        out = self.targets.astype(np.int64)
        out[self.cut_rows, self.cuts - 1] = IGNORE_INDEX
        return out

    def _inner(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        keep = self.cuts < self.seq_len
        return self.cut_rows[keep], self.cuts[keep]

    @cached_property
    def position_ids(self) -> NDArray[np.int64]:
        """Positions within each document, restarting at 0 where a document starts."""
        # cu_seqlens already splits the flattened batch at every document and row start.
        cu = self.cu_seqlens.astype(np.int64)
        total = int(cu[-1])
        flat = np.arange(total, dtype=np.int64) - np.repeat(cu[:-1], np.diff(cu))
        return flat.reshape(len(self), self.seq_len)

    @cached_property
    def document_ids(self) -> NDArray[np.int64]:
        """Per token, the index of its document in its dataset (``doc_id`` order)."""
        rows, cuts = self._inner()
        steps = np.zeros((len(self), self.seq_len), dtype=np.int64)
        # Equal cuts are empty documents: each still advances the index.
        np.add.at(steps, (rows, cuts), 1)
        np.cumsum(steps, axis=1, out=steps)
        return steps + self.first_documents[:, None]

    def as_dict(self) -> dict[str, Any]:
        """Model inputs as numpy arrays (``labels`` etc. built now)."""
        return {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "position_ids": self.position_ids,
            "document_ids": self.document_ids,
            "cu_seqlens": self.cu_seqlens,
        }


class _Source:
    """One dataset as a stream of ``seq_len + 1`` token windows."""

    def __init__(self, ds: EncodedDataset, seq_len: int) -> None:
        self.ds = ds
        self.hash = ds.hash
        self.n_samples = max(ds.n_tokens - 1, 0) // seq_len
        self.starts = ds.offsets
        self._array: NDArray[Any] | None = None
        self._bytes: NDArray[np.uint8] | None = None
        self._looked = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        # Remapped in the receiving process.
        state["_array"], state["_bytes"], state["_looked"] = None, None, False
        return state

    def array(self) -> NDArray[Any] | None:
        """The whole stream as one mapped array (single Megatron shard), else ``None``."""
        if not self._looked:  # first touch: verifies the shard, then maps it whole
            self._array, self._looked = self.ds.contiguous(), True
            if self._array is not None and self._array.flags.c_contiguous:
                self._bytes = self._array.reshape(-1).view(np.uint8)
        return self._array

    def stream_bytes(self) -> NDArray[np.uint8] | None:
        """:meth:`array` as bytes (the native row gather reads it), else ``None``."""
        self.array()
        return self._bytes

    def fill(self, out: NDArray[Any], start: int, size: int) -> None:
        array = self.array()
        if array is None:
            self.ds.read_into(out, start)
        else:
            out[:] = array[start : start + size]


class TokenLoader:
    """Packed ``seq_len`` sequences over one or more encoded datasets (optionally blended).

    ``datasets`` are paths or :class:`~tokenpact.data.EncodedDataset` objects, all bound
    to one tokenizer: pass ``tokenizer`` (or ``tokenizer_hash``) to check that binding
    at open, and ``template_hash`` for the chat template. ``weights`` blends them with
    exact per-source counts (``samples_per_epoch`` in all, default: every source's
    samples once); without weights each sample of each dataset appears once per epoch.
    ``require_eod=True`` refuses a dataset whose documents do not end with EOD
    (``boundary_policy`` other than ``eos_separate_documents``).
    """

    def __init__(
        self,
        datasets: Sequence[PathLike | EncodedDataset],
        *,
        seq_len: int,
        batch_size: int,
        weights: Sequence[float] | None = None,
        samples_per_epoch: int | None = None,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = True,
        tokenizer: Tokenizer | None = None,
        tokenizer_hash: str | None = None,
        template_hash: str | None = None,
        require_eod: bool = False,
        verify: Literal["first-touch", "open", "background"] = "first-touch",
    ) -> None:
        if isinstance(datasets, (str, os.PathLike, EncodedDataset)):
            datasets = [datasets]
        if not datasets:
            raise ConfigError("TokenLoader needs at least one encoded dataset")
        if not 1 <= seq_len <= _MAX_SEQ_LEN or not 1 <= batch_size <= _MAX_BATCH:
            raise ConfigError(
                f"seq_len must be in [1, {_MAX_SEQ_LEN}] and batch_size in [1, {_MAX_BATCH}]"
            )
        if not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"seed must be a non-negative int, got {seed!r}")
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.set_rank(rank, world_size)
        opened = [
            d
            if isinstance(d, EncodedDataset)
            else open_dataset(
                d,
                tokenizer=tokenizer,
                tokenizer_hash=tokenizer_hash,
                template_hash=template_hash,
                verify=verify,
            )
            for d in datasets
        ]
        self._check_binding(opened, tokenizer, tokenizer_hash, template_hash, require_eod)
        self.sources = [_Source(ds, seq_len) for ds in opened]
        self._hashes = tuple(s.hash for s in self.sources)
        self.dtype = np.result_type(*(ds.dtype for ds in opened))
        sizes = [s.n_samples for s in self.sources]
        if weights is None:
            if samples_per_epoch is not None:
                raise ConfigError("samples_per_epoch needs weights (it sets the blend's size)")
            self.counts = sizes
            self.weights: list[str] | None = None
        else:
            if len(weights) != len(self.sources):
                raise ConfigError(f"{len(weights)} weights for {len(self.sources)} datasets")
            total = sum(sizes) if samples_per_epoch is None else samples_per_epoch
            if total < 0:
                raise ConfigError("samples_per_epoch must be non-negative")
            # Counts come from the recorded decimal strings, so the doctor (which has only
            # the record) derives the very same integers.
            self.weights = [repr(float(w)) for w in weights]
            self.counts = exact_counts(self.weights, total)
        for k, (count, size) in enumerate(zip(self.counts, sizes, strict=True)):
            if count and not size:
                raise ConfigError(
                    f"dataset {k} ({opened[k].root}) has fewer than seq_len + 1 = "
                    f"{seq_len + 1} tokens; give it weight 0 or a shorter seq_len"
                )
        self.samples_per_epoch = sum(self.counts)
        self.tokenizer_hash = opened[0].tokenizer_hash
        self.template_hash = opened[0].template_hash
        self.fingerprint = canonical_hash(self.fingerprint_fields())
        self.epoch = 0
        self.cursor = 0
        self._plans: dict[int, tuple[NDArray[np.int16], NDArray[np.int64]]] = {}

    @staticmethod
    def _check_binding(
        opened: list[EncodedDataset],
        tokenizer: Tokenizer | None,
        tokenizer_hash: str | None,
        template_hash: str | None,
        require_eod: bool,
    ) -> None:
        expected = tokenizer.semantic_hash if tokenizer is not None else tokenizer_hash
        for ds in opened:
            if ds.tokenizer_hash != (expected or opened[0].tokenizer_hash):
                raise ContractError(
                    f"{ds.root} was encoded with tokenizer {ds.tokenizer_hash}, not "
                    f"{expected or opened[0].tokenizer_hash}; blend only datasets encoded "
                    "with the tokenizer you train with (re-encode the others)"
                )
            wanted = template_hash if template_hash is not None else opened[0].template_hash
            if ds.template_hash != wanted:
                raise ContractError(
                    f"{ds.root} was encoded with template {ds.template_hash}, not {wanted}; "
                    "re-encode it with the template you train with"
                )
            if require_eod and ds.manifest.get("boundary_policy") != "eos_separate_documents":
                raise ContractError(
                    f"{ds.root} has boundary_policy {ds.manifest.get('boundary_policy')!r}: "
                    "its documents do not end with EOD; re-encode with --append-eod"
                )

    def set_rank(self, rank: int, world_size: int) -> None:
        """Change this loader's rank and world size (the cursor and order are kept)."""
        if not 1 <= world_size or not 0 <= rank < world_size:
            raise ConfigError(f"rank {rank} is not in [0, world_size={world_size})")
        self.rank = rank
        self.world_size = world_size

    # ------------------------------------------------------------- the epoch order
    def fingerprint_fields(self) -> dict[str, Any]:
        """Everything the global order depends on (never the world size or workers)."""
        return {
            "datasets": [s.hash for s in self.sources],
            "weights": self.weights,
            "counts": self.counts,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "seq_len": self.seq_len,
            "tokenizer_hash": self.tokenizer_hash,
            "template_hash": self.template_hash,
        }

    def _draws(self, epoch: int, k: int) -> NDArray[np.int64]:
        n, count = self.sources[k].n_samples, self.counts[k]
        parts = []
        for cycle in range(-(-count // n) if n else 0):
            if self.shuffle:
                seq = np.random.SeedSequence([self.seed, epoch, k, cycle])
                parts.append(np.random.Generator(np.random.PCG64(seq)).permutation(n))
            else:
                parts.append(np.arange(n, dtype=np.int64))
        return np.concatenate(parts)[:count] if parts else np.zeros(0, np.int64)

    def plan(self, epoch: int) -> tuple[NDArray[np.int16], NDArray[np.int64]]:
        """``(source, sample)`` of every global position of ``epoch``, in order."""
        got = self._plans.get(epoch)
        if got is not None:
            return got
        draws = [self._draws(epoch, k) for k in range(len(self.sources))]
        if len(draws) == 1:
            src = np.zeros(self.counts[0], dtype=np.int16)
            samples = draws[0]
        else:
            # Evenly interleaved: the j-th of c draws sits at (j + 1/2) / c of the epoch.
            keys = np.concatenate(
                [(2 * np.arange(c, dtype=np.float64) + 1) / (2 * c) for c in self.counts]
            )
            src_all = np.repeat(np.arange(len(draws), dtype=np.int16), self.counts)
            order = np.lexsort((src_all, keys))
            src = src_all[order]
            samples = np.concatenate(draws)[order]
        self._plans = {epoch: (src, samples)}  # one epoch held: memory stays bounded
        return src, samples

    def mixture(self) -> dict[str, Any]:
        """The realized blend: per source its samples, tokens and share of the epoch."""
        total = max(self.samples_per_epoch, 1)
        return {
            "samples_per_epoch": self.samples_per_epoch,
            "seq_len": self.seq_len,
            "sources": [
                {
                    "dataset": str(s.ds.root),
                    "dataset_hash": s.hash,
                    "weight": None if self.weights is None else float(self.weights[k]),
                    "samples": self.counts[k],
                    "tokens": self.counts[k] * self.seq_len,
                    "share": self.counts[k] / total,
                    "epochs_of_source": self.counts[k] / s.n_samples if s.n_samples else 0.0,
                }
                for k, s in enumerate(self.sources)
            ],
        }

    # ------------------------------------------------------------- batches
    def steps_left(self) -> int:
        """Steps every rank still takes in this epoch from the cursor."""
        per_step = self.batch_size * self.world_size
        left = self.samples_per_epoch - self.cursor
        return left // per_step if self.drop_last else -(-left // per_step)

    def _build(
        self, epoch: int, first: int, stop: int, step: int, cursor_after: int
    ) -> PackedBatch:
        src_plan, sample_plan = self.plan(epoch)
        return self._collate(
            epoch, (first, stop), src_plan[first:stop], sample_plan[first:stop], step, cursor_after
        )

    def _collate(
        self,
        epoch: int,
        positions: tuple[int, int],
        src: NDArray[Any],
        samples: NDArray[np.int64],
        step: int,
        cursor_after: int,
        rank: tuple[int, int] | None = None,
    ) -> PackedBatch:
        n = self.seq_len
        rows = src.shape[0]
        tokens = np.empty((rows, n + 1), dtype=self.dtype)
        stream = self.sources[0].stream_bytes() if len(self.sources) == 1 else None
        if NATIVE_ROWS and stream is not None and self.sources[0].ds.dtype == self.dtype:
            # One mapped stream: one native call copies the rows and finds their
            # documents (the numpy code below is the reference it is tested against).
            lo, cut_rows, cuts, cu32 = _native.packed_rows(
                stream,
                self.sources[0].starts,
                np.ascontiguousarray(samples, dtype=np.int64),
                n,
                tokens.itemsize,
                tokens.reshape(-1).view(np.uint8),
            )
            return PackedBatch(
                tokens=tokens,
                cu_seqlens=cu32,
                first_documents=lo,
                provenance=self._provenance(
                    epoch, positions, (0,) * rows, samples, step, cursor_after, rank
                ),
                cuts=cuts,
                cut_rows=cut_rows,
            )
        src_list = src.tolist()
        begins = samples * n
        single = len(self.sources) == 1
        groups = [(0, None)] if single else [(k, src == k) for k in sorted(set(src_list))]
        # The document holding each row's first token (lo) and the one holding its last
        # target (hi): one vectorized search per source, never one per token.
        if single:
            found = np.searchsorted(
                self.sources[0].starts, np.concatenate((begins, begins + n)), side="right"
            )
            lo, hi = found[:rows] - 1, found[rows:] - 1
        else:
            lo = np.empty(rows, dtype=np.int64)
            hi = np.empty(rows, dtype=np.int64)
            for k, sel in groups:
                starts = self.sources[k].starts
                lo[sel] = np.searchsorted(starts, begins[sel], side="right") - 1
                hi[sel] = np.searchsorted(starts, begins[sel] + n, side="right") - 1
        counts = hi - lo
        cut_rows = np.repeat(np.arange(rows, dtype=np.int64), counts)
        first = np.cumsum(counts) - counts
        doc = np.arange(cut_rows.shape[0], dtype=np.int64) - first[cut_rows] + lo[cut_rows] + 1
        if single:
            cut_at = self.sources[0].starts[doc]
        else:
            cut_at = np.empty(doc.shape[0], dtype=np.int64)
            row_src = src[cut_rows]
            for k, _ in groups:
                mask = row_src == k
                cut_at[mask] = self.sources[k].starts[doc[mask]]
        cuts = cut_at - begins[cut_rows]
        if single and (array := self.sources[0].array()) is not None:
            # One mapping: one slice and one copy per row.
            for r, b in enumerate(begins.tolist()):
                tokens[r] = array[b : b + n + 1]
        else:
            for r, (k, b) in enumerate(zip(src_list, begins.tolist(), strict=True)):
                self.sources[k].fill(tokens[r], b, n + 1)
        # Row ends are boundaries too; a cut at n is the next row's start (or the end),
        # and empty documents repeat a cut: sorting and dropping repeats folds both.
        cu = np.concatenate(([0], cuts + cut_rows * n, np.arange(1, rows + 1) * n))
        cu.sort()
        keep = np.empty(cu.shape[0], dtype=bool)
        keep[0] = True
        np.not_equal(cu[1:], cu[:-1], out=keep[1:])
        cu = cu[keep]
        return PackedBatch(
            tokens=tokens,
            cu_seqlens=cu.astype(np.int32),
            first_documents=lo,
            provenance=self._provenance(
                epoch, positions, tuple(src_list), samples, step, cursor_after, rank
            ),
            cuts=cuts,
            cut_rows=cut_rows,
        )

    def _provenance(
        self,
        epoch: int,
        positions: tuple[int, int],
        sources: tuple[int, ...],
        samples: NDArray[np.int64],
        step: int,
        cursor_after: int,
        rank: tuple[int, int] | None,
    ) -> BatchProvenance:
        return BatchProvenance(
            fingerprint=self.fingerprint,
            epoch=epoch,
            seed=self.seed,
            rank=self.rank if rank is None else rank[0],
            world_size=self.world_size if rank is None else rank[1],
            step=step,
            positions=positions,
            sources=sources,
            samples=tuple(samples.tolist()),
            datasets=self._hashes,
            cursor_after=cursor_after,
        )

    def iter_batches(
        self, *, worker: int = 0, num_workers: int = 1, start_step: int = 0
    ) -> Iterator[PackedBatch]:
        """This rank's batches for the rest of the current epoch (worker ``worker`` of
        ``num_workers``: the steps ``s = worker (mod num_workers)``).

        The cursor advances with every batch yielded here; after the last step the epoch
        ends (``epoch + 1``, cursor 0). Steps where this rank's slice is empty (only with
        ``drop_last=False``) yield nothing. ``start_step`` skips the steps before it (a
        worker resuming inside one iteration; steps count from the cursor).
        """
        if not 0 <= worker < num_workers:
            raise ConfigError(f"worker {worker} is not in [0, num_workers={num_workers})")
        epoch, base = self.epoch, self.cursor
        per_step = self.batch_size * self.world_size
        steps = self.steps_left()
        first_step = start_step + (worker - start_step) % num_workers
        for step in range(first_step, steps, num_workers):
            first = base + step * per_step + self.rank * self.batch_size
            stop = min(first + self.batch_size, self.samples_per_epoch)
            after = min(base + (step + 1) * per_step, self.samples_per_epoch)
            if first < stop:
                batch = self._build(epoch, first, stop, step, after)
                self.cursor = after
                yield batch
            else:
                self.cursor = after
        if self.epoch == epoch:
            self.epoch, self.cursor = epoch + 1, 0

    def __iter__(self) -> Iterator[PackedBatch]:
        return self.iter_batches()

    def torch_dataset(self) -> Any:
        """This loader as a ``torch.utils.data.IterableDataset`` (needs PyTorch): use it
        with ``DataLoader(ds, batch_size=None, num_workers=k)`` or torchdata's
        ``StatefulDataLoader``."""
        from .torch_dataset import make_torch_dataset

        return make_torch_dataset(self)

    def __len__(self) -> int:
        return self.steps_left()

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` from its beginning."""
        if epoch < 0:
            raise ConfigError("epoch must be non-negative")
        self.epoch, self.cursor = epoch, 0

    # ------------------------------------------------------------- state and replay
    def state_dict(self) -> dict[str, Any]:
        """The resume point: ``(epoch, cursor)`` plus what the order depends on.

        Take it after a step every rank finished (the cursor counts every rank's samples);
        it restores under any world size, batch size or worker count.
        """
        return {
            "kind": STATE_KIND,
            "version": STATE_VERSION,
            "fingerprint": self.fingerprint,
            "order": self.fingerprint_fields(),
            "epoch": self.epoch,
            "cursor": self.cursor,
            "samples_per_epoch": self.samples_per_epoch,
            "batch_size": self.batch_size,
            "world_size": self.world_size,
            "drop_last": self.drop_last,
            "tokenizer_hash": self.tokenizer_hash,
            "template_hash": self.template_hash,
            # Where the datasets were; informative (the hashes in "order" bind them), so
            # `tokenpact doctor` can check a saved state against the files.
            "dataset_paths": [str(Path(s.ds.root).resolve()) for s in self.sources],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict` (O(1): no consumed sample is replayed).

        ``state`` may also be a torchdata ``StatefulDataLoader.state_dict()`` taken over
        :meth:`torch_dataset` (any worker count): the loader then resumes after the last
        batch that data loader yielded, so a fresh one may use another worker count (or
        world size). The data loader must snapshot every step (``snapshot_every_n_steps=1``,
        its default).
        """
        state = dataloader_loader_state(state)
        problems = state_problems(state, self)
        if problems:
            raise ContractError("; ".join(problems))
        self.epoch, self.cursor = int(state["epoch"]), int(state["cursor"])

    def state_after(self, batch: Any) -> dict[str, Any]:
        """The state once every rank has taken ``batch``'s step (from any worker).

        ``batch`` is a batch, its :class:`BatchProvenance`, the provenance's JSON, or a
        ``torch_dataset()`` batch (a dict holding ``"provenance"``).
        """
        state = self.state_dict()
        p = _provenance_of(batch)
        if p.fingerprint != self.fingerprint:
            raise ContractError(
                "the batch came from another loader configuration; take the state from "
                "the loader that produced it"
            )
        if p.cursor_after >= self.samples_per_epoch:
            state["epoch"], state["cursor"] = p.epoch + 1, 0
        else:
            state["epoch"], state["cursor"] = p.epoch, p.cursor_after
        return state

    def replay(self, provenance: BatchProvenance | dict[str, Any]) -> PackedBatch:
        """Rebuild a batch from its provenance, checking it names this loader's order."""
        p = (
            provenance
            if isinstance(provenance, BatchProvenance)
            else (BatchProvenance.from_json(provenance))
        )
        if p.fingerprint != self.fingerprint or p.datasets != tuple(s.hash for s in self.sources):
            raise ReplayError(
                "the batch came from another loader configuration (datasets, weights, seed "
                "or seq_len differ); build the TokenLoader the run used"
            )
        first, stop = p.positions
        if not 0 <= first <= stop <= self.samples_per_epoch:
            raise ReplayError(f"positions {p.positions} outside the epoch")
        src, samples = self.plan(p.epoch)
        if (
            tuple(src[first:stop].tolist()) != p.sources
            or tuple(samples[first:stop].tolist()) != p.samples
        ):
            raise ReplayError("the provenance's samples are not the epoch order's; it was edited")
        return self._collate(
            p.epoch,
            p.positions,
            src[first:stop],
            samples[first:stop],
            p.step,
            p.cursor_after,
            (p.rank, p.world_size),
        )


def dataloader_loader_state(state: Any) -> Any:
    """The loader state inside a torchdata ``StatefulDataLoader`` state (else ``state``).

    Workers' snapshots in that state are taken as the data loader yields their batches,
    and ``DataLoader`` yields steps in order, so the furthest ``(epoch, cursor)`` among
    them is the state after the last yielded batch.
    """
    if not isinstance(state, dict) or "kind" in state:
        return state
    if isinstance(state.get("dataset_state"), dict):  # num_workers=0
        states = [state["dataset_state"]]
    else:
        snapshot = state.get("_snapshot")
        workers = snapshot.get("_worker_snapshots") if isinstance(snapshot, dict) else None
        if not isinstance(workers, dict):
            return state
        states = [w.get("dataset_state") for w in workers.values() if isinstance(w, dict)]
    inner = [
        s["loader"] for s in states if isinstance(s, dict) and isinstance(s.get("loader"), dict)
    ]
    if not inner:
        return state

    def progress(s: dict[str, Any]) -> tuple[int, int]:
        epoch, cursor = s.get("epoch"), s.get("cursor")
        ok = isinstance(epoch, int) and isinstance(cursor, int)
        return (epoch, cursor) if ok else (-1, -1)  # type: ignore[return-value]

    return max(inner, key=progress)


def _provenance_of(batch: Any) -> BatchProvenance:
    if isinstance(batch, BatchProvenance):
        return batch
    if isinstance(batch, dict):
        inner = batch.get("provenance", batch)
        return inner if isinstance(inner, BatchProvenance) else BatchProvenance.from_json(inner)
    provenance = getattr(batch, "provenance", None)
    if not isinstance(provenance, BatchProvenance):
        raise ConfigError("state_after takes a batch, its provenance or a torch batch dict")
    return provenance


def state_problems(state: Any, loader: TokenLoader) -> list[str]:
    """Why ``state`` cannot resume ``loader`` (empty: it can)."""
    if not isinstance(state, dict) or state.get("kind") != STATE_KIND:
        return ["not a tokenpact loader state (kind is not tokenpact.loader-state)"]
    if state.get("version") != STATE_VERSION:
        return [f"loader state version {state.get('version')!r} is not {STATE_VERSION}"]
    problems = []
    order = state.get("order")
    mine = loader.fingerprint_fields()
    if not isinstance(order, dict):
        return ["the loader state has no 'order' record; save it with state_dict()"]
    for key, value in mine.items():
        if order.get(key) != value:
            problems.append(
                f"the state's {key} is {order.get(key)!r}, the loader's is {value!r}; "
                "resume with the datasets, weights, seed and seq_len the run started with"
            )
    if state.get("fingerprint") != canonical_hash(order):
        problems.append("the state's fingerprint does not match its order record; it was edited")
    epoch, cursor = state.get("epoch"), state.get("cursor")
    if not isinstance(epoch, int) or not isinstance(cursor, int) or epoch < 0:
        problems.append("the state's epoch and cursor must be non-negative integers")
    elif not 0 <= cursor <= loader.samples_per_epoch:
        problems.append(f"cursor {cursor} is outside the epoch's {loader.samples_per_epoch}")
    return problems
