"""The core layer: a tokenizer as a typed spec, its engine, and where it came from.

``TokenizerSpec`` (:mod:`.spec`) describes the behaviour, its ``to_config()`` is the
canonical config behind the semantic hash; ``Provenance`` (:mod:`.provenance`) records
the origin (format, exact source bytes, training record); ``build_engine`` (:mod:`.engine`)
turns a spec into the native engine, whose optional methods are declared
``Capability`` values. Formats read files into ``(spec, provenance)``; trainers return
them; :class:`Tokenizer` (:mod:`.tokenizer`) runs them. This package imports
``contract`` (the semantic hash), ``components``, ``errors`` and the leaf modules, nothing
above it: reading and writing files is :mod:`tokenpact.files` (``tp.load``, ``tp.save``,
``tp.export``), whose deprecated ``Tokenizer`` aliases reach it through the package root.
"""

from __future__ import annotations

from .engine import Capability, Engine, build_engine, capabilities
from .models import (
    BYTE_LEVEL_SEMANTICS,
    HfModel,
    MergeRecords,
    Model,
    ModelKind,
    RankedMerges,
    SentencePiece,
    TiktokenRanks,
    vocab_from_merges,
)
from .provenance import BUILT_IN_MEMORY, Provenance, TrainedSpellings
from .spec import HfStages, TokenizerSpec
from .special_policy import SpecialSpec
from .tokenizer import Tokenizer

__all__ = [
    "BYTE_LEVEL_SEMANTICS",
    "BUILT_IN_MEMORY",
    "Capability",
    "Engine",
    "HfModel",
    "HfStages",
    "MergeRecords",
    "Model",
    "ModelKind",
    "Provenance",
    "TrainedSpellings",
    "RankedMerges",
    "SentencePiece",
    "SpecialSpec",
    "TiktokenRanks",
    "Tokenizer",
    "TokenizerSpec",
    "build_engine",
    "capabilities",
    "vocab_from_merges",
]
