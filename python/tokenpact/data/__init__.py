"""Corpus preparation and encoded datasets bound to the tokenizer.

Readers with stable ``doc_id``s, exact and near (MinHash/LSH) deduplication, splits by
group hash, leakage checks, mixture accounting, and encoded shards (Parquet and
Megatron ``.bin``/``.idx``) whose manifest binds them to the tokenizer's semantic hash,
and cleaning steps (extraction, repair, language ID, quality, personal data,
decontamination) whose versions and decisions the corpus manifest records.
Every step runs locally or on Ray Data (``engine="ray"``) with identical results.
See docs/DATA.md.

The package is lazy (PEP 562): each public name imports its module on first use, so
a Ray worker that only encodes does not import the cleaning steps, readers or trainers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> module (relative to this package) that defines it.
_EXPORTS: dict[str, str] = {
    "CleaningPipeline": "cleaning",
    "CleaningResult": "cleaning",
    "DecontamConfig": "cleaning",
    "ExtractConfig": "cleaning",
    "LangIdConfig": "cleaning",
    "PiiConfig": "cleaning",
    "QualityConfig": "cleaning",
    "RepairConfig": "cleaning",
    "clean": "cleaning",
    "SHARD_FORMATS": "encode",
    "EncodedDataset": "dataset",
    "encode_dataset": "encode",
    "encode_conversations": "chat_shards",
    "ChunkSource": "chunk_source",
    "LocalChunkSource": "chunk_source",
    "open_dataset": "dataset",
    "TokenLoader": "loader",
    "DocumentLoader": "document_loader",
    "DocumentBatch": "document_loader",
    "PackedBatch": "loader",
    "BatchProvenance": "loader",
    "LeakageReport": "leakage",
    "MixtureReport": "mixture",
    "SplitSpec": "splits",
    "account_mixture": "mixture",
    "build_corpus_manifest": "corpus_manifest",
    "check_leakage": "leakage",
    "drop_leaked": "leakage",
    "expected_token_shares": "mixture",
    "role_by_doc": "splits",
    "split_documents": "splits",
    "train_bpe": "train",
    "FORMATS": "readers",
    "Canonicalization": "exact",
    "DedupOutcome": "dedup",
    "DedupReport": "dedup",
    "Document": "documents",
    "ExactDedupResult": "exact",
    "KeepPolicy": "keep",
    "reencode_dataset": "reencode",
    "SourceSample": "sampling",
    "SourceSampling": "sampling",
    "sample_sources": "sampling",
    "MinHashParams": "minhash",
    "NearCluster": "near",
    "NearDedupResult": "near",
    "brute_force_clusters": "near",
    "canonicalize_for_dedup": "exact",
    "content_id": "documents",
    "deduplicate": "dedup",
    "exact_dedup": "exact",
    "exact_dedup_key": "exact",
    "jaccard": "minhash",
    "minhash_signatures": "minhash",
    "near_dedup": "near",
    "optimal_bands": "near",
    "read_documents": "readers",
    "reference_signature": "minhash",
    "shingles": "minhash",
    "sniff_format": "readers",
    "sort_by_id": "documents",
}

# The public names (checked against _EXPORTS by tests/data/test_package_lazy.py).
__all__ = [
    "CleaningPipeline",
    "CleaningResult",
    "DecontamConfig",
    "ExtractConfig",
    "LangIdConfig",
    "PiiConfig",
    "QualityConfig",
    "RepairConfig",
    "clean",
    "SHARD_FORMATS",
    "EncodedDataset",
    "encode_dataset",
    "encode_conversations",
    "ChunkSource",
    "LocalChunkSource",
    "open_dataset",
    "TokenLoader",
    "DocumentLoader",
    "DocumentBatch",
    "PackedBatch",
    "BatchProvenance",
    "LeakageReport",
    "MixtureReport",
    "SplitSpec",
    "account_mixture",
    "build_corpus_manifest",
    "check_leakage",
    "drop_leaked",
    "expected_token_shares",
    "role_by_doc",
    "split_documents",
    "train_bpe",
    "FORMATS",
    "Canonicalization",
    "DedupOutcome",
    "DedupReport",
    "Document",
    "ExactDedupResult",
    "KeepPolicy",
    "reencode_dataset",
    "SourceSample",
    "SourceSampling",
    "sample_sources",
    "MinHashParams",
    "NearCluster",
    "NearDedupResult",
    "brute_force_clusters",
    "canonicalize_for_dedup",
    "content_id",
    "deduplicate",
    "exact_dedup",
    "exact_dedup_key",
    "jaccard",
    "minhash_signatures",
    "near_dedup",
    "optimal_bands",
    "read_documents",
    "reference_signature",
    "shingles",
    "sniff_format",
    "sort_by_id",
]


def __getattr__(name: str) -> Any:
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tokenpact.data' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .chat_shards import encode_conversations
    from .chunk_source import ChunkSource, LocalChunkSource
    from .cleaning import (
        CleaningPipeline,
        CleaningResult,
        DecontamConfig,
        ExtractConfig,
        LangIdConfig,
        PiiConfig,
        QualityConfig,
        RepairConfig,
        clean,
    )
    from .corpus_manifest import build_corpus_manifest
    from .dataset import EncodedDataset, open_dataset
    from .dedup import DedupOutcome, DedupReport, deduplicate
    from .document_loader import DocumentBatch, DocumentLoader
    from .documents import Document, content_id, sort_by_id
    from .encode import SHARD_FORMATS, encode_dataset
    from .exact import (
        Canonicalization,
        ExactDedupResult,
        canonicalize_for_dedup,
        exact_dedup,
        exact_dedup_key,
    )
    from .keep import KeepPolicy
    from .leakage import LeakageReport, check_leakage, drop_leaked
    from .loader import BatchProvenance, PackedBatch, TokenLoader
    from .minhash import MinHashParams, jaccard, minhash_signatures, reference_signature, shingles
    from .mixture import MixtureReport, account_mixture, expected_token_shares
    from .near import NearCluster, NearDedupResult, brute_force_clusters, near_dedup, optimal_bands
    from .readers import FORMATS, read_documents, sniff_format
    from .reencode import reencode_dataset
    from .sampling import SourceSample, SourceSampling, sample_sources
    from .splits import SplitSpec, role_by_doc, split_documents
    from .train import train_bpe
