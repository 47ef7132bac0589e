"""Fixed-length causal examples cut from an EOS-separated document stream.

``pack_causal_examples`` appends EOS to every document, concatenates them, and cuts the
stream into windows of ``context_length`` inputs whose targets are the next tokens. The
target that follows an EOS is the first token of an unrelated document, so its loss is
masked: boundaries are found from the document lengths, never by comparing IDs, so a
document that happens to contain the EOS or PAD value is not misread. Trailing slots of
the last window are padding (``valid_mask`` False). Windows are independent: with
``stride < context_length`` an overlapped target is supervised in each window holding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int, check_token_id
from .labels import segment_ids
from .records import IGNORE_INDEX, as_token_ids
from .torch_interop import to_torch


@dataclass(frozen=True, eq=False)
class CausalExample:
    """One window: inputs, next-token targets, and which positions count."""

    input_ids: NDArray[np.int64]
    target_ids: NDArray[np.int64]
    valid_mask: NDArray[np.bool_]
    loss_mask: NDArray[np.bool_]
    document_index: NDArray[np.int64]
    start: int

    @property
    def labels(self) -> NDArray[np.int64]:
        """Targets with ``-100`` wherever the loss is masked."""
        return np.where(self.loss_mask, self.target_ids, IGNORE_INDEX)


@dataclass(frozen=True, eq=False)
class CausalBatch:
    """Examples stacked into ``[b, context_length]`` arrays."""

    input_ids: NDArray[np.int64]
    target_ids: NDArray[np.int64]
    labels: NDArray[np.int64]
    valid_mask: NDArray[np.bool_]
    loss_mask: NDArray[np.bool_]
    document_index: NDArray[np.int64]
    starts: NDArray[np.int64]

    def as_dict(self) -> dict[str, Any]:
        """Every array by name."""
        return {
            "input_ids": self.input_ids,
            "target_ids": self.target_ids,
            "labels": self.labels,
            "valid_mask": self.valid_mask,
            "loss_mask": self.loss_mask,
            "document_index": self.document_index,
            "starts": self.starts,
        }

    def to_torch(self, *, device: Any = None) -> dict[str, Any]:
        """:meth:`as_dict` as torch tensors (needs PyTorch)."""
        return to_torch(self.as_dict(), device=device)


def pack_causal_examples(
    sequences: Iterable[ArrayLike],
    *,
    eos_id: int,
    pad_id: int,
    context_length: int,
    stride: int | None = None,
) -> list[CausalExample]:
    """Cut EOS-separated documents into causal windows with boundary-masked targets.

    ``stride`` defaults to ``context_length`` (no overlap).

    >>> ex = pack_causal_examples([[5, 6], [7]], eos_id=2, pad_id=0, context_length=4)
    >>> ex[0].input_ids.tolist(), ex[0].target_ids.tolist(), ex[0].loss_mask.tolist()
    ([5, 6, 2, 7], [6, 2, 7, 2], [True, True, False, True])
    """
    eos = check_token_id(eos_id, "eos_id")
    pad = check_token_id(pad_id, "pad_id")
    ctx = check_positive_int(context_length, "context_length")
    step = ctx if stride is None else check_positive_int(stride, "stride")
    docs = [as_token_ids(doc, f"sequence {i}") for i, doc in enumerate(sequences)]
    if not docs:
        return []
    sizes = np.asarray([d.shape[0] + 1 for d in docs], dtype=np.int64)
    cu = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=cu[1:])
    total = int(cu[-1])
    n_inputs = total - 1  # the final EOS has no next token
    if n_inputs < 1:
        return []
    stream = np.empty(total, dtype=np.int64)
    body = np.ones(total, dtype=bool)
    body[cu[1:] - 1] = False
    stream[body] = np.concatenate(docs)
    stream[~body] = eos
    document = segment_ids(cu, total).astype(np.int64)
    # Inputs, targets, masks and owners, with ctx slots of padding so every window's
    # gather stays in bounds.
    inputs = np.full(n_inputs + ctx, pad, dtype=np.int64)
    inputs[:n_inputs] = stream[:-1]
    targets = np.full(n_inputs + ctx, pad, dtype=np.int64)
    targets[:n_inputs] = stream[1:]
    valid = np.zeros(n_inputs + ctx, dtype=bool)
    valid[:n_inputs] = True
    loss = valid.copy()
    loss[cu[1:-1] - 1] = False  # an EOS input would predict the next document's first token
    owner = np.full(n_inputs + ctx, -1, dtype=np.int64)
    owner[:n_inputs] = document[:-1]
    starts = np.arange(0, n_inputs, step, dtype=np.int64)
    grid = starts[:, None] + np.arange(ctx)[None, :]
    win_in, win_tg, win_valid, win_loss, win_owner = (
        inputs[grid],
        targets[grid],
        valid[grid],
        loss[grid],
        owner[grid],
    )
    return [
        CausalExample(win_in[k], win_tg[k], win_valid[k], win_loss[k], win_owner[k], int(s))
        for k, s in enumerate(starts.tolist())
    ]


def batch_packed_examples(
    examples: Sequence[CausalExample], batch_size: int, *, drop_last: bool = False
) -> list[CausalBatch]:
    """Stack examples, in order, into batches of ``batch_size`` (the last may be smaller).

    >>> ex = pack_causal_examples([[5, 6], [7]], eos_id=2, pad_id=0, context_length=2)
    >>> [b.input_ids.shape for b in batch_packed_examples(ex, 1)]
    [(1, 2), (1, 2)]
    """
    size = check_positive_int(batch_size, "batch_size")
    items = list(examples)
    for i, example in enumerate(items):
        if not isinstance(example, CausalExample):
            raise BatchError(
                f"item {i} is a {type(example).__name__}; pass the output of pack_causal_examples"
            )
    if items and len({e.input_ids.shape[0] for e in items}) != 1:
        raise BatchError("examples have different context lengths; batch them separately")
    batches: list[CausalBatch] = []
    for first in range(0, len(items), size):
        chunk = items[first : first + size]
        if drop_last and len(chunk) < size:
            break
        loss = np.stack([e.loss_mask for e in chunk])
        targets = np.stack([e.target_ids for e in chunk])
        batches.append(
            CausalBatch(
                input_ids=np.stack([e.input_ids for e in chunk]),
                target_ids=targets,
                labels=np.where(loss, targets, IGNORE_INDEX),
                valid_mask=np.stack([e.valid_mask for e in chunk]),
                loss_mask=loss,
                document_index=np.stack([e.document_index for e in chunk]),
                starts=np.asarray([e.start for e in chunk], dtype=np.int64),
            )
        )
    return batches
