"""One tokenizer's encoding of a whole corpus, kept as flat numpy arrays."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .token_table import TokenTable, token_table

if TYPE_CHECKING:
    from ..core import Tokenizer


@dataclass(frozen=True)
class EncodedCorpus:
    """``ids[offsets[i]:offsets[i + 1]]`` are the IDs of record ``i``."""

    name: str
    ids: np.ndarray  # uint32
    offsets: np.ndarray  # int64, len(records) + 1
    encode_seconds: float
    threads: int | None
    table: TokenTable

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets).astype(np.int64)

    def per_record(self, flags: np.ndarray) -> np.ndarray:
        """Count set ``flags`` (one per token) per record, without widening the mask."""
        hits = np.flatnonzero(flags)
        record = np.searchsorted(self.offsets, hits, side="right") - 1
        return np.bincount(record, minlength=self.offsets.size - 1).astype(np.int64)

    def per_record_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-token integer array per record (prefix sums: exact and linear)."""
        csum = np.zeros(values.size + 1, dtype=np.int64)
        np.cumsum(values, out=csum[1:])
        return csum[self.offsets[1:]] - csum[self.offsets[:-1]]

    def record_ids(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]


def encode_corpus(
    tok: Tokenizer,
    texts: Sequence[str],
    *,
    name: str,
    threads: int | None = None,
    table: TokenTable | None = None,
) -> EncodedCorpus:
    """Encode every text once (parallel, GIL released) and time it.

    ``threads`` pins the encoder's thread count so that throughput figures say what
    they were measured with (``None``: the engine's default, all cores).
    """
    start = time.perf_counter()
    ids, offsets = tok.encode_batch_flat(list(texts), threads=threads)
    seconds = time.perf_counter() - start
    return EncodedCorpus(
        name=name,
        ids=np.asarray(ids),
        offsets=np.asarray(offsets, dtype=np.int64),
        encode_seconds=seconds,
        threads=threads if threads is not None else os.cpu_count(),
        table=table if table is not None else token_table(tok),
    )
