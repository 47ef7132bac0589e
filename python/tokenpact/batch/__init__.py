"""Padded and packed causal-LM batches whose labels, boundaries and owners are exact.

Numpy in, numpy out; ``to_torch()`` converts when PyTorch is installed. See docs/BATCH.md.

>>> from tokenpact.batch import SequenceRecord, collate_packed
>>> batch = collate_packed([SequenceRecord("c", [256, 67, 260])])
>>> batch.labels.tolist()
[67, 260, -100]
"""

from .causal import CausalBatch, CausalExample, batch_packed_examples, pack_causal_examples
from .encodings import SEQUENCE_SENTINEL, collate_encodings
from .labels import (
    LABEL_CONVENTIONS,
    PRE_SHIFTED,
    UNSHIFTED,
    LabelConvention,
    Targets,
    shifted_targets,
)
from .metrics import BatchReport, packed_report, padded_report
from .packed import PackedBatch, PackingPolicy, StreamPolicy, collate_bins, collate_packed
from .packing import PackingPlan, best_fit_decreasing, first_fit_decreasing, greedy_in_order
from .padded import PaddedBatch, collate_padded
from .records import (
    IGNORE_INDEX,
    IGNORE_OWNER,
    OVERFLOW_POLICIES,
    PAD_OWNER,
    OverflowPolicy,
    RecordTable,
    SequenceRecord,
)
from .sampler_replay import replay_assignment
from .samplers import (
    BucketingPolicy,
    DistributedSampler,
    SamplerAssignment,
    TokenBudgetBatchSampler,
    check_coverage,
    length_buckets,
)
from .seq2seq import Seq2SeqBatch, collate_seq2seq
from .torch_interop import to_torch
from .windows import (
    block_causal_mask,
    causal_attention_mask,
    make_windows,
    pack_documents,
    pad_batch,
    window_arrays,
)

__all__ = [
    "IGNORE_INDEX",
    "IGNORE_OWNER",
    "LABEL_CONVENTIONS",
    "OVERFLOW_POLICIES",
    "PAD_OWNER",
    "PRE_SHIFTED",
    "UNSHIFTED",
    "BatchReport",
    "BucketingPolicy",
    "CausalBatch",
    "CausalExample",
    "DistributedSampler",
    "LabelConvention",
    "OverflowPolicy",
    "PackedBatch",
    "PackingPlan",
    "PackingPolicy",
    "PaddedBatch",
    "RecordTable",
    "SamplerAssignment",
    "SequenceRecord",
    "StreamPolicy",
    "Targets",
    "TokenBudgetBatchSampler",
    "batch_packed_examples",
    "best_fit_decreasing",
    "block_causal_mask",
    "causal_attention_mask",
    "check_coverage",
    "SEQUENCE_SENTINEL",
    "Seq2SeqBatch",
    "collate_encodings",
    "collate_seq2seq",
    "collate_bins",
    "collate_packed",
    "collate_padded",
    "first_fit_decreasing",
    "greedy_in_order",
    "length_buckets",
    "make_windows",
    "pack_causal_examples",
    "pack_documents",
    "pad_batch",
    "replay_assignment",
    "packed_report",
    "padded_report",
    "shifted_targets",
    "to_torch",
    "window_arrays",
]
