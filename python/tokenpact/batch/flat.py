"""Batch membership checks and the end-to-end token layout shared by both collators.

Both the padded and the packed layouts start from the selected records laid end to end
with their boundaries (``cu_seqlens``). The collation checks happen here, once:
no empty batch, unique sample IDs, no PAD ID inside content, and the overflow policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .records import (
    OVERFLOW_POLICIES,
    OverflowPolicy,
    RecordTable,
    SequenceRecord,
    as_table,
    check_indices,
)

# Below this mean record length a single vectorized gather beats one slice per record.
_SLICE_GATHER_MIN_MEAN = 32


@dataclass(frozen=True, eq=False)
class FlatRecords:
    """Selected records laid end to end, with their boundaries and metadata."""

    input_ids: NDArray[np.int64]
    special_tokens_mask: NDArray[np.bool_]
    target_supervision: NDArray[np.bool_]
    owner_codes: NDArray[np.int16]
    cu_seqlens: NDArray[np.int64]
    lengths: NDArray[np.int64]
    sample_ids: tuple[str, ...]
    owner_names: tuple[str, ...]
    bundle_hashes: tuple[str | None, ...]
    truncated: int

    @property
    def total(self) -> int:
        return int(self.input_ids.shape[0])


def check_positive_int(value: object, what: str) -> int:
    """Validate a positive integer option."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise BatchError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def check_token_id(value: object, what: str) -> int:
    """Validate a non-negative token ID option (pad_id, eos_id)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise BatchError(
            f"{what} must be a non-negative token ID, got {value!r}; use the tokenizer's "
            f"registered token (e.g. tok.pad_id)"
        )
    return int(value)


def _gather(
    buffer: np.ndarray,
    starts: NDArray[np.int64],
    lengths: NDArray[np.int64],
    cu: NDArray[np.int64],
    contiguous: bool,
    index: NDArray[np.int64] | None,
) -> np.ndarray:
    if contiguous:
        first = int(starts[0])
        # A copy, so that editing a batch in place never writes into the caller's table.
        return buffer[first : first + int(cu[-1])].copy()
    if index is not None:
        return buffer[index]
    # One memcpy per record: far faster than a per-token fancy index for long records.
    return np.concatenate(
        [buffer[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    )


def gather_records(
    records: Sequence[SequenceRecord] | RecordTable,
    *,
    indices: ArrayLike | None = None,
    pad_id: int | None = None,
    max_length: int | None = None,
    overflow: OverflowPolicy = "reject_upstream_sequence",
) -> FlatRecords:
    """Validate a batch's membership and lay its records end to end.

    ``indices`` selects records of a ``RecordTable`` in order (sampler or packer order).
    """
    table = as_table(records)
    if overflow not in OVERFLOW_POLICIES:
        raise BatchError(
            f"overflow={overflow!r} is unknown; use 'reject_upstream_sequence' (truncate "
            "structurally before collation) or 'truncate_right'"
        )
    if indices is None:
        starts, lengths, sample_ids = table.starts, table.lengths, table.sample_ids
        hashes = table.bundle_hashes
    else:
        idx = check_indices(indices, len(table))
        starts, lengths = table.starts[idx], table.lengths[idx]
        sample_ids = table.sample_ids[idx]
        hashes = None if table.bundle_hashes is None else table.bundle_hashes[idx]
    if lengths.shape[0] == 0:
        raise BatchError("cannot collate an empty batch; pass at least one record")
    truncated = 0
    if max_length is not None:
        limit = check_positive_int(max_length, "max_length")
        over = lengths > limit
        if bool(over.any()):
            first = int(np.flatnonzero(over)[0])
            if overflow == "reject_upstream_sequence":
                raise BatchError(
                    f"record {str(sample_ids[first])!r} has {int(lengths[first])} tokens, "
                    f"more than max_length={limit}; truncate it structurally upstream (the "
                    "sequence grammar keeps role headers and terminators), raise max_length, "
                    "or pass overflow='truncate_right' to cut its right edge here"
                )
            truncated = int(over.sum())
            lengths = np.minimum(lengths, limit)
    cu = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=cu[1:])
    total = int(cu[-1])
    contiguous = bool(np.all(starts[1:] == starts[:-1] + lengths[:-1]))
    index = None
    if not contiguous and total < _SLICE_GATHER_MIN_MEAN * lengths.shape[0]:
        # Source position of every output token: one increment per token, a jump per record.
        jumps = np.ones(total, dtype=np.int64)
        jumps[0] = starts[0]
        jumps[cu[1:-1]] = starts[1:] - (starts[:-1] + lengths[:-1]) + 1
        index = np.cumsum(jumps, out=jumps)
    ids = _gather(table.input_ids, starts, lengths, cu, contiguous, index)
    if pad_id is not None:
        pad = check_token_id(pad_id, "pad_id")
        hits = np.flatnonzero(ids == pad)
        if hits.size:
            rec = int(np.searchsorted(cu, hits[0], side="right")) - 1
            raise BatchError(
                f"record {str(sample_ids[rec])!r} contains the PAD ID {pad} at position "
                f"{int(hits[0] - cu[rec])}; pick a pad_id outside the content vocabulary "
                "(the tokenizer's registered pad token) so padding is never mistaken for text"
            )
    return FlatRecords(
        input_ids=ids,
        special_tokens_mask=_gather(
            table.special_tokens_mask, starts, lengths, cu, contiguous, index
        ),
        target_supervision=_gather(
            table.target_supervision, starts, lengths, cu, contiguous, index
        ),
        owner_codes=_gather(table.owner_codes, starts, lengths, cu, contiguous, index),
        cu_seqlens=cu,
        lengths=lengths,
        sample_ids=tuple(sample_ids.tolist()),
        owner_names=table.owner_names,
        bundle_hashes=(
            tuple([None] * lengths.shape[0]) if hashes is None else tuple(hashes.tolist())
        ),
        truncated=truncated,
    )
