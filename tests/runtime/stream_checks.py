"""The chunked-stream check shared by the SentencePiece (BPE and Unigram) stream tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder


def check_sentencepiece_stream(tok, data, text: str) -> None:
    """Push ``text`` in drawn chunk sizes (str or bytes, split anywhere) under the
    ``sentencepiece`` rule; after each push the committed IDs plus the provisional tail
    equal one-shot ``encode`` of the prefix, and the whole stream equals ``encode``."""
    allowed = data.draw(st.sampled_from(["all", ()]), label="allowed")
    step = data.draw(st.sampled_from([0, 0, 1, 100, 256]), label="scan_step")
    enc = StreamingEncoder(tok, allowed_special=allowed, scan_step=step)
    assert enc.rule == "sentencepiece" and enc._core is not None
    as_bytes = data.draw(st.booleans(), label="bytes")
    payload: str | bytes = text.encode() if as_bytes else text
    sizes = data.draw(st.lists(st.integers(1, 70), min_size=1, max_size=6), label="sizes")
    out: list[int] = []
    at, i = 0, 0
    while at < len(payload):
        n = sizes[i % len(sizes)]
        chunk = payload[at : at + n]
        out += enc.push_bytes(chunk) if isinstance(chunk, bytes) else enc.push(chunk)
        at, i = at + n, i + 1
        assert enc.committed == out
        if not enc._core.mid_character:  # type: ignore[union-attr]
            received = payload[:at]
            prefix = received.decode() if isinstance(received, bytes) else received
            # Committed IDs are final for every continuation, the empty one included.
            assert out + enc.provisional() == tok.encode(prefix, allowed_special=allowed)
    out += enc.finish()
    assert out == tok.encode(text, allowed_special=allowed)
