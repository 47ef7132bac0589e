"""The chunked-stream check shared by the stream tests of the ``sentencepiece`` (BPE and
Unigram) and ``normalized`` commit rules."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder


def check_stream(
    tok,
    data,
    text: str,
    *,
    rule: str,
    scan_steps: Sequence[int],
    max_chunk: int,
    draw_native: bool = False,
) -> None:
    """Push ``text`` in drawn chunk sizes of 1 to ``max_chunk`` (str or bytes, split
    anywhere) under ``rule``, scanning every drawn ``scan_steps`` bytes, on the native
    path or (with ``draw_native``, drawn) the Python reference; after each push that
    ends on a character boundary the committed IDs plus the provisional tail equal
    one-shot ``encode`` of the prefix, and the whole stream equals ``encode``."""
    allowed = data.draw(st.sampled_from(["all", ()]), label="allowed")
    step = data.draw(st.sampled_from(list(scan_steps)), label="scan_step")
    native = data.draw(st.booleans(), label="native") if draw_native else True
    enc = StreamingEncoder(tok, allowed_special=allowed, scan_step=step, native=native)
    assert enc.rule == rule and (enc._core is not None) == native
    as_bytes = data.draw(st.booleans(), label="bytes")
    payload: str | bytes = text.encode() if as_bytes else text
    sizes = data.draw(st.lists(st.integers(1, max_chunk), min_size=1, max_size=6), label="sizes")
    out: list[int] = []
    at, i = 0, 0
    while at < len(payload):
        n = sizes[i % len(sizes)]
        chunk = payload[at : at + n]
        out += enc.push_bytes(chunk) if isinstance(chunk, bytes) else enc.push(chunk)
        at, i = at + n, i + 1
        assert enc.committed == out
        received = payload[:at]
        try:
            prefix = received.decode() if isinstance(received, bytes) else received
        except UnicodeDecodeError:
            continue  # mid-character: not text yet
        # Committed IDs are final for every continuation, the empty one included.
        assert out + enc.provisional() == tok.encode(prefix, allowed_special=allowed)
    out += enc.finish()
    assert out == tok.encode(text, allowed_special=allowed)


def check_sentencepiece_stream(tok, data, text: str) -> None:
    """:func:`check_stream` under the ``sentencepiece`` rule on the native path, in
    chunks of up to 70 units."""
    check_stream(
        tok, data, text, rule="sentencepiece", scan_steps=[0, 0, 1, 100, 256], max_chunk=70
    )
