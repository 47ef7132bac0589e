"""The resumed normalization of SentencePiece streams (``src/sentencepiece/normalizer/
resume.rs``): a scan normalizes only the bytes after the normalizer steps it already
proved final, so the boundaries where it pauses and resumes are what must be exact.

Texts put the characters where a normalizer step spans more than one byte or depends on
what follows (runs of spaces and tabs, the ideographic space that NFKC maps to a space,
full-width and half-width forms, combining marks that compose, conjoining jamo,
characters whose NFKC form is several characters, invisible characters a rule deletes, a
literal ``▁``) into real multilingual text, and each text is streamed split at **every
byte offset** (two pushes, each scanning): the first push pauses the normalizer at every
possible place, the second resumes it. Property: ``push(a) + push(b) + finish() ==
encode(a + b)``, and after the first push ``committed + provisional() == encode(a)``
(the provisional tail resumes from the same state). A third test splits at two drawn
offsets. Models: Unigram models trained here by SentencePiece (``nmt_nfkc``; the same
with every character of the boundary strings and their normalized forms in the
vocabulary; identity with spaces kept, byte fallback and user-defined pieces;
``nmt_nfkc`` without the dummy prefix), a BPE model with the ``nmt_nfkc`` charsmap,
and Mistral's released v3 ``.model`` (BPE, identity, spaces kept).
"""

from __future__ import annotations

import functools
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder

from .families import family, texts
from .test_streaming_sentencepiece import _trained as _trained_bpe
from .test_streaming_unigram import _trained as _trained_unigram
from .test_streaming_unigram import gettext_documents

MODELS = [
    "unigram-nfkc",
    "unigram-nfkc-boundary",
    "unigram-identity-keep-spaces",
    "unigram-nfkc-no-prefix",
    "bpe-nfkc",
    "mistral-sp-v3",
]

# Where a normalizer step is longer than a byte, or depends on the bytes after it.
BOUNDARY = [
    " ",
    "  ",
    "   ",
    "\t",
    " \t ",
    "\n",
    "\u3000",  # ideographic space: NFKC writes a space (a rule, not a plain space)
    " \u3000 ",
    "\uff28\uff45\uff4c\uff4c\uff4f",  # full-width "Hello"
    "\uff11\uff12\uff13",  # full-width digits
    "\uff76\uff80\uff76\uff85\uff9e",  # half-width katakana, a voiced mark that composes
    "e\u0301",  # e + combining acute: composes to é
    "a\u0308\u0304",  # two combining marks
    "\u1100\u1161\u11a8",  # conjoining jamo: compose to one syllable
    "\ufb01",  # ligature fi: two characters
    "\u3392",  # square MHz: three characters
    "\u00bd",  # one half: 1⁄2
    "\u2460",  # circled one
    "\u337f",  # square corporation: four characters
    "\ufdfa",  # an Arabic ligature NFKC spells out in 18 characters
    "\u2026",  # ellipsis: three dots
    "\u200b",  # zero-width space
    "\u00ad",  # soft hyphen
    "\ufeff",  # zero-width no-break space
    "\U0001d7aa\u0314\u0301\u0345",  # a 10-byte nmt_nfkc rule (Greek with three marks)
    "\U0001611e\U0001611e\U0001611f",  # the longest nmt_nfkc rules (12 bytes, Gurung Khema)
    "\U0001611e\U00016129\U0001611f",
    "\U0001611e\U0001611e",  # their prefixes: a shorter rule or none
    "\u2581",  # a literal ▁
    "\u2581 ",
    "\ufffd",
]


@functools.cache
def _boundary_model():
    """A Unigram ``nmt_nfkc`` model whose vocabulary holds every character the boundary
    strings, their prefixes and their normalized forms consist of (SentencePiece's
    ``required_chars``): a step normalized wrongly then changes the IDs instead of
    vanishing into a run of unknown pieces (exotic rules such as the 12-byte ones would
    otherwise only ever meet unknown characters)."""
    spm = pytest.importorskip("sentencepiece")
    import tokenpact as tp

    reference = _trained_unigram("unigram-nfkc")
    chars: set[str] = set()
    for mark in BOUNDARY:
        for end in range(1, len(mark) + 1):
            chars |= set(mark[:end]) | set(reference.engine.normalize(mark[:end]))
    chars -= set(" \t\n\u2581")
    directory = Path(tempfile.mkdtemp(prefix="tp-unigram-resume-"))
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in texts()[:800]), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / "boundary"),
        model_type="unigram",
        vocab_size=4000,
        character_coverage=0.995,
        normalization_rule_name="nmt_nfkc",
        required_chars="".join(sorted(chars)),
        minloglevel=2,
    )
    return tp.Tokenizer.load(directory / "boundary.model")


def _tok(name: str):
    if name == "unigram-nfkc-boundary":
        return _boundary_model()
    if name == "mistral-sp-v3":
        return family(name)
    if name.startswith("bpe-"):
        return _trained_bpe(name)
    return _trained_unigram(name)


def _boundary_text(data, max_bytes: int) -> str:
    """A window of real text (the harvested test texts or a parallel-gettext language)
    with boundary characters put between and inside words."""
    pool = texts() + gettext_documents()
    text = pool[data.draw(st.integers(0, len(pool) - 1), label="text")]
    start = data.draw(st.integers(0, max(len(text) - 1, 0)), label="start")
    text = text[start : start + 200]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(BOUNDARY))
    text = "".join(chars)
    while len(text.encode()) > max_bytes:
        text = text[:-1]
    return text


def _stream(tok, pieces: list[bytes]) -> tuple[list[int], StreamingEncoder]:
    enc = StreamingEncoder(tok, scan_step=0)
    assert enc.rule == "sentencepiece"
    out: list[int] = []
    for piece in pieces:
        out += enc.push_bytes(piece)
    return out, enc


def _check_splits(tok, text: str, offsets: range) -> None:
    """Two pushes split at each offset: the first pauses the normalizer there, the
    second resumes it."""
    payload = text.encode()
    expected = tok.encode(text)
    for at in offsets:
        out, enc = _stream(tok, [payload[:at]])
        try:
            prefix = payload[:at].decode()
        except UnicodeDecodeError:
            pass  # the split is inside a character: nothing to compare yet
        else:
            assert out + enc.provisional() == tok.encode(prefix), (text, at)
        out += enc.push_bytes(payload[at:])
        assert out + enc.finish() == expected, (text, at)


def _contexts() -> list[tuple[str, str]]:
    """(left, right) pieces of real text around a boundary character: English from the
    test texts and, when the shared corpus is present, a few gettext languages of other
    scripts; the left piece is longer than any normalizer rule, so the normalizer has
    started before the boundary."""
    pool = ["Open the file and save the changes before you quit"]
    documents = gettext_documents()
    pool += [documents[i] for i in range(0, len(documents), max(1, len(documents) // 8))]
    pairs = []
    for text in pool:
        words = text.split()
        if len(words) >= 8:
            pairs.append((" ".join(words[:4]), " ".join(words[4:8])))
    return pairs


@pytest.mark.parametrize("name", MODELS)
def test_every_byte_offset_around_each_boundary_character(name: str) -> None:
    """Each boundary string inside a word, right after a space and right before one,
    split at every byte offset from 14 bytes before it to 14 bytes after it (the
    longest nmt_nfkc rule is 12 bytes)."""
    tok = _tok(name)
    for left, right in _contexts():
        for mark in BOUNDARY:
            for text in (left + mark + right, left + " " + mark + right, left + mark + " " + right):
                start = len(left.encode())
                end = len(text.encode()) - len(right.encode())
                _check_splits(tok, text, range(start - 14, min(end + 14, len(text.encode())) + 1))


@pytest.mark.parametrize("name", MODELS)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=30, deadline=None)
@given(data=st.data())
def test_every_byte_offset_pauses_and_resumes_exactly(name: str, data) -> None:
    tok = _tok(name)
    text = _boundary_text(data, 160)
    _check_splits(tok, text, range(len(text.encode()) + 1))


@pytest.mark.parametrize("name", MODELS)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60, deadline=None)
@given(data=st.data())
def test_three_pushes_at_drawn_offsets(name: str, data) -> None:
    tok = _tok(name)
    text = _boundary_text(data, 400)
    payload = text.encode()
    a = data.draw(st.integers(0, len(payload)), label="a")
    b = data.draw(st.integers(a, len(payload)), label="b")
    out, enc = _stream(tok, [payload[:a], payload[a:b], payload[b:]])
    assert out + enc.finish() == tok.encode(text)


@pytest.mark.parametrize("name", MODELS)
def test_commits_at_the_space_right_after_a_word(name: str) -> None:
    """A space commits the word before it as soon as it arrives when no normalizer step
    of the word waits for more bytes (every byte of ASCII letters and digits is a step of
    its own, or waits for one more byte): the normalization need not wait for the
    longest rule's reach after the space."""
    tok = _tok(name)
    enc = StreamingEncoder(tok, scan_step=0)
    out = enc.push("The quick brown fox jumps over the lazy dog")
    # Every word but the last one is committed: the tail is " dog" at most.
    assert len(enc.pending_text) <= len(" dog")
    assert out + enc.finish() == tok.encode("The quick brown fox jumps over the lazy dog")
