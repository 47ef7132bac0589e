"""Normalizer components (``tokenizer.json`` ``normalizer`` nodes).

Example::

    from tokenpact.components import normalizers as n
    n.Sequence([n.NFKC(), n.Replace(n.Regex(" {2,}"), " ")]).to_config()
"""

from __future__ import annotations

import dataclasses

from ._base import Component, Regex, ReplaceFields, children_field

__all__ = [
    "BertNormalizer",
    "ByteLevel",
    "Lowercase",
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "Nmt",
    "Normalizer",
    "Precompiled",
    "Prepend",
    "Regex",
    "Replace",
    "Sequence",
    "Strip",
    "StripAccents",
]


@dataclasses.dataclass(frozen=True)
class Normalizer(Component):
    KIND = "normalizer"


@dataclasses.dataclass(frozen=True)
class NFC(Normalizer):
    TYPE = "NFC"


@dataclasses.dataclass(frozen=True)
class NFD(Normalizer):
    TYPE = "NFD"


@dataclasses.dataclass(frozen=True)
class NFKC(Normalizer):
    TYPE = "NFKC"


@dataclasses.dataclass(frozen=True)
class NFKD(Normalizer):
    TYPE = "NFKD"


@dataclasses.dataclass(frozen=True)
class Lowercase(Normalizer):
    TYPE = "Lowercase"


@dataclasses.dataclass(frozen=True)
class StripAccents(Normalizer):
    """Remove combining marks (use after NFD / NFKD, as Hugging Face does)."""

    TYPE = "StripAccents"


@dataclasses.dataclass(frozen=True)
class Nmt(Normalizer):
    """SentencePiece's NMT rules: drop control characters, map odd spaces to ' '."""

    TYPE = "Nmt"


@dataclasses.dataclass(frozen=True)
class ByteLevel(Normalizer):
    TYPE = "ByteLevel"


@dataclasses.dataclass(frozen=True)
class Strip(Normalizer):
    TYPE = "Strip"
    strip_left: bool = True
    strip_right: bool = True


@dataclasses.dataclass(frozen=True)
class Replace(Normalizer, ReplaceFields):
    TYPE = "Replace"


@dataclasses.dataclass(frozen=True)
class Prepend(Normalizer):
    TYPE = "Prepend"
    prepend: str = ""


@dataclasses.dataclass(frozen=True)
class BertNormalizer(Normalizer):
    """BERT's cleanup; ``strip_accents=None`` follows ``lowercase`` (as in BERT)."""

    TYPE = "BertNormalizer"
    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True


@dataclasses.dataclass(frozen=True)
class Precompiled(Normalizer):
    """A SentencePiece character map (``precompiled_charsmap``, base64 as in the file)."""

    TYPE = "Precompiled"
    precompiled_charsmap: str = ""


@dataclasses.dataclass(frozen=True)
class Sequence(Normalizer):
    TYPE = "Sequence"
    normalizers: list[Normalizer] = children_field("normalizer")
