"""The contract layer: canonical JSON, framed hashes, manifests, golden vectors, reconcile.

An ID sequence means something only together with the tokenizer's semantic hash, the
template hash and the policies that produced it. This package gives each artifact an
identity, writes and checks the manifest and golden vectors beside a saved tokenizer, and
reconciles corpus, tokenizer, template, dataset and checkpoint declarations.
"""

from __future__ import annotations

from . import golden
from .artifact import (
    check_contract_files,
    inspect_contract_files,
    recover_interrupted_save,
    write_contract_files,
)
from .canonical import CanonicalError, canonical_bytes, canonical_text, is_canonical, loads
from .checkpoint_reader import checkpoint_from_safetensors, read_safetensors_header
from .declarations import (
    CheckpointDeclaration,
    CorpusDocument,
    CorpusManifest,
    DatasetDeclaration,
    EncodedDocument,
    encode_document,
    template_declaration,
)
from .hashing import (
    bundle_hash,
    corpus_hash,
    file_sha256,
    framed_hash,
    golden_hash,
    normalization_hash,
    release_hash,
    semantic_hash,
    template_hash,
)
from .manifest import build_manifest, check_manifest, validate_special_ids
from .reconcile import derive_hashes, reconcile, seal_bundle
from .replay import replay
from .report import Check, Report
from .segmentation import (
    EvaluationPolicy,
    SegmentationManifest,
    replay_segmentation,
    segmentation_manifest,
)

__all__ = [
    "CanonicalError",
    "Check",
    "CheckpointDeclaration",
    "CorpusDocument",
    "CorpusManifest",
    "DatasetDeclaration",
    "EncodedDocument",
    "EvaluationPolicy",
    "Report",
    "SegmentationManifest",
    "build_manifest",
    "bundle_hash",
    "canonical_bytes",
    "canonical_text",
    "check_contract_files",
    "check_manifest",
    "checkpoint_from_safetensors",
    "corpus_hash",
    "derive_hashes",
    "encode_document",
    "file_sha256",
    "framed_hash",
    "golden",
    "golden_hash",
    "inspect_contract_files",
    "is_canonical",
    "loads",
    "normalization_hash",
    "read_safetensors_header",
    "reconcile",
    "recover_interrupted_save",
    "release_hash",
    "replay",
    "replay_segmentation",
    "seal_bundle",
    "segmentation_manifest",
    "semantic_hash",
    "template_declaration",
    "template_hash",
    "validate_special_ids",
    "write_contract_files",
]
