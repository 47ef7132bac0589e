"""The sink API of ``StreamingEncoder`` (``push_into``, ``push_bytes_into``,
``finish_into``): the same pushes as ``push``/``push_bytes``/``finish``, appending the
committed IDs to a caller's list instead of returning a new one.

Properties, on real tokenizer files for every commit rule (pretokens, whitespace,
metaspace, specials, sentencepiece BPE and Unigram, hold), native and reference paths,
for every chunking of real multilingual text (str chunks, raw UTF-8 split inside code
points, spellings whole or split): each sink call appends exactly what the matching
list-returning call returns on a twin encoder and returns that count, so
``concat(sink outputs) + finish_into == tok.encode(text) == the push() path``. Errors
(a non-list sink, invalid UTF-8, a non-str chunk, a push inside a character, a lone
surrogate) are the push path's typed errors, append nothing and leave the encoder as
the push path leaves it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.errors import InvalidInputError
from tokenpact.runtime import StreamingEncoder

from .families import family
from .test_streaming_specials import _chunks, _text
from .test_streaming_unigram import _trained as _trained_unigram

# name -> (loader, allowed_special): one file per commit rule the encoder can take.
CASES = {
    "llama3.2": (lambda: family("llama3.2"), "all"),  # pretokens
    "minilm-wordpiece": (lambda: family("minilm-wordpiece"), "all"),  # whitespace
    "unigram-metaspace": (lambda: family("unigram-metaspace"), "all"),  # metaspace
    "mistral-hf-bytefallback": (lambda: family("mistral-hf-bytefallback"), "all"),  # specials
    # The default policy: its 20 ordinary added tokens ([REFERENCE_DOC_n]) are guarded
    # spellings, so it streams under "specials" too (it held everything before they matched).
    "mistral-hf-bytefallback-default": (lambda: family("mistral-hf-bytefallback"), ()),
    "mistral-sp-v3": (lambda: family("mistral-sp-v3"), "all"),  # sentencepiece BPE
    "unigram-nfkc-model": (lambda: _trained_unigram("unigram-nfkc"), "all"),  # SP Unigram
}
RULES = {
    "llama3.2": "pretokens",
    "minilm-wordpiece": "whitespace",
    "unigram-metaspace": "metaspace",
    "mistral-hf-bytefallback": "specials",
    "mistral-hf-bytefallback-default": "specials",
    "mistral-sp-v3": "sentencepiece",
    "unigram-nfkc-model": "sentencepiece",
}
_loaded: dict[str, object] = {}


def _case(name: str):
    loader, allowed = CASES[name]
    if name not in _loaded:
        _loaded[name] = loader()
    return _loaded[name], allowed


def _twins(name: str, native: bool, scan_step: int) -> tuple[StreamingEncoder, StreamingEncoder]:
    tok, allowed = _case(name)
    pair = tuple(
        StreamingEncoder(tok, allowed_special=allowed, native=native, scan_step=scan_step)
        for _ in range(2)
    )
    if native:
        assert pair[0].rule == RULES[name]
        assert (pair[0]._core is not None) == (RULES[name] != "hold")
    else:
        assert pair[0]._core is None
    return pair[0], pair[1]


# The byte-fallback file has no pre-tokenizer: every stream of it ends in one BPE piece
# as long as the text (about 1.5 s per example here), so its two rules get fewer examples.
_SLOW_CASES = ("mistral-hf-bytefallback", "mistral-hf-bytefallback-default")


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
@pytest.mark.parametrize("name", sorted(set(CASES) - set(_SLOW_CASES)))
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=30, deadline=None)
@given(data=st.data())
def test_sink_appends_what_push_returns(name: str, native: bool, data) -> None:
    _check_sink(name, native, data)


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
@pytest.mark.parametrize("name", _SLOW_CASES)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=6, deadline=None)
@given(data=st.data())
def test_sink_appends_what_push_returns_on_one_piece_files(name: str, native: bool, data) -> None:
    _check_sink(name, native, data)


def _check_sink(name: str, native: bool, data) -> None:
    tok, allowed = _case(name)
    step = data.draw(st.sampled_from([0, 1, 100, 256]), label="scan_step")
    pushed, sunk = _twins(name, native, step)
    text = _text(tok, allowed if allowed else (), data)
    as_bytes = data.draw(st.booleans(), label="bytes")
    payload: str | bytes = text.encode() if as_bytes else text
    sizes = data.draw(st.lists(st.integers(1, 70), min_size=1, max_size=6), label="sizes")
    # A list that already holds IDs: the sink appends, it never clears.
    head = data.draw(st.lists(st.integers(0, 5), max_size=3), label="head")
    out, via_push = list(head), list(head)
    for chunk in _chunks(payload, sizes):
        if isinstance(chunk, bytes):
            ids = pushed.push_bytes(chunk)
            n = sunk.push_bytes_into(chunk, out)
        else:
            ids = pushed.push(chunk)
            n = sunk.push_into(chunk, out)
        assert n == len(ids) and out[len(out) - n :] == ids
        via_push += ids
        assert out == via_push and sunk.committed == pushed.committed
    ids = pushed.finish()
    n = sunk.finish_into(out)
    assert n == len(ids) and out[len(out) - n :] == ids
    expected = tok.encode(text, allowed_special=allowed)
    assert out[len(head) :] == via_push[len(head) :] + ids == expected


BAD_SINKS = [(), None, {}, "ids", bytearray(), iter([])]


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
@pytest.mark.parametrize("bad", BAD_SINKS, ids=lambda b: type(b).__name__)
def test_a_sink_that_is_not_a_list_is_a_typed_error_and_changes_nothing(native, bad) -> None:
    enc, twin = _twins("llama3.2", native, 0)
    twin.push("Hello wor")
    enc.push("Hello wor")
    for call in (
        lambda: enc.push_into(" world again", bad),
        lambda: enc.push_bytes_into(b" world again", bad),
        lambda: enc.finish_into(bad),
    ):
        with pytest.raises(InvalidInputError, match="out must be a list"):
            call()
        assert enc.pending_text == twin.pending_text and enc.committed == twin.committed
    out: list[int] = []
    enc.push_into(" world", out)
    enc.finish_into(out)
    assert enc.committed == _case("llama3.2")[0].encode("Hello wor world")  # type: ignore[attr-defined]


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
def test_text_given_to_the_byte_pushes_is_a_typed_error(native: bool) -> None:
    """``push_bytes("text")`` names the str method on both paths (not the binding's bare
    TypeError) and changes nothing; ``str`` subclasses too."""
    enc, twin = _twins("llama3.2", native, 0)
    for data in ("Hello", type("Text", (str,), {})("Hello")):
        for call, push in (
            (lambda d: enc.push_bytes(d), "push"),
            (lambda d: enc.push_bytes_into(d, []), "push_into"),
        ):
            with pytest.raises(InvalidInputError, match=f"not str; use {push}\\(\\)"):
                call(data)
            assert enc.pending_text == twin.pending_text and enc.committed == twin.committed
    assert enc.push_bytes(b"Hello") == twin.push_bytes(b"Hello")


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
def test_a_list_subclass_is_a_list(native: bool) -> None:
    class Ids(list):
        def append(self, item):  # pragma: no cover - must not be called
            raise AssertionError("the sink appends at the C level, as list.extend does")

        extend = append

    enc, _ = _twins("llama3.2", native, 0)
    out = Ids()
    enc.push_into("Hello world", out)
    enc.finish_into(out)
    assert list(out) == _case("llama3.2")[0].encode("Hello world")  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["llama3.2", "mistral-sp-v3", "unigram-nfkc-model"])
@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
def test_errors_are_the_push_paths_and_append_nothing(name: str, native: bool) -> None:
    enc, twin = _twins(name, native, 0)
    tok, allowed = _case(name)
    out = [7]

    def same_state() -> None:
        assert enc.pending_text == twin.pending_text
        assert enc.committed == twin.committed
        assert enc.provisional() == twin.provisional()

    # Invalid UTF-8: the push path's error, the same state afterwards.
    for good, bad in ((b"Hello w", b"orld \xff tail"), (b" more ", b"\xc3(")):
        assert enc.push_bytes_into(good, out) == len(twin.push_bytes(good))
        before = list(out)
        with pytest.raises(InvalidInputError) as sink_error:
            enc.push_bytes_into(bad, out)
        with pytest.raises(InvalidInputError) as push_error:
            twin.push_bytes(bad)
        assert str(sink_error.value) == str(push_error.value) and out == before
        same_state()
    # A non-str chunk, a str push inside a character, a lone surrogate.
    for call, twin_call in (
        (lambda: enc.push_into(b"bytes", out), lambda: twin.push(b"bytes")),  # type: ignore[arg-type]
        (lambda: enc.push_into("a\ud800b", out), lambda: twin.push("a\ud800b")),
    ):
        before = list(out)
        with pytest.raises(InvalidInputError) as sink_error:
            call()
        with pytest.raises(InvalidInputError) as push_error:
            twin_call()
        assert (
            str(sink_error.value)
            .replace("push_into()", "push()")
            .replace("push_bytes_into()", "push_bytes()")
            == str(push_error.value)
            and out == before
        )
        same_state()
    enc.push_bytes_into(b"\xe2\x82", out)
    twin.push_bytes(b"\xe2\x82")
    before = list(out)
    with pytest.raises(InvalidInputError, match="incomplete UTF-8") as sink_error:
        enc.push_into("x", out)
    with pytest.raises(InvalidInputError) as push_error:
        twin.push("x")
    assert str(sink_error.value) == str(push_error.value) and out == before
    with pytest.raises(InvalidInputError, match="inside a UTF-8 character"):
        enc.finish_into(out)
    with pytest.raises(InvalidInputError):
        twin.finish()
    assert out == before
    same_state()
    # The stream goes on after every error, as the push path's does.
    enc.push_bytes_into(b"\xac end", out)
    enc.finish_into(out)
    assert out[1:] == tok.encode("Hello w more \u20ac end", allowed_special=allowed)
