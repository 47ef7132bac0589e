"""Streaming encode behind a Unicode normalizer (the ``normalized`` rule): Qwen's and
MiniMax's NFC over byte-level BPE, and NFKC on the same vocabulary.

Differential: pushes at random split points (str chunks, raw UTF-8 split inside code
points) give one-shot ``encode``; after every push the committed IDs plus the
provisional tail are ``encode`` of the text received so far (what is committed is final
for every continuation, the empty one too). Texts mix real multilingual text with
combining marks (composing, non-composing, out of canonical order), Hangul jamo that
compose across chunks, compatibility characters, digits, whitespace runs and added
spellings. SentencePiece's ``nmt_nfkc`` models stream by the ``sentencepiece`` rule
(``test_streaming_sentencepiece.py``).

The normalization-boundary predicate (``stream_normalize.stable_starter``, from
``unicodedata``) is checked against the engine's own normalizer: splitting any text
right before a stable character normalizes the same as the whole.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.runtime import StreamingEncoder
from tokenpact.runtime.stream_normalize import stable_starter

from .families import texts
from .stream_checks import check_stream

try:
    from conformance.shipped_files import shipped_tokenizer_jsons
except ImportError:  # pragma: no cover - imported as tests.runtime
    from tests.conformance.shipped_files import shipped_tokenizer_jsons  # type: ignore[no-redef]

# Combining marks (composing, blocked, reordered), Hangul jamo (L, V, T and a
# precomposed LV that takes a T), compatibility characters (ligature, squared unit,
# fullwidth, superscript, Ohm, Angstrom), digits and whitespace the pre-tokenizer
# looks ahead on, and added spellings.
EDGES = [
    "e\u0301",
    "a\u0323\u0302",
    "a\u0302\u0323",
    "\u0301\u0301",
    "A\u030a\u0301",
    "\u1100\u1161\u11a8",
    "\uac00\u11a8",
    "\u1100",
    "\u1161",
    "\u11a8",
    "\ufb01",
    "\u338f",
    "\uff21\uff22",
    "x\u00b2",
    "\u2126",
    "\u212b",
    "\u0958",
    "\u0f73",
    "123456",
    "  ",
    "\n\n",
    " \r\n",
    "'s",
    "<think>",
    "<|im_end|>",
    "<|im_",
]
QWEN_LIKE = ["qwen-3", "minimax"]


@functools.cache
def _shipped(name: str) -> tp.Tokenizer:
    return tp.Tokenizer.load(shipped_tokenizer_jsons()[name])


@functools.cache
def _with_form(form: str) -> tp.Tokenizer:
    """Qwen 3's tokenizer.json with its NFC normalizer replaced by ``form``."""
    import tempfile
    from pathlib import Path

    data = json.loads(shipped_tokenizer_jsons()["qwen-3"].read_text("utf-8"))
    data = copy.deepcopy(data)
    data["normalizer"] = {"type": form}
    path = Path(tempfile.mkdtemp(prefix="tp-nfkc-")) / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return tp.Tokenizer.load(path)


def _tok(name: str) -> tp.Tokenizer:
    return (
        _with_form(name.removeprefix("qwen-3-")) if name.startswith("qwen-3-") else _shipped(name)
    )


def _text(data) -> str:
    corpus = texts()
    text = corpus[data.draw(st.integers(0, len(corpus) - 1), label="text")]
    text = text[: data.draw(st.integers(0, 200), label="length")]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    for _ in range(rng.randint(1, 10)):
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(EDGES) * rng.randint(1, 2) + text[at:]
    return text


@pytest.mark.parametrize("name", [*QWEN_LIKE, "qwen-3-NFKC", "qwen-3-NFD", "qwen-3-NFKD"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=12, deadline=None)
@given(data=st.data())
def test_stream_equals_one_shot_encode(name: str, data) -> None:
    check_stream(
        _tok(name),
        data,
        _text(data),
        rule="normalized",
        scan_steps=[0, 0, 1, 64],
        max_chunk=9,
        draw_native=True,
    )


@pytest.mark.parametrize("name", QWEN_LIKE)
def test_commits_while_streaming_and_the_lag_stays_short(name: str) -> None:
    """Real text pushed 16 characters at a time (scan on every push): IDs commit long
    before the end, and the held text stays within a few pre-tokens (the bound: the
    pre-tokens the scanner cannot prove yet plus any trailing combining sequence)."""
    tok = _tok(name)
    text = " ".join(t for t in texts()[:40] if t)[:6000] + " e\u0301\u1100\u1161\u11a8 \ufb01"
    enc = StreamingEncoder(tok, scan_step=0)
    out: list[int] = []
    lags = []
    for at in range(0, len(text), 16):
        out += enc.push(text[at : at + 16])
        lags.append(len(enc.pending_text))
    assert len(out) > 0.9 * len(tok.encode(text))
    assert max(lags) < 200, max(lags)
    out += enc.finish()
    assert out == tok.encode(text)


@pytest.mark.parametrize("name", ["qwen-3", "qwen-3-NFKC"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=20, deadline=None)
@given(data=st.data())
def test_native_path_matches_reference_push_by_push(name: str, data) -> None:
    """The Rust rule (``src/runtime/stream_normalize.rs``) commits exactly what the
    Python reference commits, after every push (on characters this Python's Unicode
    version knows)."""
    tok = _tok(name)
    text = _text(data)
    allowed = data.draw(st.sampled_from(["all", ()]), label="allowed")
    native = StreamingEncoder(tok, allowed_special=allowed, scan_step=0)
    reference = StreamingEncoder(tok, allowed_special=allowed, scan_step=0, native=False)
    assert native._core is not None and reference._core is None
    sizes = data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=6), label="sizes")
    # A character this Python's Unicode version does not know is no stable character for
    # the reference; the crate's newer tables may know it as one (the two may then cut
    # at different places, each a prefix of one-shot encode).
    known = all(unicodedata.category(c) != "Cn" for c in text)
    at, i = 0, 0
    while at < len(text):
        chunk = text[at : at + sizes[i % len(sizes)]]
        native.push(chunk)
        reference.push(chunk)
        if known:
            assert native.committed == reference.committed, at
        else:  # both are prefixes of encode(text)
            a, b = sorted((native.committed, reference.committed), key=len)
            assert b[: len(a)] == a
        at, i = at + len(chunk), i + 1
    whole = list(native.committed) + native.finish()
    assert (
        whole
        == list(reference.committed) + reference.finish()
        == tok.encode(text, allowed_special=allowed)
    )


def test_jamo_and_marks_arriving_later_change_nothing_committed() -> None:
    """A Hangul L jamo, then its vowel and final in later pushes (they compose into one
    syllable); a base letter, then its accent: nothing before them is committed with the
    wrong normalization."""
    tok = _tok("qwen-3")
    for native in (True, False):
        for parts in (["abc def \u1100", "\u1161", "\u11a8 ghi"], ["hello cafe", "\u0301", " ok"]):
            enc = StreamingEncoder(tok, scan_step=0, native=native)
            out = enc.push(parts[0])
            # The first push commits "abc" / "hello", never the last word.
            assert 0 < len(out) < len(tok.encode(parts[0]))
            for part in parts[1:]:
                out += enc.push(part)
            assert out + enc.finish() == tok.encode("".join(parts))


@pytest.mark.parametrize("form", ["NFC", "NFKC", "NFD", "NFKD"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=80, deadline=None)
@given(
    left=st.text(max_size=12),
    right=st.text(max_size=12),
    start=st.sampled_from([chr(c) for c in (0x41, 0xE9, 0xAC00, 0x1100, 0x4E00, 0xFB01, 0x2126)])
    | st.characters(),
)
def test_stable_characters_split_the_engine_normalization(
    form: str, left: str, right: str, start: str
) -> None:
    """``stable_starter`` against the Rust normalizer the engine runs: before a stable
    character the normalization of the whole is the two parts' normalizations."""
    if not stable_starter(start, form):  # type: ignore[arg-type]
        return
    tok = _with_form(form)
    whole = tok.normalize(left + start + right)
    assert whole == tok.normalize(left) + tok.normalize(start + right)


def test_predicate_rejects_what_composes_or_reorders() -> None:
    for ch in ("\u0301", "\u1161", "\u11a8", "\u0323", "\u0f73"):
        assert not stable_starter(ch, "NFC")
    assert not stable_starter("\ufb01", "NFKC") and stable_starter("\ufb01", "NFC")
    for ch in ("a", "\u00e9", "\uac00", "\u1100", "\u4e00", " "):
        assert stable_starter(ch, "NFC")


@pytest.mark.parametrize("native", [True, False])
def test_the_constructor_derives_the_normalized_proof_once(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit rule and the scanner that proves it come from one derivation (it read
    the pre-tokenizer steps twice per encoder)."""
    from tokenpact.runtime import stream_normalize

    tok = _tok("qwen-3")
    derived: list[object] = []
    real = stream_normalize.proof_pattern

    def counting(steps):  # type: ignore[no-untyped-def]
        derived.append(steps)
        return real(steps)

    monkeypatch.setattr(stream_normalize, "proof_pattern", counting)
    enc = StreamingEncoder(tok, scan_step=0, native=native)
    assert enc.rule == "normalized"
    assert len(derived) == 1
    assert enc.push("hello cafe\u0301 ok") + enc.finish() == tok.encode("hello cafe\u0301 ok")
