"""Pre-tokenizer components (``tokenizer.json`` ``pre_tokenizer`` nodes).

``behavior`` is one of ``Removed``, ``Isolated``, ``MergedWithPrevious``,
``MergedWithNext``, ``Contiguous`` (Hugging Face's spelling).

Example::

    from tokenpact.components import pre_tokenizers as p
    p.Sequence([p.Split(p.Regex(r"\\p{N}{1,3}")), p.ByteLevel(add_prefix_space=False)])
"""

from __future__ import annotations

import dataclasses

from ._base import (
    ByteLevelFields,
    Component,
    MetaspaceFields,
    Regex,
    children_field,
    pattern_field,
)

__all__ = [
    "BertPreTokenizer",
    "ByteLevel",
    "CharDelimiterSplit",
    "Digits",
    "Metaspace",
    "PreTokenizer",
    "Punctuation",
    "Regex",
    "Sequence",
    "Split",
    "UnicodeScripts",
    "Whitespace",
    "WhitespaceSplit",
]


@dataclasses.dataclass(frozen=True)
class PreTokenizer(Component):
    KIND = "pre_tokenizer"


@dataclasses.dataclass(frozen=True)
class Split(PreTokenizer):
    TYPE = "Split"
    pattern: str | Regex = pattern_field()
    behavior: str = "Isolated"
    invert: bool = False


@dataclasses.dataclass(frozen=True)
class ByteLevel(PreTokenizer, ByteLevelFields):
    """Bytes as GPT-2's printable characters; ``use_regex`` adds GPT-2's split."""

    TYPE = "ByteLevel"


@dataclasses.dataclass(frozen=True)
class Metaspace(PreTokenizer, MetaspaceFields):
    """Spaces become ``replacement``; ``prepend_scheme``: ``always``, ``first``, ``never``."""

    TYPE = "Metaspace"


@dataclasses.dataclass(frozen=True)
class Whitespace(PreTokenizer):
    TYPE = "Whitespace"


@dataclasses.dataclass(frozen=True)
class WhitespaceSplit(PreTokenizer):
    TYPE = "WhitespaceSplit"


@dataclasses.dataclass(frozen=True)
class BertPreTokenizer(PreTokenizer):
    TYPE = "BertPreTokenizer"


@dataclasses.dataclass(frozen=True)
class Punctuation(PreTokenizer):
    TYPE = "Punctuation"
    behavior: str = "Isolated"


@dataclasses.dataclass(frozen=True)
class Digits(PreTokenizer):
    TYPE = "Digits"
    individual_digits: bool = False


@dataclasses.dataclass(frozen=True)
class CharDelimiterSplit(PreTokenizer):
    TYPE = "CharDelimiterSplit"
    delimiter: str = " "


@dataclasses.dataclass(frozen=True)
class UnicodeScripts(PreTokenizer):
    TYPE = "UnicodeScripts"


@dataclasses.dataclass(frozen=True)
class Sequence(PreTokenizer):
    TYPE = "Sequence"
    pretokenizers: list[PreTokenizer] = children_field("pre_tokenizer")
