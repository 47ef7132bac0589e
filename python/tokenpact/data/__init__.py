"""Corpus preparation and encoded datasets bound to the tokenizer (seed 000, 0x00A).

Readers with stable ``doc_id``s, exact and near (MinHash/LSH) deduplication, splits by
group hash, leakage checks, mixture accounting, and encoded shards (Parquet and
Megatron ``.bin``/``.idx``) whose manifest binds them to the tokenizer's semantic hash,
and cleaning steps (extraction, repair, language ID, quality, personal data,
decontamination) whose versions and decisions the corpus manifest records.
Every step runs locally or on Ray Data (``engine="ray"``) with identical results.
See docs/DATA.md.
"""

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
from .documents import Document, content_id, sort_by_id
from .encode import SHARD_FORMATS, encode_dataset
from .exact import (
    Canonicalization,
    ExactDedupResult,
    canonicalize_for_dedup,
    exact_dedup,
    exact_dedup_key,
)
from .leakage import LeakageReport, check_leakage
from .minhash import MinHashParams, jaccard, minhash_signatures, reference_signature, shingles
from .mixture import MixtureReport, account_mixture, expected_token_shares
from .near import NearCluster, NearDedupResult, brute_force_clusters, near_dedup, optimal_bands
from .readers import FORMATS, read_documents, sniff_format
from .splits import SplitSpec, role_by_doc, split_documents
from .train import train_bpe

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
    "open_dataset",
    "LeakageReport",
    "MixtureReport",
    "SplitSpec",
    "account_mixture",
    "build_corpus_manifest",
    "check_leakage",
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
