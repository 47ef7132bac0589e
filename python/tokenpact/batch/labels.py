"""Next-token labels: target supervision shifted onto prediction positions, exactly once.

For causal training the hidden state at source position ``t`` predicts the token at
``t + 1``. Supervision ``q`` is defined on the *target* axis, so the label at ``t`` exists
when ``t + 1`` is inside the same record and ``q[t + 1] == 1``. Copying a source-axis
mask onto shifted labels is the classic off-by-one that keeps tensor shapes and silently
drops the first response target.

Two conventions, chosen explicitly so the shift happens exactly once:

* ``"pre_shifted"`` (default): ``labels[t]`` is the target of the logits at ``t``; the loss
  is ``cross_entropy(logits, labels)`` with no further shift.
* ``"unshifted"``: ``labels[t]`` is token ``t`` itself (or the ignore index); the model
  shifts internally (Hugging Face ``*ForCausalLM`` does ``logits[:-1]`` vs
  ``labels[1:]``). The first token of every record is ignored so that internal shift
  never crosses a record boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import BatchError
from .records import IGNORE_INDEX, IGNORE_OWNER, SequenceRecord

LabelConvention = Literal["pre_shifted", "unshifted"]
PRE_SHIFTED: LabelConvention = "pre_shifted"
UNSHIFTED: LabelConvention = "unshifted"
LABEL_CONVENTIONS: tuple[str, ...] = (PRE_SHIFTED, UNSHIFTED)


def check_convention(convention: str) -> LabelConvention:
    """Validate a label convention name."""
    if convention not in LABEL_CONVENTIONS:
        raise BatchError(
            f"label_convention={convention!r} is unknown; use 'pre_shifted' when the loss "
            "reads labels as they are, or 'unshifted' when the model shifts labels itself"
        )
    return convention  # type: ignore[return-value]


def check_ignore_index(ignore_index: int) -> int:
    """Validate an ignore index: a negative int, so it can never equal a token ID."""
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise BatchError(f"ignore_index must be an int, got {ignore_index!r}")
    if ignore_index >= 0:
        raise BatchError(
            f"ignore_index={ignore_index} could be a real token ID; use a negative value "
            f"such as {IGNORE_INDEX}"
        )
    return int(ignore_index)


@dataclass(frozen=True, eq=False)
class Targets:
    """Labels, loss mask and label owners of one record, in one declared convention."""

    labels: NDArray[np.int64]
    loss_mask: NDArray[np.bool_]
    label_owners: NDArray[np.str_]
    convention: LabelConvention


def flat_targets(
    input_ids: NDArray[np.int64],
    target_supervision: NDArray[np.bool_],
    owner_codes: NDArray[np.int16],
    cu_seqlens: NDArray[np.int64],
    *,
    convention: LabelConvention = PRE_SHIFTED,
    ignore_index: int = IGNORE_INDEX,
    cross_boundaries: bool = False,
) -> tuple[NDArray[np.int64], NDArray[np.bool_], NDArray[np.int16]]:
    """Labels, loss mask and label-owner codes (-1 = ignored) for records laid end to end.

    ``cu_seqlens`` marks the record boundaries. The shift is applied per record: the label
    at the last token of a record is ignored (pre-shifted), or the label at the first token
    is (unshifted), unless ``cross_boundaries`` declares a global stream.
    """
    n = input_ids.shape[0]
    labels = np.empty(n, dtype=np.int64)
    ok = np.empty(n, dtype=bool)
    owners = np.empty(n, dtype=np.int16)
    if n == 0:
        return labels, ok, owners
    if convention == PRE_SHIFTED:
        labels[:-1] = input_ids[1:]
        ok[:-1] = target_supervision[1:]
        owners[:-1] = owner_codes[1:]
        ok[-1] = False
        if not cross_boundaries:
            ok[cu_seqlens[1:] - 1] = False  # a record's last token predicts nothing in it
    else:
        labels[:] = input_ids
        ok[:] = target_supervision
        owners[:] = owner_codes
        ok[0] = False
        if not cross_boundaries:
            ok[cu_seqlens[:-1]] = False  # no prediction of a record's first token inside it
    ignored = ~ok
    np.copyto(labels, ignore_index, where=ignored)
    np.copyto(owners, -1, where=ignored)
    return labels, ok, owners


def shifted_targets(
    record: SequenceRecord,
    *,
    label_convention: LabelConvention = PRE_SHIFTED,
    ignore_index: int = IGNORE_INDEX,
) -> Targets:
    """Derive one record's labels from its target supervision, shifted exactly once.

    >>> r = SequenceRecord("b", [256, 258, 66, 260], target_supervision=[0, 0, 1, 1])
    >>> shifted_targets(r).labels.tolist()
    [-100, 66, 260, -100]
    >>> shifted_targets(r, label_convention="unshifted").labels.tolist()
    [-100, -100, 66, 260]
    """
    if not isinstance(record, SequenceRecord):
        raise BatchError("shifted_targets takes one SequenceRecord")
    convention = check_convention(label_convention)
    ignore = check_ignore_index(ignore_index)
    names, codes = np.unique(record.token_owners, return_inverse=True)
    cu = np.asarray([0, len(record)], dtype=np.int64)
    labels, ok, owner_codes = flat_targets(
        record.input_ids,
        record.target_supervision,
        codes.astype(np.int16),
        cu,
        convention=convention,
        ignore_index=ignore,
    )
    table = np.append(names, IGNORE_OWNER)  # code -1 reads the last entry
    return Targets(labels, ok, table[owner_codes], convention)


def segment_positions(cu_seqlens: NDArray[np.int64], total: int) -> NDArray[np.int64]:
    """Position IDs that restart at 0 at every boundary in ``cu_seqlens``."""
    steps = np.ones(total, dtype=np.int64)
    if total:
        steps[0] = 0
        inner = cu_seqlens[1:-1]
        # At each record start, step back by the previous record's length minus one.
        steps[inner] = 1 - np.diff(cu_seqlens)[:-1]
    return np.cumsum(steps, out=steps)


def segment_ids(cu_seqlens: NDArray[np.int64], total: int) -> NDArray[np.int32]:
    """Index of the record that owns each position (``seq_idx``)."""
    marks = np.zeros(total, dtype=np.int32)
    marks[cu_seqlens[1:-1]] = 1
    return np.cumsum(marks, dtype=np.int32, out=marks)
