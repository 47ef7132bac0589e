"""Encoder-decoder batches: sources ``[B, S]`` and targets ``[B, T]`` padded and stacked,
with the target shift done exactly once.

Each pair is ``(source_ids, target_ids)``, both usually ``[BOS, ..., EOS]``. The
collator pads sources and targets separately (right padding, ``pad_id``), then splits the
padded targets into the decoder's inputs ``tgt[:, :-1]`` and its labels ``tgt[:, 1:]``:
decoder position ``t`` reads target tokens ``0..t`` and predicts token ``t + 1``. A label
whose target token is PAD is ``ignore_index``. A model that shifts internally must be
given the unshifted ``targets`` instead; shifting twice skips a target, not shifting
compares each token with itself.

>>> b = collate_seq2seq([([1, 7, 8, 2], [1, 5, 2]), ([1, 9, 2], [1, 6, 6, 2])], pad_id=0)
>>> b.source_ids.tolist(), b.decoder_input_ids.tolist(), b.labels.tolist()
([[1, 7, 8, 2], [1, 9, 2, 0]], [[1, 5, 2], [1, 6, 6]], [[5, 2, -100], [6, 6, 2]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import check_positive_int, check_token_id
from .labels import check_ignore_index
from .metrics import aligned_width
from .records import IGNORE_INDEX, as_token_ids
from .torch_interop import to_torch
from .windows import causal_attention_mask, pad_batch


@dataclass(frozen=True, eq=False)
class Seq2SeqBatch:
    """Padded sources ``[B, S]`` and targets ``[B, T]`` with the shifted decoder views
    ``[B, T - 1]``; every mask is aligned with the array it describes."""

    source_ids: NDArray[np.int64]
    source_mask: NDArray[np.int64]
    targets: NDArray[np.int64]
    target_mask: NDArray[np.int64]
    decoder_input_ids: NDArray[np.int64]
    decoder_attention_mask: NDArray[np.int64]
    labels: NDArray[np.int64]
    loss_mask: NDArray[np.bool_]
    source_lengths: NDArray[np.int64]
    target_lengths: NDArray[np.int64]
    pad_id: int
    ignore_index: int

    @property
    def loss_tokens(self) -> int:
        """How many labels count in the loss: ``sum(target_lengths - 1)``."""
        return int(np.count_nonzero(self.loss_mask))

    def decoder_causal_mask(self) -> NDArray[np.bool_]:
        """``[B, T - 1, T - 1]``: causal over the decoder inputs, PAD keys masked."""
        return causal_attention_mask(self.decoder_attention_mask.astype(bool))

    def cross_attention_mask(self) -> NDArray[np.bool_]:
        """``[B, T - 1, S]``: each decoder position sees every real source token."""
        return (
            self.decoder_attention_mask.astype(bool)[:, :, None]
            & self.source_mask.astype(bool)[:, None, :]
        )

    def model_inputs(self) -> dict[str, NDArray[np.int64]]:
        """The usual encoder-decoder keyword arguments (labels already shifted)."""
        return {
            "input_ids": self.source_ids,
            "attention_mask": self.source_mask,
            "decoder_input_ids": self.decoder_input_ids,
            "decoder_attention_mask": self.decoder_attention_mask,
            "labels": self.labels,
        }

    def as_dict(self) -> dict[str, Any]:
        """Every array of the batch by name."""
        return {
            "source_ids": self.source_ids,
            "source_mask": self.source_mask,
            "targets": self.targets,
            "target_mask": self.target_mask,
            "decoder_input_ids": self.decoder_input_ids,
            "decoder_attention_mask": self.decoder_attention_mask,
            "labels": self.labels,
            "loss_mask": self.loss_mask,
            "source_lengths": self.source_lengths,
            "target_lengths": self.target_lengths,
        }

    def to_torch(self, *, device: Any = None) -> dict[str, Any]:
        """:meth:`as_dict` as torch tensors (needs PyTorch)."""
        return to_torch(self.as_dict(), device=device)


def _ids(value: ArrayLike, where: str, pad_id: int) -> NDArray[np.int64]:
    ids = as_token_ids(value, where)
    if np.any(ids == pad_id):
        raise BatchError(f"{where} contains pad_id {pad_id} as content; PAD must be a dedicated ID")
    return ids


def collate_seq2seq(
    pairs: Sequence[tuple[ArrayLike, ArrayLike]],
    *,
    pad_id: int,
    multiple: int = 1,
    ignore_index: int = IGNORE_INDEX,
) -> Seq2SeqBatch:
    """Pad and stack ``(source, target)`` pairs into a :class:`Seq2SeqBatch`.

    Widths are the longest source and the longest target, each rounded up to
    ``multiple``. Every target needs at least two tokens (one decoder input, one label).
    """
    if not pairs:
        raise BatchError("collate_seq2seq needs at least one (source, target) pair")
    pad_id = check_token_id(pad_id, "pad_id")
    m = check_positive_int(multiple, "multiple")
    ignore = check_ignore_index(ignore_index)
    sources, targets = [], []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise BatchError(f"pairs[{i}] must be (source_ids, target_ids)")
        sources.append(_ids(pair[0], f"pairs[{i}] source", pad_id))
        target = _ids(pair[1], f"pairs[{i}] target", pad_id)
        if len(target) < 2:
            raise BatchError(
                f"pairs[{i}] target has {len(target)} token(s); a target needs at least two "
                "(e.g. [BOS, EOS]) to give the decoder one input and one label"
            )
        targets.append(target)
    src_len = np.asarray([len(s) for s in sources], dtype=np.int64)
    tgt_len = np.asarray([len(t) for t in targets], dtype=np.int64)
    s_width = aligned_width(max(int(src_len.max()), 1), m)
    # The decoder views have T - 1 columns; round those to the multiple.
    t_width = aligned_width(int(tgt_len.max()) - 1, m) + 1
    src, src_valid = pad_batch(sources, pad_id, max_length=s_width)
    tgt, tgt_valid = pad_batch(targets, pad_id, max_length=t_width)
    src_mask = src_valid.astype(np.int64)
    tgt_mask = tgt_valid.astype(np.int64)
    loss_mask = tgt_mask[:, 1:].astype(bool)
    return Seq2SeqBatch(
        source_ids=src,
        source_mask=src_mask,
        targets=tgt,
        target_mask=tgt_mask,
        decoder_input_ids=tgt[:, :-1].copy(),
        # A decoder position is real when it has a real label: a shorter row's EOS lands
        # in tgt[:, :-1] as an input but predicts PAD, so it is masked like PAD.
        decoder_attention_mask=loss_mask.astype(np.int64),
        labels=np.where(loss_mask, tgt[:, 1:], ignore),
        loss_mask=loss_mask,
        source_lengths=src_len,
        target_lengths=tgt_len,
        pad_id=pad_id,
        ignore_index=ignore,
    )
