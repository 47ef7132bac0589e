"""Streaming encode with recognized special/added spellings, for every rule the Rust
path runs (pretokens, whitespace, metaspace, specials): the native push path against
the Python reference push by push, and both against one-shot ``encode``, for every
chunking of real multilingual text with spellings (whole, split, or only begun) in it,
on real tokenizer files."""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder

from . import families
from .families import family, peer_data, texts
from .test_streaming_encode import _byte_level, _tok
from .test_streaming_native import consistent

# One spelling is a prefix of another: "<|end|>" is decided only when the next
# character shows that "<|end|>!" is not coming.
NESTED = {"<|endoftext|>": 100257, "<|end|>": 100300, "<|end|>!": 100301, "<|im_start|>": 100264}


def _nested():
    import tokenpact as tp

    return tp.Tokenizer.from_tiktoken(
        peer_data.cl100k_tiktoken(), pattern="gpt4", special_tokens=NESTED
    )


def _llama_with_added_token():
    """Llama 3.2 plus a non-special added token: recognized only when allowed."""
    data = json.loads(peer_data.llama3_hf_json().read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    data["added_tokens"].append(
        {
            "id": 128257,
            "content": "<think>",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": False,
        }
    )
    return families._load(data)


EXTRA = {"cl100k-nested": _nested, "llama3.2-added": _llama_with_added_token}
_extra: dict[str, object] = {}


def _get(name: str):
    if name in EXTRA:
        if name not in _extra:
            _extra[name] = EXTRA[name]()
        return _extra[name]
    return _tok(name)


# family -> the rule when spellings are recognized; native: the Rust path runs it.
RULES = {
    "llama3.2": ("pretokens", True),
    "llama3.2-added": ("pretokens", True),
    "cl100k-ranks-o200k": ("pretokens", True),
    "cl100k-nested": ("pretokens", True),
    "minilm-wordpiece": ("whitespace", True),
    "unigram-metaspace": ("metaspace", True),
    "unigram-metaspace-never": ("metaspace", True),
    "unigram-metaspace-first": ("metaspace", True),
    "mistral-hf-bytefallback": ("specials", True),
}
# SentencePiece .model files: the Python reference runs `specials`; the native path
# runs the stronger `sentencepiece` rule (tests/runtime/test_streaming_sentencepiece.py).


def _spellings(tok) -> list[str]:
    return sorted({**tok.added_tokens, **tok.special_tokens})


def _allowed(tok, data):
    choice = data.draw(st.sampled_from(["all", "none", "some"]), label="allowed")
    if choice == "all":
        return "all"
    if choice == "none":
        return ()
    rng = random.Random(data.draw(st.integers(0, 2**32), label="allowed-seed"))
    names = _spellings(tok)
    return tuple(rng.sample(names, min(3, len(names))))


def _text(tok, allowed, data) -> str:
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    text = text[: data.draw(st.integers(0, 900), label="length")]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    pool = list(_spellings(tok)) if allowed in ("all", ()) else list(allowed)
    pool = [s for s in pool if s] or _spellings(tok)
    for _ in range(rng.randint(0, 6)):
        s = rng.choice(pool)
        # Whole spellings, spellings only begun, and spellings glued to each other.
        piece = s if rng.random() < 0.7 else s[: rng.randint(1, len(s))]
        at = rng.randint(0, len(text))
        text = text[:at] + piece * rng.randint(1, 2) + text[at:]
    return text


def _chunks(payload, sizes):
    at, i = 0, 0
    while at < len(payload):
        yield payload[at : at + sizes[i % len(sizes)]]
        at, i = at + sizes[i % len(sizes)], i + 1


@pytest.mark.parametrize("name", sorted(RULES))
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40, deadline=None)
@given(data=st.data())
def test_stream_with_spellings_matches_reference_and_encode(name: str, data) -> None:
    tok = _get(name)
    rule, native_rule = RULES[name]
    allowed = _allowed(tok, data)
    text = _text(tok, allowed, data)
    step = data.draw(st.sampled_from([0, 0, 1, 100, 256]), label="scan_step")
    native = StreamingEncoder(tok, allowed_special=allowed, scan_step=step)
    reference = StreamingEncoder(tok, allowed_special=allowed, native=False, scan_step=step)
    if allowed:
        assert native.rule == reference.rule == rule
        assert (native._core is not None) == native_rule
    as_bytes = data.draw(st.booleans(), label="bytes")
    payload = text.encode() if as_bytes else text
    sizes = data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=5), label="sizes")
    expected = tok.encode(text, allowed_special=allowed)
    for i, chunk in enumerate(_chunks(payload, sizes)):
        if as_bytes:
            got, want = native.push_bytes(chunk), reference.push_bytes(chunk)  # type: ignore[arg-type]
        else:
            got, want = native.push(chunk), reference.push(chunk)  # type: ignore[arg-type]
        if rule == "pretokens":
            # Native encodes each final pre-token as scanned: it may commit more than
            # the reference, which encodes the prefix alone (test_streaming_native.py).
            consistent(native, reference, expected)
            continue
        assert got == want
        assert native.pending_text == reference.pending_text
        if i % 4 == 0:
            assert native.provisional() == reference.provisional()
    native.finish(), reference.finish()
    assert native.committed == reference.committed == expected


@pytest.mark.parametrize("name", ["llama3.2", "minilm-wordpiece", "mistral-hf-bytefallback"])
@pytest.mark.parametrize("native", [True, False])
def test_a_decided_spelling_commits_before_finish(name: str, native: bool) -> None:
    """A special token is a hard boundary once all of it has arrived: its ID and the
    text before it are committed by the push that completes it."""
    tok = _get(name)
    special = max(tok.special_tokens, key=len)
    enc = StreamingEncoder(tok, allowed_special="all", native=native, scan_step=0)
    text = "Grüße aus Köln, 東京 and more" + special
    committed = []
    for i in range(0, len(text), 5):
        committed += enc.push(text[i : i + 5])
    assert committed == tok.encode(text, allowed_special="all")
    assert committed[-1] == tok.special_tokens[special]
    assert enc.finish() == []


@pytest.mark.parametrize("native", [True, False])
def test_a_spelling_that_may_grow_waits(native: bool) -> None:
    tok = _nested()
    enc = StreamingEncoder(tok, allowed_special="all", native=native, scan_step=0)
    assert 100300 not in enc.push("hello <|end|>")  # "<|end|>!" may still come
    assert enc.pending_text.endswith("<|end|>")
    assert enc.push("?")[-1] == 100300  # decided: "?" rules the longer spelling out
    enc.reset()
    ids = enc.push("a <|end|>") + enc.push("! b") + enc.finish()
    assert ids == tok.encode("a <|end|>! b", allowed_special="all")
    assert 100301 in ids


@pytest.mark.parametrize("native", [True, False])
def test_metaspace_first_scheme_does_not_commit_past_a_spelling(native: bool) -> None:
    tok = _get("unigram-metaspace-first")
    enc = StreamingEncoder(tok, allowed_special="all", native=native, scan_step=0)
    committed = enc.push("one two</s>three four")
    # Only text before the spelling: the tail after it must not get a second prefix.
    assert tok.special_tokens["</s>"] not in committed
    assert committed + enc.finish() == tok.encode("one two</s>three four", allowed_special="all")


@pytest.mark.parametrize("native", [True, False])
def test_added_token_not_allowed_is_ordinary_text(native: bool) -> None:
    """Regression: a non-special added token that encode() does not recognize (not
    allowed) is text, so it is no boundary: '<think>b' pre-tokenizes as '<', 'think',
    '>b' in one piece of text."""
    tok = _get("llama3.2-added")
    assert "<think>" in tok.added_tokens
    for allowed in ((), ("<think>",)):
        text = "a<think>b c"
        for cut in range(1, len(text)):
            enc = StreamingEncoder(tok, allowed_special=allowed, native=native)
            ids = enc.push(text[:cut]) + enc.push(text[cut:]) + enc.finish()
            assert ids == tok.encode(text, allowed_special=allowed)


def test_specials_rule_needs_recognized_spellings() -> None:
    """Families without a proven cut inside text hold everything unless spellings are
    recognized; with them, only the spellings cut."""
    tok = _get("mistral-sp-v3")
    assert StreamingEncoder(tok, native=False).rule == "hold"
    assert StreamingEncoder(tok, allowed_special="all", native=False).rule == "specials"
    # Natively, a BPE .model has a proven cut inside a sentence.
    assert StreamingEncoder(tok).rule == "sentencepiece"
    assert family("minilm-wordpiece") is not None  # loaded for the rules above


def test_byte_level_helper_still_streams() -> None:
    tok = _byte_level("gpt4")
    enc = StreamingEncoder(tok, allowed_special="all", scan_step=0)
    assert enc.rule == "pretokens" and enc._core is not None
    assert enc.push("Hello<|endoftext|> world") == tok.encode(
        "Hello<|endoftext|>", allowed_special="all"
    )


@pytest.mark.parametrize("native", [True, False])
def test_scan_step_amortizes_without_changing_ids(native: bool) -> None:
    """With the default scan_step (256), 64-byte pushes scan every fourth push: commits
    come later, at most 255 bytes past what the eager encoder (scan_step=0) had held
    back at the last scan, and the IDs do not change."""
    tok = _get("llama3.2")
    text = "\n".join(texts()[:30])
    data = text.encode()
    eager = StreamingEncoder(tok, native=native, scan_step=0)
    lazy = StreamingEncoder(tok, native=native)
    assert lazy.scan_step == 256
    nonempty, eager_held = 0, 0
    for i in range(0, len(data), 64):
        eager.push_bytes(data[i : i + 64])
        nonempty += bool(lazy.push_bytes(data[i : i + 64]))
        assert eager.committed[: len(lazy.committed)] == lazy.committed
        eager_held = max(eager_held, len(eager.pending_text.encode()))
        # The lag: text eager committed that lazy still holds back.
        lag = len(lazy.pending_text.encode()) - len(eager.pending_text.encode())
        assert 0 <= lag < 256 + eager_held
    assert nonempty <= len(data) // 256 + 1
    early_lazy, early_eager = list(lazy.committed), list(eager.committed)
    assert len(early_lazy) <= len(early_eager)
    assert early_lazy + lazy.finish() == early_eager + eager.finish() == tok.encode(text)
    assert lazy.committed == tok.encode(text)


def test_scan_step_must_be_a_byte_count() -> None:
    from tokenpact.errors import ConfigError

    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="scan_step"):
            StreamingEncoder(_get("llama3.2"), scan_step=bad)  # type: ignore[arg-type]


def test_streams_share_one_matcher_per_spelling_set() -> None:
    """The native matcher is built once per tokenizer and set of spellings: streams
    with other spellings get their own, interleaved streams stay independent, and the
    cache entry goes with the tokenizer."""
    import gc
    import weakref

    from tokenpact.runtime import stream_encode

    tok = _nested()
    one_spelling = {"<|end|>"}
    streams = [
        (StreamingEncoder(tok, allowed_special="all", scan_step=0), "all"),
        (StreamingEncoder(tok, allowed_special=one_spelling, scan_step=0), one_spelling),
        (StreamingEncoder(tok, allowed_special="all", scan_step=0), "all"),
    ]
    assert len(stream_encode._SPELLINGS[tok]) == 2
    text = "x <|end|>! y <|end|>? <|endoftext|> z <|im_start|>"
    got: list[list[int]] = [[] for _ in streams]
    for i in range(0, len(text), 3):  # interleaved pushes
        for (enc, _), ids in zip(streams, got, strict=True):
            ids += enc.push(text[i : i + 3])
    for (enc, allowed), ids in zip(streams, got, strict=True):
        assert ids + enc.finish() == tok.encode(text, allowed_special=allowed)
    assert got[0] != got[1]  # the single-spelling stream reads "<|endoftext|>" as text
    ref = weakref.ref(tok)
    del tok, streams, enc
    gc.collect()
    assert ref() is None  # the cache holds no strong reference to the tokenizer


def test_matcher_cache_is_bounded_per_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests choose the allowed spellings, so the sets kept per tokenizer are capped
    (oldest dropped first), and a dropped set still streams correctly when it returns."""
    from tokenpact.runtime import stream_encode

    tok = _nested()
    spellings = sorted(tok.special_tokens)
    sets = [{a, b} for a in spellings for b in spellings if a < b]
    sets += [{a} for a in spellings]
    assert len(sets) > 3
    monkeypatch.setattr(stream_encode, "_SETS_PER_TOKENIZER", 3)
    for allowed in sets:
        StreamingEncoder(tok, allowed_special=allowed, scan_step=0)
        assert len(stream_encode._SPELLINGS[tok]) <= 3
    text = "a <|end|> b <|endoftext|> c <|im_start|>"
    enc = StreamingEncoder(tok, allowed_special=sets[0], scan_step=0)
    assert enc.push(text) + enc.finish() == tok.encode(text, allowed_special=sets[0])
