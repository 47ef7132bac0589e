"""A tiny ModelProto writer for tests: builds SentencePiece ``.model`` bytes by hand."""

from __future__ import annotations

import struct
from collections.abc import Sequence

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def varint(value: int) -> bytes:
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
    return varint(number << 3) + varint(value)


def field_bytes(number: int, data: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_float(number: int, value: float) -> bytes:
    return varint(number << 3 | 5) + struct.pack("<f", value)


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
