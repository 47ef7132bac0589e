"""Packed (padding-free) batches: records end to end, with boundaries that nothing crosses.

Under the default *independent-example* policy, labels are shifted inside each record
before concatenation, positions restart at 0 per record, attention is block-diagonal
(``cu_seqlens``) and ownership is kept per token. A global causal stream, where later
documents see earlier ones, is a different training objective; it is available only when
declared with ``StreamPolicy``.

``cu_seqlens`` is int32, starts at 0, strictly increases and ends at ``T``: ready for
FlashAttention's varlen functions and for Hugging Face padding-free (flattening) models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError
from .flat import FlatRecords, check_positive_int, gather_records
from .labels import (
    UNSHIFTED,
    LabelConvention,
    check_convention,
    check_ignore_index,
    flat_targets,
    segment_ids,
    segment_positions,
)
from .metrics import BatchReport, packed_report
from .padded import _lookup
from .records import IGNORE_INDEX, IGNORE_OWNER, OverflowPolicy, RecordTable, SequenceRecord
from .torch_interop import to_torch
from .windows import block_causal_mask

if TYPE_CHECKING:
    from .packing import PackingPlan

_INT32_MAX = int(np.iinfo(np.int32).max)


@dataclass(frozen=True)
class StreamPolicy:
    """A declared global causal stream: which record boundaries a packed batch may cross.

    The defaults describe classic pretraining on concatenated documents: later records
    attend to earlier ones, positions keep increasing through the block, and the last
    token of a record is trained to predict the first token of the next.
    """

    attend_across: bool = True
    continue_positions: bool = True
    supervise_boundaries: bool = True

    @property
    def name(self) -> str:
        return "stream"


PackingPolicy = Literal["independent"] | StreamPolicy


def _check_policy(policy: object) -> PackingPolicy:
    if isinstance(policy, StreamPolicy):
        return policy
    if policy == "independent":
        return "independent"
    raise BatchError(
        f"policy={policy!r} is unknown; use 'independent' (boundaries preserved) or declare "
        "a global stream with StreamPolicy(...)"
    )


def _as_int32(values: np.ndarray, what: str) -> NDArray[np.int32]:
    if values.size and int(values[-1]) > _INT32_MAX:
        raise BatchError(f"{what} exceeds int32; split the batch into smaller packs")
    return values.astype(np.int32)


@dataclass(frozen=True, eq=False)
class PackedBatch:
    """Records packed into one ``[T]`` buffer with per-token labels, positions and owners.

    ``cu_seqlens`` holds record boundaries (ownership, reconstruction);
    ``attention_cu_seqlens`` holds what the attention kernel must respect: the same array
    under the independent policy, ``[0, T]`` for a stream that attends across records.
    """

    input_ids: NDArray[np.int64]
    labels: NDArray[np.int64]
    loss_mask: NDArray[np.bool_]
    position_ids: NDArray[np.int64]
    seq_idx: NDArray[np.int32]
    special_tokens_mask: NDArray[np.bool_]
    token_owner_codes: NDArray[np.int16]
    label_owner_codes: NDArray[np.int16]
    cu_seqlens: NDArray[np.int32]
    lengths: NDArray[np.int64]
    max_seqlen: int
    attention_cu_seqlens: NDArray[np.int32]
    attention_max_seqlen: int
    bin_offsets: NDArray[np.int64] | None
    capacity: int | None
    sample_ids: tuple[str, ...]
    owner_names: tuple[str, ...]
    bundle_hashes: tuple[str | None, ...]
    policy: PackingPolicy
    label_convention: LabelConvention
    ignore_index: int
    report: BatchReport

    @property
    def total_tokens(self) -> int:
        """``T``, the number of real tokens in the buffer."""
        return int(self.input_ids.shape[0])

    @property
    def policy_name(self) -> str:
        return self.policy if isinstance(self.policy, str) else self.policy.name

    def sample_ownership(self) -> NDArray[np.object_]:
        """``[T]`` sample ID of each token."""
        return _lookup(self.sample_ids, IGNORE_OWNER, self.seq_idx)

    def token_ownership(self) -> NDArray[np.object_]:
        """``[T]`` grammar owner of each token."""
        return _lookup(self.owner_names, IGNORE_OWNER, self.token_owner_codes)

    def label_ownership(self) -> NDArray[np.object_]:
        """``[T]`` owner of each label's target token, ``"__ignore__"`` where ignored."""
        return _lookup(self.owner_names, IGNORE_OWNER, self.label_owner_codes)

    def dense_causal_mask(self, *, max_elements: int = 1 << 28) -> NDArray[np.bool_]:
        """``[T, T]`` block-diagonal causal mask for reference (non-varlen) attention."""
        return block_causal_mask(self.attention_cu_seqlens, max_elements=max_elements)

    def records(self, field: str = "input_ids") -> list[np.ndarray]:
        """Split a per-token field back into one array per source record."""
        values = self.as_dict()[field]
        cu = self.cu_seqlens.tolist()
        return [values[cu[i] : cu[i + 1]] for i in range(len(cu) - 1)]

    def flash_attn_varlen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``flash_attn_varlen_func`` (add ``causal=True`` yourself)."""
        return {
            "cu_seqlens_q": self.attention_cu_seqlens,
            "cu_seqlens_k": self.attention_cu_seqlens,
            "max_seqlen_q": self.attention_max_seqlen,
            "max_seqlen_k": self.attention_max_seqlen,
        }

    def hf_flattening_kwargs(self, *, return_tensors: Literal["np", "pt"] = "np") -> dict[str, Any]:
        """Model inputs in the shape of Hugging Face ``DataCollatorWithFlattening``.

        Hugging Face causal-LM models shift labels internally, so this needs a batch
        collated with ``label_convention="unshifted"``; the first label of every record is
        then ignored and the model's shift never crosses a boundary.
        """
        if self.label_convention != UNSHIFTED:
            raise BatchError(
                "Hugging Face models shift labels themselves; collate with "
                "label_convention='unshifted' so the shift happens exactly once"
            )
        if return_tensors not in ("np", "pt"):
            raise BatchError("return_tensors must be 'np' or 'pt'")
        out: dict[str, Any] = {
            "input_ids": self.input_ids[None, :],
            "labels": self.labels[None, :],
            "position_ids": self.position_ids[None, :],
            "seq_idx": self.seq_idx[None, :],
            "cu_seq_lens_q": self.attention_cu_seqlens,
            "cu_seq_lens_k": self.attention_cu_seqlens,
            "max_length_q": self.attention_max_seqlen,
            "max_length_k": self.attention_max_seqlen,
        }
        return to_torch(out) if return_tensors == "pt" else out

    def model_inputs(self) -> dict[str, Any]:
        """Ids, positions and labels as ``[1, T]`` plus the varlen boundary arguments."""
        return {
            "input_ids": self.input_ids[None, :],
            "position_ids": self.position_ids[None, :],
            "labels": self.labels[None, :],
            **self.flash_attn_varlen_kwargs(),
        }

    def as_dict(self) -> dict[str, Any]:
        """Every array of the batch by name, plus ``max_seqlen``."""
        out: dict[str, Any] = {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "loss_mask": self.loss_mask,
            "position_ids": self.position_ids,
            "seq_idx": self.seq_idx,
            "special_tokens_mask": self.special_tokens_mask,
            "token_owner_codes": self.token_owner_codes,
            "label_owner_codes": self.label_owner_codes,
            "cu_seqlens": self.cu_seqlens,
            "lengths": self.lengths,
            "attention_cu_seqlens": self.attention_cu_seqlens,
            "max_seqlen": self.max_seqlen,
        }
        if self.bin_offsets is not None:
            out["bin_offsets"] = self.bin_offsets
        return out

    def to_torch(self, *, device: Any = None) -> dict[str, Any]:
        """:meth:`as_dict` as torch tensors (needs PyTorch)."""
        return to_torch(self.as_dict(), device=device)


def _bin_token_offsets(
    flat: FlatRecords, bins: ArrayLike, capacity: int | None
) -> tuple[NDArray[np.int64], int]:
    offsets = np.asarray(bins, dtype=np.int64).reshape(-1)
    n_records = flat.lengths.shape[0]
    if (
        offsets.shape[0] < 2
        or offsets[0] != 0
        or offsets[-1] != n_records
        or bool(np.any(np.diff(offsets) < 1))
    ):
        raise BatchError(
            "bins must be record offsets [0, ..., number of records] with at least one "
            "record per bin, e.g. PackingPlan.bin_offsets"
        )
    tokens = flat.cu_seqlens[offsets]
    if capacity is not None:
        cap = check_positive_int(capacity, "capacity")
        sizes = np.diff(tokens)
        if int(sizes.max()) > cap:
            worst = int(np.argmax(sizes))
            raise BatchError(
                f"bin {worst} holds {int(sizes[worst])} tokens, more than capacity={cap}; "
                "build the bins with a packer for this capacity"
            )
    return tokens, int(offsets.shape[0] - 1)


def collate_packed(
    records: Sequence[SequenceRecord] | RecordTable,
    *,
    indices: ArrayLike | None = None,
    policy: PackingPolicy = "independent",
    pad_id: int | None = None,
    max_length: int | None = None,
    overflow: OverflowPolicy = "reject_upstream_sequence",
    label_convention: LabelConvention = "pre_shifted",
    ignore_index: int = IGNORE_INDEX,
    bins: ArrayLike | None = None,
    capacity: int | None = None,
) -> PackedBatch:
    """Pack records end to end in the declared order, boundaries and labels intact.

    ``pad_id``, when given, is checked to be absent from content. ``bins`` (record
    offsets, e.g. from a ``PackingPlan``) and ``capacity`` describe how the records sit in
    context-length bins; they only affect the report and ``bin_offsets``.

    >>> b = collate_packed([SequenceRecord("b", [256, 258, 66, 260]),
    ...                     SequenceRecord("c", [256, 67, 260])])
    >>> b.cu_seqlens.tolist(), b.position_ids.tolist()
    ([0, 4, 7], [0, 1, 2, 3, 0, 1, 2])
    """
    mode = _check_policy(policy)
    convention = check_convention(label_convention)
    ignore = check_ignore_index(ignore_index)
    flat = gather_records(
        records, indices=indices, pad_id=pad_id, max_length=max_length, overflow=overflow
    )
    stream = mode if isinstance(mode, StreamPolicy) else None
    total = flat.total
    if total > _INT32_MAX:
        raise BatchError(f"{total} tokens exceed int32 cu_seqlens; split the batch")
    labels, ok, label_owners = flat_targets(
        flat.input_ids,
        flat.target_supervision,
        flat.owner_codes,
        flat.cu_seqlens,
        convention=convention,
        ignore_index=ignore,
        cross_boundaries=stream is not None and stream.supervise_boundaries,
    )
    if stream is not None and stream.continue_positions:
        positions = np.arange(total, dtype=np.int64)
    else:
        positions = segment_positions(flat.cu_seqlens, total)
    cu32 = _as_int32(flat.cu_seqlens, "cu_seqlens")
    if stream is not None and stream.attend_across:
        attention_cu = np.asarray([0, total], dtype=np.int32)
    else:
        attention_cu = cu32
    bin_tokens = None
    n_bins = 1
    if bins is not None:
        bin_tokens, n_bins = _bin_token_offsets(flat, bins, capacity)
    elif capacity is not None:
        raise BatchError("capacity describes bins; pass bins= (record offsets) with it")
    max_seqlen = int(flat.lengths.max())
    return PackedBatch(
        input_ids=flat.input_ids,
        labels=labels,
        loss_mask=ok,
        position_ids=positions,
        seq_idx=segment_ids(flat.cu_seqlens, total),
        special_tokens_mask=flat.special_tokens_mask,
        token_owner_codes=flat.owner_codes,
        label_owner_codes=label_owners,
        cu_seqlens=cu32,
        lengths=flat.lengths,
        max_seqlen=max_seqlen,
        attention_cu_seqlens=attention_cu,
        attention_max_seqlen=int(np.diff(attention_cu).max()),
        bin_offsets=bin_tokens,
        capacity=capacity,
        sample_ids=flat.sample_ids,
        owner_names=flat.owner_names,
        bundle_hashes=flat.bundle_hashes,
        policy=mode,
        label_convention=convention,
        ignore_index=ignore,
        report=packed_report(
            flat.lengths,
            bins=n_bins,
            capacity=capacity,
            supervised_targets=int(np.count_nonzero(ok)),
            truncated_records=flat.truncated,
        ),
    )


def collate_bins(
    records: Sequence[SequenceRecord] | RecordTable,
    plan: PackingPlan,
    *,
    start: int = 0,
    stop: int | None = None,
    **options: Any,
) -> PackedBatch:
    """Collate bins ``start:stop`` of a ``PackingPlan`` into one packed batch.

    Options are those of :func:`collate_packed` (except ``indices``, ``bins``, ``capacity``).
    """
    for key in ("indices", "bins", "capacity"):
        if key in options:
            raise BatchError(f"collate_bins takes {key} from the plan; do not pass {key}=")
    n_bins = plan.n_bins
    stop = n_bins if stop is None else stop
    if not 0 <= start < stop <= n_bins:
        raise BatchError(f"bin range {start}:{stop} is empty or outside 0:{n_bins}")
    first, last = int(plan.bin_offsets[start]), int(plan.bin_offsets[stop])
    return collate_packed(
        records,
        indices=plan.order[first:last],
        bins=plan.bin_offsets[start : stop + 1] - first,
        capacity=plan.capacity,
        **options,
    )
