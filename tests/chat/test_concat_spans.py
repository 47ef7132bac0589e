"""``spans.concat`` (every Jinja buffer and ``a + b + c`` of strings): the joined text
with each character's owner exactly where the pieces put it (a property over pieces
holding no span, one span or several)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.chat.spans import SpanStr, concat, spans_of, track


def _owners(value: str) -> list[int]:
    owners = [-1] * len(value)
    for a, b, o in spans_of(value):
        owners[a:b] = [o] * (b - a)
    return owners


_plain = st.text(max_size=6)
_one = st.builds(track, st.text(max_size=6), st.integers(0, 9))
_several = st.lists(st.one_of(_plain, _one), max_size=4).map(concat)
_pieces = st.lists(st.one_of(_plain, _one, _several), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_pieces)
def test_concat_keeps_every_owner(pieces: list[str]) -> None:
    out = concat(pieces)
    assert out == "".join(pieces)
    assert _owners(out) == [o for piece in pieces for o in _owners(piece)]
    spans = spans_of(out)
    assert (type(out) is SpanStr) == bool(spans)  # span-free results stay plain str
    assert list(spans) == sorted(spans)
    assert all(a < b for a, b, _ in spans)


def test_concat_of_one_tracked_piece_is_that_piece() -> None:
    piece = track("content", 4)
    assert concat([piece]) is piece
    assert type(concat(["a", "b"])) is str
