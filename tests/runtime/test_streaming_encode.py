"""StreamingEncoder: concat(push results) + finish() == tok.encode(text) for every
chunking (str chunks and raw bytes split inside code points), every family, special
spellings split across chunks; the seed's euro and cancellation cases."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.errors import InvalidInputError
from tokenpact.runtime import StreamingEncoder

from . import families
from .families import FAMILIES, family, peer_data, texts
from .seed_vocab import input_vocab


def _byte_level(pattern: str):
    import tokenpact as tp

    return tp.Tokenizer.from_tiktoken(
        peer_data.cl100k_tiktoken(), pattern=pattern, special_tokens=peer_data.CL100K_SPECIAL_TOKENS
    )


def _metaspace(scheme: str):
    def load():
        data = copy.deepcopy(families._trained_unigram())
        data["pre_tokenizer"] = {
            "type": "Metaspace",
            "replacement": "\u2581",
            "prepend_scheme": scheme,
            "split": True,
        }
        return families._load(data)

    return load


ENCODE_FAMILIES = {
    "unigram-metaspace-first": _metaspace("first"),
    "unigram-metaspace-never": _metaspace("never"),
    **{
        f"cl100k-ranks-{p}": (lambda p=p: _byte_level(p))
        for p in ("gpt4", "gpt2", "o200k", "llama3")
    },
    **{
        name: (lambda name=name: family(name))
        for name in FAMILIES
        if not name.startswith("unigram-")
    },
    "unigram-metaspace": lambda: family("unigram-metaspace"),
}
_loaded: dict[str, object] = {}


def _tok(name: str):
    if name not in _loaded:
        _loaded[name] = ENCODE_FAMILIES[name]()
    return _loaded[name]


def _stream(tok, text: str, sizes: list[int], *, as_bytes: bool, allowed="all"):
    enc = StreamingEncoder(tok, allowed_special=allowed)
    data = text.encode() if as_bytes else text
    out: list[int] = []
    at, i = 0, 0
    while at < len(data):
        n = sizes[i % len(sizes)]
        chunk = data[at : at + n]
        out += enc.push_bytes(chunk) if as_bytes else enc.push(chunk)  # type: ignore[arg-type]
        # Provisional IDs are what finishing now would give.
        assert enc.committed == out
        at, i = at + n, i + 1
    committed_before_finish = len(out)
    out += enc.finish()
    return out, committed_before_finish


def _text(tok, data) -> str:
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    text = text[: data.draw(st.integers(0, 1500), label="length")]
    if data.draw(st.booleans(), label="specials") and tok.special_tokens:
        rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
        spellings = sorted(tok.special_tokens)
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(spellings) + text[at:]
    return text


@pytest.mark.parametrize("name", sorted(ENCODE_FAMILIES))
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(data=st.data())
def test_stream_equals_one_shot_encode(name: str, data) -> None:
    tok = _tok(name)
    text = _text(tok, data)
    sizes = data.draw(st.lists(st.integers(1, 70), min_size=1, max_size=6), label="sizes")
    as_bytes = data.draw(st.booleans(), label="bytes")
    allowed = data.draw(st.sampled_from(["all", ()]), label="allowed")
    got, _ = _stream(tok, text, sizes, as_bytes=as_bytes, allowed=allowed)
    assert got == tok.encode(text, allowed_special=allowed)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("cl100k-ranks-gpt4", "pretokens"),
        ("llama3.2", "pretokens"),
        ("cl100k-ranks-o200k", "pretokens"),
        ("minilm-wordpiece", "whitespace"),
        ("unigram-metaspace", "metaspace"),
    ],
)
def test_commits_while_streaming(name: str, rule: str) -> None:
    """The pre-token rule really streams: on real text most IDs are committed before
    the end, and what is held is only the undecided tail."""
    tok = _tok(name)
    assert StreamingEncoder(tok).rule == rule
    text = "\n".join(texts()[:60])
    ids, early = _stream(tok, text, [64], as_bytes=True)
    assert ids == tok.encode(text, allowed_special="all")
    assert early > 0.9 * len(ids)


def test_seed_euro_split_into_three_chunks() -> None:
    """0x07/0x0D: e2 | 82 | ac; nothing is committed from a partial character, and the
    IDs are the canonical [260, 172], never [226, 130, 172]."""
    enc = StreamingEncoder(input_vocab(), scan_step=0)
    assert [enc.push_bytes(b) for b in (b"\xe2", b"\x82")] == [[], []]
    assert enc.provisional() == [] and enc.committed == []
    assert enc.push_bytes(b"\xac") == []
    assert enc.provisional() == [260, 172]
    assert enc.finish() == [260, 172]


def test_seed_cancellation_after_two_bytes_commits_nothing() -> None:
    enc = StreamingEncoder(input_vocab(), scan_step=0)
    enc.push_bytes(b"\xe2")
    enc.push_bytes(b"\x82")
    enc.reset()
    assert (enc.committed, enc.pending_text, enc.provisional()) == ([], "", [])
    assert enc.push("abc") == [] and enc.finish() == [258]  # a | b | c -> [258]


def test_abc_stays_provisional_until_final() -> None:
    """0x07: after a, provisional [97]; after b, [256]; after c, [258]."""
    enc = StreamingEncoder(input_vocab(), scan_step=0)
    seen = []
    for ch in "abc":
        assert enc.push(ch) == []
        seen.append(enc.provisional())
    assert seen == [[97], [256], [258]]
    assert enc.push(" x") == [258]  # the space proves the pre-token 'abc' is complete


def test_special_spelling_split_across_chunks() -> None:
    tok = _tok("llama3.2")
    text = "Hello<|eot_id|> world"
    for cut in range(1, len(text)):
        enc = StreamingEncoder(tok, allowed_special="all")
        ids = enc.push(text[:cut]) + enc.push(text[cut:]) + enc.finish()
        assert ids == tok.encode(text, allowed_special="all")
    # Not allowed: the spelling is ordinary text, exactly as encode() treats it.
    enc = StreamingEncoder(tok)
    assert enc.push(text) + enc.finish() == tok.encode(text)


def test_hostile_run_without_boundary() -> None:
    tok = _tok("cl100k-ranks-gpt4")
    enc = StreamingEncoder(tok)
    run = "a" * 300_000
    out = []
    for i in range(0, len(run), 64):
        out += enc.push(run[i : i + 64])
    assert out == []  # a letter run is never final before it ends
    assert out + enc.finish() == tok.encode(run)


def test_invalid_utf8_is_a_typed_error() -> None:
    enc = StreamingEncoder(input_vocab())
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        enc.push_bytes(b"\xff")
    enc = StreamingEncoder(input_vocab())
    enc.push_bytes(b"\xe2")
    with pytest.raises(InvalidInputError, match="inside a UTF-8 character"):
        enc.finish()


def test_lone_surrogate_is_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="surrogate"):
        StreamingEncoder(input_vocab()).push("a\ud800")
