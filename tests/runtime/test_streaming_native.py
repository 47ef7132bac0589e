"""The native push path (`_native.StreamingCore`, byte-level BPE behind a built-in
pattern with nothing to recognize) against the Python reference path of
`StreamingEncoder`, for every chunking of real multilingual text and raw UTF-8 split
inside code points: after every push both committed lists are prefixes of one-shot
`encode`, the native one commits at least as much (it encodes every final pre-token as
scanned; the reference encodes the prefix alone, so it also checks that the prefix
splits the same there), committed + provisional IDs equal `encode` of the text so far,
and errors are the same."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.errors import InvalidInputError
from tokenpact.runtime import StreamingEncoder

from .families import texts
from .test_streaming_encode import _tok

NATIVE_FAMILIES = [
    "cl100k-ranks-gpt4",
    "cl100k-ranks-gpt2",
    "cl100k-ranks-o200k",
    "cl100k-ranks-llama3",
    "llama3.2",
]
# Stress the scanners' look-ahead: whitespace runs, CR/LF, digits, contractions.
EDGES = ["  ", "\n\n", " \r\n", "'s", "'LL", "123456", " 1", "\t", "!!", "é\u0301", "😀", " "]


def _pair(name: str) -> tuple[StreamingEncoder, StreamingEncoder]:
    tok = _tok(name)
    native, reference = StreamingEncoder(tok), StreamingEncoder(tok, native=False)
    assert native._core is not None and reference._core is None
    return native, reference


def _text(data) -> str:
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    text = text[: data.draw(st.integers(0, 1200), label="length")]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    for _ in range(rng.randint(0, 6)):
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(EDGES) * rng.randint(1, 3) + text[at:]
    return text


@pytest.mark.parametrize("name", NATIVE_FAMILIES)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(data=st.data())
def test_native_path_matches_reference_push_by_push(name: str, data) -> None:
    native, reference = _pair(name)
    text = _text(data)
    as_bytes = data.draw(st.booleans(), label="bytes")
    payload = text.encode() if as_bytes else text
    sizes = data.draw(st.lists(st.integers(1, 70), min_size=1, max_size=6), label="sizes")
    tok = _tok(name)
    expected = tok.encode(text)
    at, i = 0, 0
    while at < len(payload):
        chunk = payload[at : at + sizes[i % len(sizes)]]
        if as_bytes:
            native.push_bytes(chunk), reference.push_bytes(chunk)  # type: ignore[arg-type]
        else:
            native.push(chunk), reference.push(chunk)  # type: ignore[arg-type]
        at, i = at + len(chunk), i + 1
        consistent(native, reference, expected)
        if i % 3 == 0 and not native._core.mid_character:  # type: ignore[union-attr]
            received = payload[:at]
            so_far = received.decode() if isinstance(received, bytes) else received
            assert native.committed + native.provisional() == tok.encode(so_far)
            assert reference.committed + reference.provisional() == tok.encode(so_far)
    native.finish(), reference.finish()
    assert native.committed == reference.committed == expected


def consistent(native: StreamingEncoder, reference: StreamingEncoder, expected: list[int]) -> None:
    """Both committed lists are prefixes of `expected`, the native one at least as long,
    and each pending text is the rest of the same text."""
    ours, theirs = native.committed, reference.committed
    assert ours == expected[: len(ours)] and theirs == expected[: len(theirs)]
    assert len(ours) >= len(theirs)
    assert reference.pending_text.endswith(native.pending_text)


@pytest.mark.parametrize("name", ["cl100k-ranks-gpt4", "llama3.2"])
def test_native_path_long_pushes_and_reset(name: str) -> None:
    """Pushes over the GIL-release size, the rescan-after-doubling regime, and reset."""
    native, reference = _pair(name)
    text = "\n".join(texts()[:40]) + " " + "a" * 20_000 + " end"
    for enc in (native, reference):
        for start in range(0, len(text), 9_000):
            enc.push(text[start : start + 9_000])
    expected = _tok(name).encode(text)
    consistent(native, reference, expected)
    native.finish(), reference.finish()
    assert native.committed == reference.committed == expected
    native.reset()
    assert (native.committed, native.pending_text, native.provisional()) == ([], "", [])
    assert native.push_bytes(bytearray(b"ab c")) == reference.push_bytes(bytearray(b"ab c"))


def test_native_path_errors_leave_the_stream_as_it_was() -> None:
    for enc in _pair("llama3.2"):
        enc.push_bytes(b"Hello wor")
        with pytest.raises(InvalidInputError, match="not valid UTF-8"):
            enc.push_bytes(b"ld\xe2\x28")
        enc.push_bytes(b"\xe2\x82")
        with pytest.raises(InvalidInputError, match="incomplete UTF-8"):
            enc.push("x")
        with pytest.raises(InvalidInputError, match="inside a UTF-8 character"):
            enc.finish()
        enc.push_bytes(b"\xac!")
        with pytest.raises(InvalidInputError, match="surrogate"):
            enc.push("a\ud800")
    native, reference = _pair("llama3.2")
    for enc in (native, reference):
        enc.push_bytes(b"Hello wor")
        with pytest.raises(InvalidInputError):
            enc.push_bytes(b"ld\xff")
        enc.push_bytes(b"ld \xe2\x82\xac!")
    consistent(native, reference, _tok("llama3.2").encode("Hello world €!"))
    native.finish(), reference.finish()
    assert native.committed == reference.committed == _tok("llama3.2").encode("Hello world €!")
