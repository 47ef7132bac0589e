"""Write SentencePiece ``.model`` files: the ModelProto wire format, by hand.

The inverse of :mod:`.sentencepiece_model` (which reads these files): pieces with their
float32 scores and types, the TrainerSpec fields that change encoding (plus the Unigram
training settings), and the NormalizerSpec. ``sentencepiece`` and ``protobuf`` are not
needed. Field numbers follow ``sentencepiece_model.proto``.

Example::

    data = encode_model(pieces, TrainerSpec(model_type="unigram"), NormalizerSpec())
    spm.SentencePieceProcessor(model_proto=data)  # loads with sentencepiece itself
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write_bytes
from ..errors import ArtifactError
from .sentencepiece_model import MODEL_TYPES, NORMAL, SP_FILE, NormalizerSpec, Piece, TrainerSpec

if TYPE_CHECKING:
    from ..core import Tokenizer

_MODEL_TYPE_IDS = {name: number for number, name in MODEL_TYPES.items()}


def varint(value: int) -> bytes:
    """A protobuf varint; negative int32 values take ten bytes (two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(int(value))


def field_bytes(number: int, data: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_str(number: int, text: str) -> bytes:
    return field_bytes(number, text.encode("utf-8"))


def field_float(number: int, value: float) -> bytes:
    return varint(number << 3 | 5) + struct.pack("<f", value)


def float32(value: float) -> float:
    """``value`` rounded to the float32 a ``.model`` file stores."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@dataclass(frozen=True)
class UnigramSettings:
    """TrainerSpec fields that describe how a Unigram model was trained (not encoding)."""

    seed_sentencepiece_size: int
    shrinking_factor: float
    num_sub_iterations: int


def _piece(p: Piece) -> bytes:
    out = field_str(1, p.piece) + field_float(2, p.score)
    # NORMAL is the schema default; sentencepiece omits it too.
    return out if p.type == NORMAL else out + field_varint(3, p.type)


def _trainer(ts: TrainerSpec, unigram: UnigramSettings | None) -> bytes:
    out = field_varint(3, _MODEL_TYPE_IDS[ts.model_type]) + field_varint(4, ts.vocab_size)
    out += field_float(10, ts.character_coverage)
    if unigram is not None:
        out += field_varint(14, unigram.seed_sentencepiece_size)
        out += field_float(15, unigram.shrinking_factor)
        out += field_varint(17, unigram.num_sub_iterations)
    out += field_varint(20, ts.max_sentencepiece_length)
    out += field_varint(21, ts.split_by_unicode_script) + field_varint(22, ts.split_by_whitespace)
    out += field_varint(23, ts.split_by_number) + field_varint(24, ts.treat_whitespace_as_suffix)
    out += field_varint(25, ts.split_digits) + field_varint(26, ts.allow_whitespace_only_pieces)
    out += b"".join(field_str(30, s) for s in ts.control_symbols)
    out += b"".join(field_str(31, s) for s in ts.user_defined_symbols)
    out += field_varint(35, ts.byte_fallback)
    out += field_varint(40, ts.unk_id) + field_varint(41, ts.bos_id)
    out += field_varint(42, ts.eos_id) + field_varint(43, ts.pad_id)
    out += field_str(44, ts.unk_surface) + field_str(45, ts.unk_piece)
    out += field_str(46, ts.bos_piece) + field_str(47, ts.eos_piece) + field_str(48, ts.pad_piece)
    return out


def _normalizer(spec: NormalizerSpec) -> bytes:
    out = field_str(1, spec.name)
    if spec.precompiled_charsmap:
        out += field_bytes(2, spec.precompiled_charsmap)
    out += field_varint(3, spec.add_dummy_prefix)
    out += field_varint(4, spec.remove_extra_whitespaces)
    out += field_varint(5, spec.escape_whitespaces)
    if spec.normalization_rule_tsv:
        out += field_str(6, spec.normalization_rule_tsv)
    return out


def encode_model(
    pieces: Sequence[Piece],
    trainer: TrainerSpec,
    normalizer: NormalizerSpec,
    *,
    unigram: UnigramSettings | None = None,
) -> bytes:
    """Serialize a ModelProto (fields in schema order, as protobuf writes them)."""
    out = b"".join(field_bytes(1, _piece(p)) for p in pieces)
    out += field_bytes(2, _trainer(trainer, unigram))
    out += field_bytes(3, _normalizer(normalizer))
    return out


def export_sentencepiece(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write the exact ``.model`` bytes ``tok`` was built from, atomically.

    A directory (or a path without a ``.model`` suffix) gets ``tokenizer.model``.
    """
    data = tok.provenance.files.get(SP_FILE)
    if tok.spec.sentencepiece_model is None or data is None:
        raise ArtifactError(
            f"a {tok.spec.kind} tokenizer has no SentencePiece model to export; only "
            "tokenizers loaded from a .model file or trained by train_unigram have one "
            "(use export_hf() or save() instead)"
        )
    target = Path(path)
    if target.is_dir() or target.suffix != ".model":
        target = target / "tokenizer.model"
    atomic_write_bytes(target, data)
    return target
