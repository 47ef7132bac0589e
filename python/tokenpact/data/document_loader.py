"""Whole-document batches under a token budget, with length bucketing.

A :class:`DocumentLoader` yields each non-empty document of its datasets once per epoch,
whole (or cut to ``max_len``), in batches whose padded size ``rows * longest`` stays
within ``max_tokens``. The epoch order is a pure function of the seed, the epoch, the
manifests and the budget: documents are permuted, sorted by length within windows of
``bucket_docs`` (so a batch holds similar lengths), cut into batches greedily, and the
batches permuted. One global batch position goes to each rank per step (rank ``r`` of
``W`` takes batch ``cursor + s * W + r``), so state, resume, provenance and workers
behave as in :class:`~tokenpact.data.TokenLoader`.

>>> loader = DocumentLoader(["sft/"], max_tokens=16_384, seed=1, tokenizer=tok)  # doctest: +SKIP
>>> for batch in loader:  # doctest: +SKIP
...     step(batch.input_ids, batch.labels, batch.cu_seqlens, batch.position_ids)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..batch.records import IGNORE_INDEX
from ..contract.loader_state import canonical_hash
from ..errors import ConfigError, ReplayError
from .dataset import EncodedDataset
from .loader import BatchProvenance, TokenLoader

if TYPE_CHECKING:
    from ..core import Tokenizer

PathLike = str | os.PathLike[str]


@dataclass(eq=False)
class DocumentBatch:
    """Whole documents end to end (flat), one ``cu_seqlens`` segment each.

    ``labels`` is the next token within the document and ``IGNORE_INDEX`` on each
    document's last token; ``position_ids`` restart at 0 per document.
    """

    input_ids: NDArray[Any]
    cu_seqlens: NDArray[np.int32]
    provenance: BatchProvenance

    def __len__(self) -> int:
        return int(self.cu_seqlens.shape[0] - 1)

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.cu_seqlens.astype(np.int64))

    @property
    def labels(self) -> NDArray[np.int64]:
        out = np.empty(self.input_ids.shape[0], dtype=np.int64)
        out[:-1] = self.input_ids[1:]
        out[self.cu_seqlens[1:].astype(np.int64) - 1] = IGNORE_INDEX
        return out

    @property
    def position_ids(self) -> NDArray[np.int64]:
        cu = self.cu_seqlens.astype(np.int64)
        return np.arange(int(cu[-1]), dtype=np.int64) - np.repeat(cu[:-1], np.diff(cu))

    @property
    def padded_tokens(self) -> int:
        """``rows * longest``: what a padded collation of this batch costs."""
        return len(self) * int(self.lengths.max(initial=0))


class DocumentLoader(TokenLoader):
    """Whole documents, length-bucketed, in batches of at most ``max_tokens`` padded tokens.

    ``max_len`` cuts longer documents to their first ``max_len`` tokens (recorded in the
    order); without it a document longer than ``max_tokens`` is a ``ConfigError``.
    """

    def __init__(
        self,
        datasets: Sequence[PathLike | EncodedDataset],
        *,
        max_tokens: int,
        max_len: int | None = None,
        bucket_docs: int = 4096,
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
        if max_tokens < 1 or bucket_docs < 1 or (max_len is not None and max_len < 1):
            raise ConfigError("max_tokens, bucket_docs and max_len must be positive")
        self.max_tokens, self.max_len, self.bucket_docs = max_tokens, max_len, bucket_docs
        # The parent opens and binds the datasets; one "sample" per global batch.
        super().__init__(
            datasets,
            seq_len=1,
            batch_size=1,
            seed=seed,
            shuffle=shuffle,
            rank=rank,
            world_size=world_size,
            drop_last=drop_last,
            tokenizer=tokenizer,
            tokenizer_hash=tokenizer_hash,
            template_hash=template_hash,
            require_eod=require_eod,
            verify=verify,
        )
        lengths = [s.ds.lengths for s in self.sources]
        self._doc_src = np.concatenate(
            [np.full(int((ln > 0).sum()), k, dtype=np.int16) for k, ln in enumerate(lengths)]
        )
        self._doc_idx = np.concatenate([np.flatnonzero(ln > 0) for ln in lengths])
        cut = np.concatenate([ln[ln > 0] for ln in lengths])
        self._doc_len = cut if max_len is None else np.minimum(cut, max_len)
        longest = int(self._doc_len.max(initial=0))
        if longest > max_tokens:
            raise ConfigError(
                f"a document has {longest} tokens, more than max_tokens={max_tokens}; raise "
                "max_tokens or pass max_len= to cut documents"
            )
        self._epoch_batches: dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]] = {}
        self.samples_per_epoch = int(self._batches(0)[1].shape[0] - 1)
        self.counts = [int(self.samples_per_epoch)]
        self.fingerprint = canonical_hash(self.fingerprint_fields())

    def fingerprint_fields(self) -> dict[str, Any]:
        return {
            "mode": "documents",
            "datasets": [s.hash for s in self.sources],
            "max_tokens": self.max_tokens,
            "max_len": self.max_len,
            "bucket_docs": self.bucket_docs,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "tokenizer_hash": self.tokenizer_hash,
            "template_hash": self.template_hash,
        }

    def _batches(self, epoch: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """``(order, bounds)``: documents in batch order; batch ``b`` is
        ``order[bounds[b]:bounds[b + 1]]``."""
        got = self._epoch_batches.get(epoch)
        if got is not None:
            return got
        n = self._doc_len.shape[0]
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, epoch])))
        order = rng.permutation(n) if self.shuffle else np.arange(n, dtype=np.int64)
        groups: list[NDArray[np.int64]] = []
        for w in range(0, n, self.bucket_docs):
            window = order[w : w + self.bucket_docs]
            # Longest first, stable: equal lengths keep their permuted order.
            window = window[np.argsort(-self._doc_len[window], kind="stable")]
            lens = self._doc_len[window].tolist()
            start = 0
            while start < len(lens):
                # Sorted longest first: the first row sets the padded width.
                rows = max(1, self.max_tokens // lens[start])
                groups.append(window[start : start + rows])
                start += rows
        batch_order = (
            rng.permutation(len(groups)) if self.shuffle else np.arange(len(groups))
        ).tolist()
        ordered = [groups[b] for b in batch_order]
        sizes = [g.shape[0] for g in ordered]
        bounds = np.zeros(len(ordered) + 1, dtype=np.int64)
        np.cumsum(sizes, out=bounds[1:])
        flat = np.concatenate(ordered) if ordered else np.zeros(0, np.int64)
        self._epoch_batches = {epoch: (flat, bounds)}  # one epoch held
        return flat, bounds

    def plan(self, epoch: int) -> tuple[NDArray[np.int16], NDArray[np.int64]]:
        """``(source, document)`` of every document of ``epoch``, in batch order."""
        order, _ = self._batches(epoch)
        return self._doc_src[order], self._doc_idx[order]

    def mixture(self) -> dict[str, Any]:
        per = np.bincount(self._doc_src, weights=self._doc_len, minlength=len(self.sources))
        docs = np.bincount(self._doc_src, minlength=len(self.sources))
        total = max(float(per.sum()), 1.0)
        return {
            "batches_per_epoch": self.samples_per_epoch,
            "sources": [
                {
                    "dataset": str(s.ds.root),
                    "dataset_hash": s.hash,
                    "documents": int(docs[k]),
                    "tokens": int(per[k]),
                    "share": float(per[k]) / total,
                }
                for k, s in enumerate(self.sources)
            ],
        }

    def _build(  # type: ignore[override]
        self, epoch: int, first: int, stop: int, step: int, cursor_after: int
    ) -> DocumentBatch:
        return self._document_batch(epoch, first, step, cursor_after, None)

    def _document_batch(
        self,
        epoch: int,
        position: int,
        step: int,
        cursor_after: int,
        rank: tuple[int, int] | None,
    ) -> DocumentBatch:
        order, bounds = self._batches(epoch)
        docs = order[bounds[position] : bounds[position + 1]]
        lens = self._doc_len[docs]
        cu = np.zeros(docs.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=cu[1:])
        ids = np.empty(int(cu[-1]), dtype=self.dtype)
        src, idx = self._doc_src[docs], self._doc_idx[docs]
        for j, (k, i) in enumerate(zip(src.tolist(), idx.tolist(), strict=True)):
            ds = self.sources[k].ds
            ds.read_into(ids[cu[j] : cu[j + 1]], int(ds.offsets[i]))
        prov = BatchProvenance(
            fingerprint=self.fingerprint,
            epoch=epoch,
            seed=self.seed,
            rank=self.rank if rank is None else rank[0],
            world_size=self.world_size if rank is None else rank[1],
            step=step,
            positions=(position, position + 1),
            sources=tuple(src.tolist()),
            samples=tuple(idx.tolist()),
            datasets=tuple(s.hash for s in self.sources),
            cursor_after=cursor_after,
        )
        return DocumentBatch(input_ids=ids, cu_seqlens=cu.astype(np.int32), provenance=prov)

    def replay(self, provenance: BatchProvenance | dict[str, Any]) -> DocumentBatch:  # type: ignore[override]
        p = (
            provenance
            if isinstance(provenance, BatchProvenance)
            else BatchProvenance.from_json(provenance)
        )
        if p.fingerprint != self.fingerprint:
            raise ReplayError(
                "the batch came from another loader configuration; build the "
                "DocumentLoader the run used"
            )
        first, stop = p.positions
        if not 0 <= first < self.samples_per_epoch or stop != first + 1:
            raise ReplayError(f"positions {p.positions} are not one batch of the epoch")
        batch = self._document_batch(p.epoch, first, p.step, p.cursor_after, (p.rank, p.world_size))
        if batch.provenance.samples != p.samples or batch.provenance.sources != p.sources:
            raise ReplayError("the provenance's documents are not the epoch order's; it was edited")
        return batch
