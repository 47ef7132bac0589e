"""Tokenizer audit: metrics per slice, token premium, static vocabulary audit, the
vocabulary-size cost model, nested sweeps and the candidate selection protocol.

    from tokenpact.audit import cost, audit_vocabulary, build_report, write_report
    cost(32_000, 4096).input_bytes / 2**20   # 250.0 MiB

See docs/AUDIT.md; the command line is ``tokenpact audit``.
"""

from __future__ import annotations

from .corpus import AuditCorpus, load_corpus
from .cost import (
    DTYPE_BYTES,
    OPTIMIZER_SLOTS,
    SequenceCost,
    VocabCost,
    bits_per_byte,
    bits_per_byte_to_loss,
    cost,
    sequence_cost,
)
from .encoded import EncodedCorpus, encode_corpus
from .metrics import (
    corpus_metrics,
    distinct_strings,
    normalization_collisions,
    offset_accuracy,
    reconstruction,
)
from .premium import ParallelCorpus, load_parallel, token_premium
from .report import write_report
from .run import AuditOptions, SelectionConfig, audit_tokenizers, build_report, stable_view
from .selection import (
    CandidateReport,
    Gates,
    ModelShape,
    SealedTestSplit,
    Selection,
    candidate_set_hash,
    evaluate_candidate,
    evaluate_candidates,
    select,
)
from .splits import SplitRecord, assign_splits, validate_split_manifest
from .sweep import SweepPoint, check_nested, vocabulary_sweep
from .text_units import WORD_COUNTER, TextUnits, count_graphemes, count_words, text_units
from .token_table import TokenTable, token_table
from .vocab import CLASSES, VocabAudit, audit_vocabulary, exposure_counts, exposure_summary

__all__ = [
    "CLASSES",
    "DTYPE_BYTES",
    "OPTIMIZER_SLOTS",
    "WORD_COUNTER",
    "AuditCorpus",
    "AuditOptions",
    "CandidateReport",
    "EncodedCorpus",
    "Gates",
    "ModelShape",
    "ParallelCorpus",
    "SealedTestSplit",
    "Selection",
    "SelectionConfig",
    "SequenceCost",
    "SplitRecord",
    "SweepPoint",
    "TextUnits",
    "TokenTable",
    "VocabAudit",
    "VocabCost",
    "assign_splits",
    "audit_tokenizers",
    "audit_vocabulary",
    "bits_per_byte",
    "bits_per_byte_to_loss",
    "build_report",
    "candidate_set_hash",
    "check_nested",
    "corpus_metrics",
    "cost",
    "count_graphemes",
    "count_words",
    "distinct_strings",
    "encode_corpus",
    "evaluate_candidate",
    "evaluate_candidates",
    "exposure_counts",
    "exposure_summary",
    "load_corpus",
    "load_parallel",
    "normalization_collisions",
    "offset_accuracy",
    "reconstruction",
    "select",
    "sequence_cost",
    "stable_view",
    "text_units",
    "token_premium",
    "token_table",
    "validate_split_manifest",
    "vocabulary_sweep",
    "write_report",
]
