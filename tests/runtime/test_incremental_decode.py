"""IncrementalDecoder: concat(push results) + finish() == tok.decode(all IDs), for every
family and decoder chain, every split of the IDs, and both error policies."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.errors import DecodeError, UnknownTokenError
from tokenpact.runtime import IncrementalDecoder

from .families import FAMILIES, family, texts

BYTE_BOUNDED = ("llama3.2", "deepseek-v3", "mistral-sp-v1", "mistral-sp-v3", "mistral-sp-v7")


def _stream(tok, ids, sizes, **options) -> tuple[str, list[int]]:
    dec = IncrementalDecoder(tok, **options)
    out, held, at, i = [], [], 0, 0
    while at < len(ids):
        n = sizes[i % len(sizes)]
        out.append(dec.push(ids[at : at + n]))
        held.append(dec.held_bytes)
        at, i = at + n, i + 1
    out.append(dec.finish())
    return "".join(out), held


def _batch(tok, ids, errors):
    try:
        return tok.decode(ids, errors=errors)
    except DecodeError:
        return DecodeError


def _ids_for(tok, data) -> list[int]:
    """Real text encoded, sometimes with random IDs (specials, bytes, stray pieces)
    spliced in; random IDs hit invalid UTF-8 and byte-fallback runs."""
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    start = data.draw(st.integers(0, max(0, len(text) - 1)))
    ids = tok.encode(text[start : start + data.draw(st.integers(0, 400))])
    if data.draw(st.booleans(), label="noise"):
        rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
        for _ in range(rng.randint(1, 12)):
            ids.insert(rng.randint(0, len(ids)), rng.randrange(tok.vocab_size))
    return ids


@pytest.mark.parametrize("name", sorted(FAMILIES))
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(data=st.data())
def test_stream_equals_batch_decode(name: str, data) -> None:
    tok = family(name)
    ids = _ids_for(tok, data)
    sizes = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=6), label="sizes")
    for errors in ("replace", "strict"):
        expected = _batch(tok, ids, errors)
        if expected is DecodeError:
            with pytest.raises(DecodeError):
                _stream(tok, ids, sizes, errors=errors)
            continue
        text, held = _stream(tok, ids, sizes, errors=errors)
        assert text == expected
        if name in BYTE_BOUNDED:
            assert max(held, default=0) <= 3  # only an incomplete UTF-8 character waits


@pytest.mark.parametrize("name", ["llama3.2", "mistral-sp-v3", "minilm-wordpiece"])
@settings(max_examples=30)
@given(data=st.data())
def test_skip_special_tokens(name: str, data) -> None:
    tok = family(name)
    specials = sorted(tok.special_tokens.values())
    ids = _ids_for(tok, data)
    rng = random.Random(len(ids))
    for _ in range(4):
        ids.insert(rng.randint(0, len(ids)), rng.choice(specials))
    kept = [i for i in ids if i not in set(specials)]
    text, _ = _stream(tok, ids, [3], errors="replace", skip_special_tokens=True)
    assert text == tok.decode(kept, errors="replace")


def test_split_euro_waits_for_its_last_byte() -> None:
    """Seed 0x0D: e2 then 82 ac; no U+FFFD for the partial character."""
    tok = family("llama3.2")
    ids = [tok.token_id(bytes([b])) for b in "€".encode()]
    dec = IncrementalDecoder(tok, errors="strict")
    assert [dec.push([i]) for i in ids] == ["", "", "€"]
    assert dec.finish() == ""


def test_literal_replacement_character_is_emitted_when_complete() -> None:
    """A U+FFFD the model really produced is text, not a pending error (the public
    failure: streams that print or hold U+FFFD forever)."""
    for name in ("llama3.2", "mistral-sp-v3"):
        tok = family(name)
        ids = tok.encode("a\ufffdb")
        dec = IncrementalDecoder(tok, errors="strict")
        out = ""
        for i in ids:
            out += dec.push([i])
            if "\ufffd" in tok.decode(ids[: ids.index(i) + 1], errors="replace"):
                break
        assert "\ufffd" in out
        assert dec.held_bytes == 0


def test_truncated_character_at_the_end() -> None:
    tok = family("llama3.2")
    e2 = tok.token_id(b"\xe2")
    dec = IncrementalDecoder(tok, errors="replace")
    assert dec.push([e2]) == ""
    assert dec.finish() == "\ufffd"
    strict = IncrementalDecoder(tok, errors="strict")
    assert strict.push([e2]) == ""
    with pytest.raises(DecodeError, match="not valid UTF-8"):
        strict.finish()


def test_invalid_bytes_raise_as_soon_as_proven() -> None:
    tok = family("llama3.2")
    dec = IncrementalDecoder(tok, errors="strict")
    with pytest.raises(DecodeError):
        dec.push([tok.token_id(b"\xe2"), tok.token_id(b"A")])


def test_numpy_input_equals_list_input() -> None:
    import numpy as np

    tok = family("llama3.2")
    ids = tok.encode("naïve café 日本語 😀")
    assert IncrementalDecoder(tok).push(np.asarray(ids)) == IncrementalDecoder(tok).push(ids)
    with pytest.raises(UnknownTokenError):
        IncrementalDecoder(tok).push(np.asarray([-1]))


def test_unknown_id_is_a_typed_error() -> None:
    tok = family("llama3.2")
    for bad in ([tok.vocab_size + 5], [-1], ["x"]):
        with pytest.raises(UnknownTokenError):
            IncrementalDecoder(tok).push(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["llama3.2", "mistral-sp-v3", "mistral-hf-bytefallback"])
def test_long_stream_keeps_bounded_state(name: str) -> None:
    """100k tokens: the decoder never accumulates a window (flat per-token state)."""
    tok = family(name)
    ids = tok.encode(" ".join(texts()[:200]))
    ids = (ids * (100_000 // max(1, len(ids)) + 1))[:100_000]
    dec = IncrementalDecoder(tok)
    out, peak = [], 0
    for i in range(0, len(ids), 7):
        out.append(dec.push(ids[i : i + 7]))
        peak = max(peak, dec.held_bytes)
    out.append(dec.finish())
    assert "".join(out) == tok.decode(ids, errors="replace")
    assert peak <= 64
