"""Decoder components (``tokenizer.json`` ``decoder`` nodes).

Example (the decoder of a Llama-style SentencePiece BPE file)::

    from tokenpact.components import decoders as d
    d.Sequence([d.Replace("\u2581", " "), d.ByteFallback(), d.Fuse(), d.Strip(" ", 1, 0)])
"""

from __future__ import annotations

import dataclasses

from ._base import (
    ByteLevelFields,
    Component,
    MetaspaceFields,
    Regex,
    ReplaceFields,
    children_field,
)

__all__ = [
    "BPEDecoder",
    "ByteFallback",
    "ByteLevel",
    "CTC",
    "Decoder",
    "Fuse",
    "Metaspace",
    "Regex",
    "Replace",
    "Sequence",
    "Strip",
    "WordPiece",
]


@dataclasses.dataclass(frozen=True)
class Decoder(Component):
    KIND = "decoder"


@dataclasses.dataclass(frozen=True)
class ByteLevel(Decoder, ByteLevelFields):
    TYPE = "ByteLevel"


@dataclasses.dataclass(frozen=True)
class WordPiece(Decoder):
    TYPE = "WordPiece"
    prefix: str = "##"
    cleanup: bool = True


@dataclasses.dataclass(frozen=True)
class Metaspace(Decoder, MetaspaceFields):
    TYPE = "Metaspace"


@dataclasses.dataclass(frozen=True)
class BPEDecoder(Decoder):
    TYPE = "BPEDecoder"
    suffix: str = "</w>"


@dataclasses.dataclass(frozen=True)
class ByteFallback(Decoder):
    TYPE = "ByteFallback"


@dataclasses.dataclass(frozen=True)
class Fuse(Decoder):
    TYPE = "Fuse"


@dataclasses.dataclass(frozen=True)
class Strip(Decoder):
    """Remove up to ``start`` / ``stop`` copies of ``content`` from each token's ends."""

    TYPE = "Strip"
    content: str = " "
    start: int = 0
    stop: int = 0


@dataclasses.dataclass(frozen=True)
class Replace(Decoder, ReplaceFields):
    TYPE = "Replace"


@dataclasses.dataclass(frozen=True)
class CTC(Decoder):
    TYPE = "CTC"
    pad_token: str = "<pad>"
    word_delimiter_token: str = "|"
    cleanup: bool = True


@dataclasses.dataclass(frozen=True)
class Sequence(Decoder):
    TYPE = "Sequence"
    decoders: list[Decoder] = children_field("decoder")
