"""Causal windows, simple padding, document packing and dense causal masks.

These are the small building blocks: the target of window position ``t`` is the token
at ``t + 1`` (never a copy of the input at ``t``), padding is described by a separate
validity mask (so a real token equal to the PAD value is never mistaken for padding), and
the attention mask removes padded queries and keys as well as the future.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int, check_token_id
from .records import as_token_ids


def _ids(values: ArrayLike | Iterable[int], what: str) -> NDArray[np.int64]:
    if isinstance(values, np.ndarray) or isinstance(values, Sequence):
        return as_token_ids(values, what)
    return as_token_ids(list(values), what)  # type: ignore[arg-type]  # ranges, generators


def window_arrays(
    tokens: ArrayLike | Iterable[int], context_length: int, stride: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Inputs and targets of every full window as two ``[N, context_length]`` arrays.

    Window ``k`` starts at ``k * stride``; a window needs ``context_length + 1`` tokens
    because its targets run one token further than its inputs.
    """
    ctx = check_positive_int(context_length, "context_length")
    step = check_positive_int(stride, "stride")
    ids = _ids(tokens, "tokens")
    if ids.shape[0] <= ctx:
        empty = np.zeros((0, ctx), dtype=np.int64)
        return empty, empty.copy()
    spans = sliding_window_view(ids, ctx + 1)[::step]
    return spans[:, :-1].copy(), spans[:, 1:].copy()


def make_windows(
    tokens: ArrayLike | Iterable[int], context_length: int, stride: int
) -> list[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """``(inputs, targets)`` pairs of causal training windows; targets are inputs shifted by one.

    >>> inputs, targets = make_windows(range(7), context_length=4, stride=2)[0]
    >>> inputs.tolist(), targets.tolist()
    ([0, 1, 2, 3], [1, 2, 3, 4])
    """
    inputs, targets = window_arrays(tokens, context_length, stride)
    return list(zip(inputs, targets, strict=True))


def pad_batch(
    sequences: Iterable[ArrayLike], pad_id: int, max_length: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Right-pad sequences into a rectangle and return it with its validity mask.

    Without ``max_length`` the width is the longest sequence; with it the width is exactly
    ``max_length`` and longer sequences lose their right edge.

    >>> batch, valid = pad_batch([[4, 5, 6], [7]], pad_id=0)
    >>> batch.tolist(), valid.tolist()
    ([[4, 5, 6], [7, 0, 0]], [[True, True, True], [True, False, False]])
    """
    pad = check_token_id(pad_id, "pad_id")
    rows = [_ids(seq, f"sequence {i}") for i, seq in enumerate(sequences)]
    if not rows:
        return np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0), dtype=bool)
    lengths = np.asarray([r.shape[0] for r in rows], dtype=np.int64)
    if max_length is None:
        width = int(lengths.max())
    else:
        if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
            raise BatchError(f"max_length must be an int, got {max_length!r}")
        if max_length < 0:
            raise BatchError(f"max_length must be >= 0, got {max_length}")
        width = int(max_length)
    kept = np.minimum(lengths, width)
    valid = np.arange(width)[None, :] < kept[:, None]
    batch = np.full((len(rows), width), pad, dtype=np.int64)
    batch[valid] = np.concatenate([r[:k] for r, k in zip(rows, kept.tolist(), strict=True)])
    return batch, valid


def pack_documents(documents: Iterable[ArrayLike], eos_id: int) -> NDArray[np.int64]:
    """Concatenate documents, each followed by ``eos_id`` as an explicit boundary.

    >>> pack_documents([[1, 2], [3]], eos_id=9).tolist()
    [1, 2, 9, 3, 9]
    """
    eos = check_token_id(eos_id, "eos_id")
    docs = [_ids(doc, f"document {i}") for i, doc in enumerate(documents)]
    if not docs:
        return np.zeros(0, dtype=np.int64)
    lengths = np.asarray([d.shape[0] for d in docs], dtype=np.int64) + 1
    ends = np.cumsum(lengths) - 1
    out = np.empty(int(lengths.sum()), dtype=np.int64)
    body = np.ones(out.shape[0], dtype=bool)
    body[ends] = False
    out[body] = np.concatenate(docs)
    out[ends] = eos
    return out


def causal_attention_mask(valid_tokens: ArrayLike) -> NDArray[np.bool_]:
    """``[B, T, T]`` mask: key ``j`` visible to query ``i`` iff ``j <= i`` and both are valid.

    A causal triangle alone would let padded positions take part in attention.
    """
    valid = np.asarray(valid_tokens, dtype=bool)
    if valid.ndim != 2:
        raise BatchError(
            f"valid_tokens must have shape (batch, time), got {valid.shape}; "
            "pass the validity mask returned by pad_batch"
        )
    time = valid.shape[1]
    lower = np.tri(time, dtype=bool)
    mask: NDArray[np.bool_] = lower[None, :, :] & valid[:, :, None] & valid[:, None, :]
    return mask


def block_causal_mask(cu_seqlens: ArrayLike, *, max_elements: int = 1 << 28) -> NDArray[np.bool_]:
    """Dense ``[T, T]`` block-diagonal causal mask of a packed buffer (reference paths only).

    Query ``i`` sees key ``j`` iff both lie in the same segment of ``cu_seqlens`` and
    ``j <= i``. Variable-length kernels get the same rule from ``cu_seqlens`` directly.

    >>> block_causal_mask([0, 2, 3]).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    """
    cu = np.asarray(cu_seqlens, dtype=np.int64)
    if cu.ndim != 1 or cu.shape[0] < 1 or cu[0] != 0 or bool(np.any(np.diff(cu) < 0)):
        raise BatchError("cu_seqlens must start at 0 and never decrease")
    total = int(cu[-1])
    if total * total > max_elements:
        raise BatchError(
            f"a dense mask over {total} packed tokens needs {total * total} entries; pass "
            "cu_seqlens to a variable-length attention kernel instead, or raise max_elements"
        )
    segment = np.repeat(np.arange(cu.shape[0] - 1), np.diff(cu))
    mask: NDArray[np.bool_] = np.tri(total, dtype=bool) & (segment[:, None] == segment[None, :])
    return mask
