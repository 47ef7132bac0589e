"""SentencePiece ``.model`` files: a hand-written reader of the ModelProto wire format.

The ``sentencepiece`` package (and ``protobuf``) are never imported: the file is decoded
here field by field (varints, fixed32 floats, length-delimited strings and messages), as
``sentencepiece_model.proto`` numbers them. Unknown fields are skipped, as protobuf does;
a truncated or malformed file raises :class:`~tokenpact.errors.ArtifactError` naming the
file, the field and the fix.

Example::

    model = read_sentencepiece_model("tokenizer.model")
    model.trainer_spec.model_type, model.pieces[0].piece, model.normalizer_spec.name
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..components.processors import PrependBos
from ..components.sentencepiece import (
    BYTE,
    CONTROL,
    MODEL_TYPES,
    NORMAL,
    PIECE_TYPES,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    NormalizerSpec,
    Piece,
    SentencePieceModel,
    TrainerSpec,
)
from ..core import Provenance, SentencePiece, Tokenizer, TokenizerSpec
from ..errors import ArtifactError
from ..special import SpecialToken

# The model's types live in components.sentencepiece; they are re-exported here, where
# readers of .model files have always found them.
__all__ = [
    "BYTE",
    "CONTROL",
    "MODEL_TYPES",
    "NORMAL",
    "PIECE_TYPES",
    "SP_FILE",
    "UNKNOWN",
    "UNUSED",
    "USER_DEFINED",
    "NormalizerSpec",
    "Piece",
    "SentencePieceModel",
    "TrainerSpec",
    "load_sentencepiece",
    "looks_like_sentencepiece",
    "parse_model",
    "read_sentencepiece",
    "read_sentencepiece_model",
    "sentencepiece_from_bytes",
    "sentencepiece_spec",
]

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
# The file name of a SentencePiece model in an artifact directory.
SP_FILE = "tokenizer.model"


class _Malformed(Exception):
    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)
        self.where, self.problem = where, problem


def _varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _Malformed(where, "the file ends inside a varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed(where, "a varint is longer than 10 bytes")


def _fields(data: bytes, where: str) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message, in file order."""
    pos = 0
    value: int | bytes  # an int for varints, the raw bytes otherwise
    while pos < len(data):
        key, pos = _varint(data, pos, where)
        number, wire = key >> 3, key & 7
        at = f"{where}.field {number}"
        if number == 0:
            raise _Malformed(at, "field number 0 is not valid protobuf")
        if wire == _VARINT:
            value, pos = _varint(data, pos, at)
        elif wire == _FIXED64:
            if pos + 8 > len(data):
                raise _Malformed(at, "the file ends inside a 64-bit field")
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == _LEN:
            size, pos = _varint(data, pos, at)
            if pos + size > len(data):
                raise _Malformed(
                    at, f"a length-delimited field claims {size} bytes but {len(data) - pos} remain"
                )
            value, pos = data[pos : pos + size], pos + size
        elif wire == _FIXED32:
            if pos + 4 > len(data):
                raise _Malformed(at, "the file ends inside a 32-bit field")
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise _Malformed(at, f"wire type {wire} is not valid protobuf")
        yield number, wire, value


def _int32(value: int) -> int:
    # Negative int32 values are written as 10-byte two's-complement varints.
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: bytes, where: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Malformed(where, f"a string field is not UTF-8 ({exc.reason})") from None


def _expect(wire: int, want: int, where: str) -> None:
    if wire != want:
        raise _Malformed(where, f"wire type {wire} where the schema has {want}")


def _float(value: bytes) -> float:
    return float(struct.unpack("<f", value)[0])


_UNPACK_F32 = struct.Struct("<f").unpack_from


def _piece_fast(data: bytes) -> Piece | None:
    """The common layout ``0A len piece 15 score [18 type]``, decoded without the general
    field loop (a 32k-piece model loads several times faster); None for anything else."""
    if len(data) < 7 or data[0] != 0x0A or data[1] >= 0x80:
        return None
    end = 2 + data[1]
    if len(data) < end + 5 or data[end] != 0x15:
        return None
    tail = len(data) - end - 5
    if tail == 0:
        kind = NORMAL
    elif tail == 2 and data[end + 5] == 0x18 and data[end + 6] in PIECE_TYPES:
        kind = data[end + 6]
    else:
        return None
    try:
        text = data[2:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return Piece(text, float(_UNPACK_F32(data, end + 1)[0]), kind)


def _piece(data: bytes, where: str) -> Piece:
    fast = _piece_fast(data)
    if fast is not None:
        return fast
    piece, score, kind = "", 0.0, NORMAL
    for number, wire, value in _fields(data, where):
        at = f"{where}.{ {1: 'piece', 2: 'score', 3: 'type'}.get(number, number) }"
        if number == 1:
            _expect(wire, _LEN, at)
            piece = _text(value, at)
        elif number == 2:
            _expect(wire, _FIXED32, at)
            score = _float(value)
        elif number == 3:
            _expect(wire, _VARINT, at)
            kind = _int32(value)
            if kind not in PIECE_TYPES:
                raise _Malformed(at, f"piece type {kind} is not one of {sorted(PIECE_TYPES)}")
    return Piece(piece, score, kind)


# TrainerSpec field number -> (attribute, decoder). Others (input files, thread counts,
# sampling sizes, ...) describe how training ran and are skipped.
_Decode = Callable[[int, Any, str], Any]


def _as_bool(wire: int, value: Any, where: str) -> bool:
    _expect(wire, _VARINT, where)
    return bool(value)


def _as_int(wire: int, value: Any, where: str) -> int:
    _expect(wire, _VARINT, where)
    return _int32(value)


def _as_str(wire: int, value: Any, where: str) -> str:
    _expect(wire, _LEN, where)
    return _text(value, where)


def _as_float(wire: int, value: Any, where: str) -> float:
    _expect(wire, _FIXED32, where)
    return _float(value)


def _as_model_type(wire: int, value: Any, where: str) -> str:
    _expect(wire, _VARINT, where)
    if value not in MODEL_TYPES:
        raise _Malformed(where, f"model_type {value} is not one of {sorted(MODEL_TYPES)}")
    return MODEL_TYPES[value]


_TRAINER: dict[int, tuple[str, _Decode]] = {
    3: ("model_type", _as_model_type),
    4: ("vocab_size", _as_int),
    10: ("character_coverage", _as_float),
    20: ("max_sentencepiece_length", _as_int),
    21: ("split_by_unicode_script", _as_bool),
    22: ("split_by_whitespace", _as_bool),
    23: ("split_by_number", _as_bool),
    24: ("treat_whitespace_as_suffix", _as_bool),
    25: ("split_digits", _as_bool),
    26: ("allow_whitespace_only_pieces", _as_bool),
    35: ("byte_fallback", _as_bool),
    40: ("unk_id", _as_int),
    41: ("bos_id", _as_int),
    42: ("eos_id", _as_int),
    43: ("pad_id", _as_int),
    44: ("unk_surface", _as_str),
    45: ("unk_piece", _as_str),
    46: ("bos_piece", _as_str),
    47: ("eos_piece", _as_str),
    48: ("pad_piece", _as_str),
}
_TRAINER_LISTS = {30: "control_symbols", 31: "user_defined_symbols"}


def _trainer_spec(data: bytes, where: str) -> TrainerSpec:
    spec = TrainerSpec()
    for number, wire, value in _fields(data, where):
        if number in _TRAINER:
            name, decode = _TRAINER[number]
            setattr(spec, name, decode(wire, value, f"{where}.{name}"))
        elif number in _TRAINER_LISTS:
            name = _TRAINER_LISTS[number]
            getattr(spec, name).append(_as_str(wire, value, f"{where}.{name}"))
    return spec


def _normalizer_spec(data: bytes, where: str) -> NormalizerSpec:
    spec = NormalizerSpec(present=True)
    for number, wire, value in _fields(data, where):
        if number == 1:
            spec.name = _as_str(wire, value, f"{where}.name")
        elif number == 2:
            _expect(wire, _LEN, f"{where}.precompiled_charsmap")
            spec.precompiled_charsmap = bytes(value)
        elif number == 3:
            spec.add_dummy_prefix = _as_bool(wire, value, f"{where}.add_dummy_prefix")
        elif number == 4:
            spec.remove_extra_whitespaces = _as_bool(
                wire, value, f"{where}.remove_extra_whitespaces"
            )
        elif number == 5:
            spec.escape_whitespaces = _as_bool(wire, value, f"{where}.escape_whitespaces")
        elif number == 6:
            spec.normalization_rule_tsv = _as_str(wire, value, f"{where}.normalization_rule_tsv")
    return spec


def parse_model(data: bytes, path: Path) -> SentencePieceModel:
    """Decode a serialized ModelProto; ``path`` only names the file in errors."""
    pieces: list[Piece] = []
    trainer = TrainerSpec()
    normalizer = NormalizerSpec()
    denormalizer = NormalizerSpec()
    fix = (
        "the file is truncated or is not a SentencePiece model; copy it again from its "
        "source (a tiktoken rank file named tokenizer.model loads with Tokenizer.from_tiktoken)"
    )
    try:
        for number, wire, value in _fields(data, "ModelProto"):
            if number == 1:
                where = f"ModelProto.pieces[{len(pieces)}]"
                _expect(wire, _LEN, where)
                pieces.append(_piece(value, where))
            elif number == 2:
                _expect(wire, _LEN, "ModelProto.trainer_spec")
                trainer = _trainer_spec(value, "ModelProto.trainer_spec")
            elif number == 3:
                _expect(wire, _LEN, "ModelProto.normalizer_spec")
                normalizer = _normalizer_spec(value, "ModelProto.normalizer_spec")
            elif number == 5:
                _expect(wire, _LEN, "ModelProto.denormalizer_spec")
                denormalizer = _normalizer_spec(value, "ModelProto.denormalizer_spec")
    except _Malformed as exc:
        raise ArtifactError(f"{path}: {exc.where}: {exc.problem}; {fix}") from None
    if not pieces:
        raise ArtifactError(f"{path}: ModelProto.pieces: the model has no pieces; {fix}")
    for i, p in enumerate(pieces):
        if not p.piece:
            raise ArtifactError(f"{path}: ModelProto.pieces[{i}].piece: a piece is empty; {fix}")
    return SentencePieceModel(path, pieces, trainer, normalizer, denormalizer)


def read_sentencepiece_model(path: str | os.PathLike[str]) -> SentencePieceModel:
    """Read and decode a SentencePiece ``.model`` file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{p}: cannot read the SentencePiece model ({exc})") from None
    return parse_model(data, p)


def looks_like_sentencepiece(head: bytes) -> bool:
    """Whether the first bytes of a file are a ModelProto rather than tiktoken text.

    A ModelProto starts with field 1 (a piece: tag 0x0A) or 2..5 as length-delimited
    fields; a tiktoken file is base64 text, whose first byte is never 0x0A or 0x12..0x2A.
    """
    return bool(head) and head[0] in (0x0A, 0x12, 0x1A, 0x22, 0x2A)


def read_sentencepiece(path: str | os.PathLike[str]) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a SentencePiece ``.model`` file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{p}: cannot read the SentencePiece model ({exc})") from None
    spec, provenance = sentencepiece_spec(data, p)
    return spec, provenance.with_source(path=str(p))


def load_sentencepiece(path: str | os.PathLike[str]) -> Tokenizer:
    """A :class:`~tokenpact.Tokenizer` reproducing ``sentencepiece`` on this model file."""
    spec, provenance = read_sentencepiece(path)
    return Tokenizer(spec, provenance=provenance)


def sentencepiece_spec(
    data: bytes, label: str | os.PathLike[str]
) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of ``.model`` bytes.

    ``label`` names the model in errors. The bytes are kept in the provenance: they are
    the release artifact that ``save`` and ``export_sentencepiece`` write back unchanged.
    """
    return model_spec(parse_model(data, Path(label)), data)


def model_spec(model: SentencePieceModel, data: bytes) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a typed SentencePiece model whose ``.model`` bytes are
    ``data`` (a trainer builds the model and serializes it; a reader parses the bytes)."""

    p, ts = model.path, model.trainer_spec
    if (
        model.normalizer_spec.normalization_rule_tsv
        and not model.normalizer_spec.precompiled_charsmap
    ):
        raise ArtifactError(
            f"{p}: normalizer_spec.normalization_rule_tsv: an uncompiled rule table is not "
            "supported; re-export the model so that the rules are in precompiled_charsmap"
        )
    sp = SentencePiece(model)
    roles = sp.roles()
    specials = [
        (SpecialToken(piece, roles.get(i, "reserved")), i) for i, piece in sp.control_pieces()
    ]
    bos = next((x.piece for i, x in enumerate(model.pieces) if roles.get(i) == "bos"), None)
    spec = TokenizerSpec(
        sp,
        special_tokens=specials,
        post_processor=PrependBos(bos) if bos else None,
    )
    provenance = Provenance(
        format="sentencepiece_model",
        source={
            "format": "sentencepiece_model",
            "path": None,
            "model_type": ts.model_type,
            "byte_fallback": ts.byte_fallback,
            "normalizer": model.normalizer_spec.name,
        },
        files={SP_FILE: bytes(data)},
        label=str(p),
    )
    return spec, provenance


def sentencepiece_from_bytes(
    data: bytes, label: str | os.PathLike[str], cls: type[Tokenizer] | None = None
) -> Tokenizer:
    """Build a tokenizer (of class ``cls``, default Tokenizer) from ``.model`` bytes."""
    spec, provenance = sentencepiece_spec(data, label)
    return (cls or Tokenizer)(spec, provenance=provenance)
