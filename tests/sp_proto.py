"""A tiny ModelProto builder for tests: hand-made SentencePiece ``.model`` bytes (pieces
with explicit types, odd flags) on top of the package's wire-format primitives."""

from __future__ import annotations

from collections.abc import Sequence

from tokenpact.formats.sentencepiece_model import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
)
from tokenpact.formats.sentencepiece_write import field_bytes, field_float, field_varint, varint

__all__ = ["BYTE", "CONTROL", "NORMAL", "UNKNOWN", "UNUSED", "USER_DEFINED", "model", "piece"]
__all__ += ["field_bytes", "field_float", "field_varint", "varint"]


def piece(text: str, score: float, kind: int = NORMAL) -> bytes:
    return field_bytes(1, text.encode("utf-8")) + field_float(2, score) + field_varint(3, kind)


def model(
    pieces: Sequence[tuple[str, float, int]],
    *,
    model_type: int = 1,
    byte_fallback: bool = False,
    add_dummy_prefix: bool = False,
    remove_extra_whitespaces: bool = False,
    unk_id: int = 0,
) -> bytes:
    """Serialize a ModelProto with the given pieces and an identity normalizer."""
    out = b"".join(field_bytes(1, piece(*p)) for p in pieces)
    trainer = field_varint(3, model_type) + field_varint(4, len(pieces))
    trainer += field_varint(35, int(byte_fallback)) + field_varint(40, unk_id)
    trainer += field_varint(41, -1) + field_varint(42, -1)
    out += field_bytes(2, trainer)
    normalizer = field_bytes(1, b"identity") + field_varint(3, int(add_dummy_prefix))
    normalizer += field_varint(4, int(remove_extra_whitespaces)) + field_varint(5, 1)
    out += field_bytes(3, normalizer)
    return out
