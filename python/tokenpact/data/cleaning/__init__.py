"""Corpus cleaning steps: extraction, repair, language ID, quality,
personal data and decontamination, each a versioned, hashable configuration whose
record (library version, configuration hash, counts, reasons) the corpus manifest keeps.

>>> result = clean(docs, steps=["langid", "quality", "pii"])  # doctest: +SKIP
>>> manifest = result.corpus_manifest(revision="v1")  # doctest: +SKIP

See docs/DATA.md ("Cleaning").
"""

from .decontam import DecontamConfig, ngram_keys
from .extract import ExtractConfig, looks_like_html
from .langid import LangIdConfig, supported_languages
from .pii import PII_TYPES, PiiConfig, iban_valid, luhn_valid
from .pipeline import DEFAULT_STEPS, STEP_TYPES, CleaningPipeline, DocResult, clean
from .quality import QualityConfig
from .repair import RepairConfig
from .result import CleaningResult
from .scripts import script_shares, writing_systems
from .step import Outcome, StepConfig

__all__ = [
    "DEFAULT_STEPS",
    "PII_TYPES",
    "STEP_TYPES",
    "CleaningPipeline",
    "CleaningResult",
    "DecontamConfig",
    "DocResult",
    "ExtractConfig",
    "LangIdConfig",
    "Outcome",
    "PiiConfig",
    "QualityConfig",
    "RepairConfig",
    "StepConfig",
    "clean",
    "iban_valid",
    "looks_like_html",
    "luhn_valid",
    "ngram_keys",
    "script_shares",
    "supported_languages",
    "writing_systems",
]
