"""A SentencePiece model as a typed component: its pieces, TrainerSpec and the
normalizer/denormalizer specs (the fields of ``sentencepiece_model.proto`` that change
encoding). ``formats.sentencepiece_model`` decodes a ``.model`` file into these;
``formats.sentencepiece_write`` encodes them back; ``core`` builds the engine from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = {
    NORMAL: "normal",
    UNKNOWN: "unknown",
    CONTROL: "control",
    USER_DEFINED: "user_defined",
    UNUSED: "unused",
    BYTE: "byte",
}
# TrainerSpec.ModelType
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass(frozen=True)
class Piece:
    piece: str
    score: float
    type: int = NORMAL

    @property
    def type_name(self) -> str:
        return PIECE_TYPES.get(self.type, str(self.type))


@dataclass
class TrainerSpec:
    """The TrainerSpec fields that change encoding (plus a few that describe training)."""

    model_type: str = "unigram"
    vocab_size: int = 8000
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = " \u2047 "
    split_digits: bool = False
    split_by_whitespace: bool = True
    split_by_number: bool = True
    split_by_unicode_script: bool = True
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    max_sentencepiece_length: int = 16
    character_coverage: float = 0.9995
    control_symbols: list[str] = field(default_factory=list)
    user_defined_symbols: list[str] = field(default_factory=list)


@dataclass
class NormalizerSpec:
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""
    present: bool = False  # whether the file carries this message at all


@dataclass
class SentencePieceModel:
    path: Path
    pieces: list[Piece]
    trainer_spec: TrainerSpec
    normalizer_spec: NormalizerSpec
    denormalizer_spec: NormalizerSpec
