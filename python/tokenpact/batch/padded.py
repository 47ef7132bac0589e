"""Rectangular ``[B, S]`` batches: PAD, masks, positions, labels and ownership aligned.

Policy:

* width: the longest record (``pad_to="longest"``) or ``max_length`` (``"max_length"``),
  rounded up to ``multiple``;
* PAD slots hold ``pad_id`` with ``attention_mask`` 0, ``position_ids`` 0, label
  ``ignore_index``, ``loss_mask`` False, ``special_tokens_mask`` True (PAD is a control
  token, never content), sample and token owner ``"__pad__"``, label owner
  ``"__ignore__"``;
* labels are shifted inside each record before it is placed in its row, so a row's
  last real token never predicts PAD;
* right padding for training; left padding puts every row's last real token in the last
  column for batched generation, with positions that still start at 0 on the first
  real token, and ``last_index`` gives the column to read logits from in both cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int, gather_records
from .labels import LabelConvention, check_convention, check_ignore_index, flat_targets
from .metrics import BatchReport, aligned_width, padded_report
from .records import (
    IGNORE_INDEX,
    IGNORE_OWNER,
    PAD_OWNER,
    OverflowPolicy,
    RecordTable,
    SequenceRecord,
)
from .torch_interop import to_torch
from .windows import causal_attention_mask

PaddingSide = Literal["right", "left"]
PadTo = Literal["longest", "max_length"]


def _lookup(names: Sequence[str | None], fill: str, codes: np.ndarray) -> NDArray[np.object_]:
    table = np.asarray([*names, fill], dtype=object)  # code -1 reads the fill entry
    owners: NDArray[np.object_] = table[codes]
    return owners


@dataclass(frozen=True, eq=False)
class PaddedBatch:
    """A ``[B, S]`` batch whose values, masks, labels and owners are aligned slot by slot.

    Owners are stored as integer codes (``sample_index`` into ``sample_ids``, owner codes
    into ``owner_names``; -1 marks PAD or an ignored label) and read as strings with
    :meth:`sample_ownership`, :meth:`token_ownership` and :meth:`label_ownership`.
    """

    input_ids: NDArray[np.int64]
    attention_mask: NDArray[np.int64]
    position_ids: NDArray[np.int64]
    labels: NDArray[np.int64]
    loss_mask: NDArray[np.bool_]
    special_tokens_mask: NDArray[np.bool_]
    sample_index: NDArray[np.int32]
    token_owner_codes: NDArray[np.int16]
    label_owner_codes: NDArray[np.int16]
    lengths: NDArray[np.int64]
    last_index: NDArray[np.int64]
    sample_ids: tuple[str, ...]
    owner_names: tuple[str, ...]
    bundle_hashes: tuple[str | None, ...]
    side: PaddingSide
    pad_id: int
    ignore_index: int
    label_convention: LabelConvention
    report: BatchReport

    @property
    def shape(self) -> tuple[int, int]:
        """``(B, S)``."""
        return (int(self.input_ids.shape[0]), int(self.input_ids.shape[1]))

    def sample_ownership(self) -> NDArray[np.object_]:
        """``[B, S]`` sample IDs, ``"__pad__"`` on PAD slots."""
        return _lookup(self.sample_ids, PAD_OWNER, self.sample_index)

    def token_ownership(self) -> NDArray[np.object_]:
        """``[B, S]`` grammar owner of each token, ``"__pad__"`` on PAD slots."""
        return _lookup(self.owner_names, PAD_OWNER, self.token_owner_codes)

    def label_ownership(self) -> NDArray[np.object_]:
        """``[B, S]`` owner of each label's target token, ``"__ignore__"`` where ignored."""
        return _lookup(self.owner_names, IGNORE_OWNER, self.label_owner_codes)

    def causal_mask(self) -> NDArray[np.bool_]:
        """``[B, S, S]`` dense mask: causal, and both query and key are real tokens."""
        return causal_attention_mask(self.attention_mask.astype(bool))

    def model_inputs(self) -> dict[str, NDArray[np.int64]]:
        """The usual model keyword arguments: ids, attention mask, positions, labels."""
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "position_ids": self.position_ids,
            "labels": self.labels,
        }

    def as_dict(self) -> dict[str, Any]:
        """Every array of the batch by name."""
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "position_ids": self.position_ids,
            "labels": self.labels,
            "loss_mask": self.loss_mask,
            "special_tokens_mask": self.special_tokens_mask,
            "sample_index": self.sample_index,
            "token_owner_codes": self.token_owner_codes,
            "label_owner_codes": self.label_owner_codes,
            "lengths": self.lengths,
            "last_index": self.last_index,
        }

    def to_torch(self, *, device: Any = None) -> dict[str, Any]:
        """:meth:`as_dict` as torch tensors (needs PyTorch)."""
        return to_torch(self.as_dict(), device=device)

    def rows(self, field: str = "input_ids") -> list[np.ndarray]:
        """The real (non-PAD) part of ``field`` for each record, in batch order."""
        values = np.asarray(self.as_dict()[field])
        valid = self.attention_mask.astype(bool)
        cu = np.concatenate(([0], np.cumsum(self.lengths)))
        flat = values[valid]
        return [flat[cu[i] : cu[i + 1]] for i in range(len(self.lengths))]


def collate_padded(
    records: Sequence[SequenceRecord] | RecordTable,
    *,
    pad_id: int,
    multiple: int = 1,
    side: PaddingSide = "right",
    max_length: int | None = None,
    pad_to: PadTo = "longest",
    overflow: OverflowPolicy = "reject_upstream_sequence",
    label_convention: LabelConvention = "pre_shifted",
    ignore_index: int = IGNORE_INDEX,
    indices: ArrayLike | None = None,
) -> PaddedBatch:
    """Collate records into a ``[B, S]`` batch with aligned labels and ownership.

    ``max_length`` bounds record length (``overflow`` says whether to reject or cut
    overlength records); ``pad_to="max_length"`` also fixes the width to it.

    >>> a = SequenceRecord("a", [256, 258, 117, 259, 65, 260],
    ...                    target_supervision=[0, 0, 0, 0, 1, 1])
    >>> b = collate_padded([a], pad_id=265, multiple=4)
    >>> b.input_ids.tolist(), b.labels.tolist()[0][3:6]
    ([[256, 258, 117, 259, 65, 260, 265, 265]], [65, 260, -100])
    """
    if side not in ("right", "left"):
        raise BatchError(
            f"side={side!r} is unknown; use 'right' (training) or 'left' (batched generation)"
        )
    if pad_to not in ("longest", "max_length"):
        raise BatchError(f"pad_to={pad_to!r} is unknown; use 'longest' or 'max_length'")
    if pad_to == "max_length" and max_length is None:
        raise BatchError("pad_to='max_length' needs max_length=<width>")
    m = check_positive_int(multiple, "multiple")
    convention = check_convention(label_convention)
    ignore = check_ignore_index(ignore_index)
    if pad_id is None:
        raise BatchError("collate_padded needs pad_id; use the tokenizer's registered pad token")
    flat = gather_records(
        records, indices=indices, pad_id=pad_id, max_length=max_length, overflow=overflow
    )
    labels, ok, label_owners = flat_targets(
        flat.input_ids,
        flat.target_supervision,
        flat.owner_codes,
        flat.cu_seqlens,
        convention=convention,
        ignore_index=ignore,
    )
    lengths = flat.lengths
    n_rows = int(lengths.shape[0])
    longest = int(lengths.max())
    width = aligned_width(longest if pad_to == "longest" else int(max_length or 0), m)
    cols = np.arange(width, dtype=np.int64)
    if side == "right":
        lead = np.zeros(n_rows, dtype=np.int64)
        last_index = lengths - 1
    else:
        lead = width - lengths
        last_index = np.full(n_rows, width - 1, dtype=np.int64)
    valid = cols[None, :] >= lead[:, None]
    if side == "right":
        valid &= cols[None, :] < lengths[:, None]

    def place(values: np.ndarray, fill: Any, dtype: Any) -> np.ndarray:
        out = np.full((n_rows, width), fill, dtype=dtype)
        # Boolean placement fills row-major, which is the end-to-end record order.
        out[valid] = values
        return out

    report = padded_report(
        lengths,
        multiple=m,
        width=width,
        supervised_targets=int(np.count_nonzero(ok)),
        truncated_records=flat.truncated,
    )
    return PaddedBatch(
        input_ids=place(flat.input_ids, int(pad_id), np.int64),
        attention_mask=valid.astype(np.int64),
        position_ids=np.where(valid, cols[None, :] - lead[:, None], 0),
        labels=place(labels, ignore, np.int64),
        loss_mask=place(ok, False, bool),
        special_tokens_mask=place(flat.special_tokens_mask, True, bool),
        sample_index=np.where(valid, np.arange(n_rows, dtype=np.int32)[:, None], -1).astype(
            np.int32
        ),
        token_owner_codes=place(flat.owner_codes, -1, np.int16),
        label_owner_codes=place(label_owners, -1, np.int16),
        lengths=lengths.copy(),
        last_index=last_index,
        sample_ids=flat.sample_ids,
        owner_names=flat.owner_names,
        bundle_hashes=flat.bundle_hashes,
        side=side,
        pad_id=int(pad_id),
        ignore_index=ignore,
        label_convention=convention,
        report=report,
    )
