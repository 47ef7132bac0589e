"""Runtime API argument types at the boundary (issue 43): bytes-like data for
``push_bytes``, ints (never bools, bytes or text) for IDs, 32-bit stop IDs and stop
strings without lone surrogates. Every refusal is a typed TokenpactError."""

from __future__ import annotations

import array

import numpy as np
import pytest

import tokenpact as tp
from tokenpact.chat.stop import StopPolicy
from tokenpact.errors import ConfigError, InvalidInputError, UnknownTokenError
from tokenpact.runtime import IncrementalDecoder, OutputStream, StreamingEncoder


@pytest.fixture(scope="module")
def tok() -> tp.Tokenizer:
    return tp.Tokenizer.from_merges([(c, c) for c in b"ab"])


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    "data",
    # 5 encoded five NUL bytes; 10**10 allocated 10 GB (run under no memory limit here:
    # the refusal must come before any allocation); None was a bare TypeError.
    [5, 10**10, None, True, 1.5, [97], (97,), object(), "ab"],
    ids=repr,
)
def test_push_bytes_refuses_what_is_not_bytes_like(
    tok: tp.Tokenizer, native: bool, data: object
) -> None:
    enc = StreamingEncoder(tok, native=native)
    with pytest.raises(InvalidInputError, match="push_bytes"):
        enc.push_bytes(data)  # type: ignore[arg-type]
    out: list[int] = []
    with pytest.raises(InvalidInputError, match="push_bytes_into"):
        enc.push_bytes_into(data, out)  # type: ignore[arg-type]
    assert out == [] and enc.finish() == []


@pytest.mark.parametrize("native", [True, False])
def test_push_bytes_takes_every_bytes_like_object(tok: tp.Tokenizer, native: bool) -> None:
    expected = tok.encode("abba")
    for data in (b"abba", bytearray(b"abba"), memoryview(b"abba"), array.array("B", b"abba")):
        enc = StreamingEncoder(tok, native=native)
        assert enc.push_bytes(data) + enc.finish() == expected


@pytest.mark.parametrize(
    "ids",
    [b"abc", bytearray(b"abc"), memoryview(b"abc"), "abc", True, False, [True], [97, False],
     np.bool_(True), np.array([True]), [np.bool_(True)], 2**32, [2**32], -1, [1.5], None,
     {97, 98}, {97: 1}, frozenset()],
    ids=repr,
)  # fmt: skip
def test_decoder_push_refuses_what_is_not_ids(tok: tp.Tokenizer, ids: object) -> None:
    """b"abc" decoded as IDs 97-99 and True as ID 1."""
    with pytest.raises(UnknownTokenError):
        IncrementalDecoder(tok).push(ids)  # type: ignore[arg-type]


def test_decoder_push_takes_ints_in_every_form(tok: tp.Tokenizer) -> None:
    for ids in ([97, 98], (97, 98), iter([97, 98]), np.array([97, 98]), [np.int64(97), 98]):
        dec = IncrementalDecoder(tok)
        assert dec.push(ids) + dec.finish() == "ab"
    dec = IncrementalDecoder(tok)
    assert dec.push(np.int32(97)) + dec.finish() == "a"


@pytest.mark.parametrize(
    "ids", [b"ab", bytearray(b"ab"), "ab", True, [True], {97, 98}, {97: 1}], ids=repr
)
def test_output_stream_push_refuses_what_is_not_ids(tok: tp.Tokenizer, ids: object) -> None:
    with pytest.raises(UnknownTokenError):
        OutputStream(tok, StopPolicy()).push(ids)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"stop_ids": [2**32]}, {"stop_ids": (2**64,)}, {"stop_token_ids": [2**32 + 5]},
     {"stop_sequences": [[1, 2**32]]}, {"stop_ids": [True]}, {"stop_ids": (-1,)}],
    ids=repr,
)  # fmt: skip
def test_stop_ids_beyond_32_bits_are_config_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="token ID"):
        StopPolicy(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["\ud800", "stop\udfff", "\udc80x"])
def test_lone_surrogate_stop_strings_are_typed(tok: tp.Tokenizer, text: str) -> None:
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        StopPolicy(stop_strings=[text])
    assert StopPolicy(stop_strings=["ok", "\U0001f642"]).stop_strings == ("ok", "\U0001f642")
    assert StopPolicy(stop_ids=(2**32 - 1,)).stop_ids == (2**32 - 1,)
