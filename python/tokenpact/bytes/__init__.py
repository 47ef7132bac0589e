"""Byte and character models: position accounting, causal entropy patching, prefix stability.

Models that read bytes or characters compress the sequence inside the network; where they
compress decides position counts, causality and generation state.

>>> from tokenpact.bytes import ByT5Config, CanineConfig, TextUnits
>>> TextUnits.of("A naïve cat.\\n").summary()
{'bytes': 14, 'code_points': 13, 'graphemes': 13}
>>> CanineConfig(stride=4).account("A naïve cat.\\n").n_global
4

See docs/BYTES.md.
"""

from __future__ import annotations

from .accounting import CONFIG_HASH_DOMAIN, PositionAccount, config_hash
from .entropy import (
    EntropyPatcher,
    EntropyRule,
    IncrementalEntropyPatcher,
    start_mask,
    starts_from_entropies,
)
from .models import (
    BLTConfig,
    ByT5Config,
    CanineConfig,
    CharformerConfig,
    MegabyteConfig,
    account_all,
    check_global_inputs,
)
from .ngram import MODEL_HASH_DOMAIN, ByteNGramModel, Smoothing, context_codes
from .patchers import (
    BpeShapedPatcher,
    ExplicitStarts,
    FixedStridePatcher,
    Patcher,
    WhitespacePatcher,
    check_starts,
)
from .reference import reference_entropies, reference_starts
from .stability import (
    PrefixViolation,
    StabilityReport,
    check_prefix_stability,
    tokenizer_segmenter,
)
from .units import TextUnits

__all__ = [
    "CONFIG_HASH_DOMAIN",
    "MODEL_HASH_DOMAIN",
    "BLTConfig",
    "BpeShapedPatcher",
    "ByT5Config",
    "ByteNGramModel",
    "CanineConfig",
    "CharformerConfig",
    "EntropyPatcher",
    "EntropyRule",
    "ExplicitStarts",
    "FixedStridePatcher",
    "IncrementalEntropyPatcher",
    "MegabyteConfig",
    "Patcher",
    "PositionAccount",
    "PrefixViolation",
    "Smoothing",
    "StabilityReport",
    "TextUnits",
    "WhitespacePatcher",
    "account_all",
    "check_global_inputs",
    "check_prefix_stability",
    "check_starts",
    "config_hash",
    "context_codes",
    "reference_entropies",
    "reference_starts",
    "start_mask",
    "starts_from_entropies",
    "tokenizer_segmenter",
]
