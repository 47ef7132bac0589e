"""Streaming encode of SentencePiece Unigram ``.model`` files on the native
``sentencepiece`` rule: a sentence is cut before a ``▁`` when no piece holds ``▁`` past
its first character, and the part after a cut continues Viterbi from the best path's
score there (``src/sentencepiece/unigram.rs``, ``Unigram::encode_from``).

Properties, for every chunking (str chunks, raw UTF-8 split inside code points,
recognized spellings whole or split): ``concat(pushes) + finish() == tok.encode(text)``
and, after every push, ``committed + provisional() == tok.encode(text so far)``. Models:
Unigram models trained here by SentencePiece itself (T5/ALBERT-style ``nmt_nfkc``, the
identity rule with spaces kept, byte fallback and user-defined pieces, no dummy
prefix); texts: the harvested test texts and, when the shared corpus is present,
parallel-gettext messages of every language joined into documents. A model whose
pieces span spaces (``split_by_whitespace=false``) keeps the ``hold`` rule.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact.runtime import StreamingEncoder

from .families import texts
from .stream_checks import check_sentencepiece_stream

GETTEXT = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
GETTEXT = GETTEXT / "parallel-gettext.jsonl.gz"

UNIGRAM = ["unigram-nfkc", "unigram-identity-keep-spaces", "unigram-nfkc-no-prefix"]
OPTIONS: dict[str, dict[str, object]] = {
    "unigram-nfkc": {"normalization_rule_name": "nmt_nfkc"},
    "unigram-identity-keep-spaces": {
        "normalization_rule_name": "identity",
        "remove_extra_whitespaces": False,
        "byte_fallback": True,
        "user_defined_symbols": ["<tool>", "[REF]"],
    },
    "unigram-nfkc-no-prefix": {"normalization_rule_name": "nmt_nfkc", "add_dummy_prefix": False},
    # Pieces may span spaces ("▁of▁the"): no cut before a ▁ is proven.
    "unigram-spanning-spaces": {
        "normalization_rule_name": "nmt_nfkc",
        "split_by_whitespace": False,
    },
}


@functools.cache
def gettext_documents() -> tuple[str, ...]:
    """parallel-gettext messages joined into one document per language (every language
    of the corpus, up to 6 kB each), or nothing when the shared corpus is absent."""
    if not GETTEXT.is_file():
        return ()
    docs: dict[str, list[str]] = {}
    with gzip.open(GETTEXT, "rt", encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if n >= 4000:
                break
            record = json.loads(line)
            for lang, text in record.items():
                if lang in ("id", "domain") or not isinstance(text, str):
                    continue
                parts = docs.setdefault(lang, [])
                if sum(map(len, parts)) < 6000:
                    parts.append(text)
    return tuple(" ".join(parts) for _, parts in sorted(docs.items()) if parts)


@functools.cache
def _trained(kind: str):
    """A small Unigram model trained by SentencePiece on the test texts (and gettext
    messages of every language when the shared corpus is present)."""
    spm = pytest.importorskip("sentencepiece")
    import tokenpact as tp

    directory = Path(tempfile.mkdtemp(prefix="tp-unigram-stream-"))
    corpus = directory / "corpus.txt"
    lines = [t.replace("\n", " ") for t in texts()[:800]]
    lines += [d[i : i + 300] for d in gettext_documents() for i in range(0, len(d), 300)]
    corpus.write_text("\n".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / kind),
        model_type="unigram",
        vocab_size=4000,
        character_coverage=0.995,
        minloglevel=2,
        **OPTIONS[kind],
    )
    return tp.Tokenizer.load(directory / f"{kind}.model")


def _text(tok, data, pool: tuple[str, ...]) -> str:
    text = pool[data.draw(st.integers(0, len(pool) - 1), label="text")]
    start = data.draw(st.integers(0, max(len(text) - 1, 0)), label="start")
    text = text[start : start + data.draw(st.integers(0, 1500), label="length")]
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    if rng.random() < 0.3:
        # Runs of spaces, tabs and newlines: every ▁ of a run is a cut for Unigram.
        words = text.split(" ")
        text = "".join(w + rng.choice([" ", "  ", "   ", "\t ", " \n "]) for w in words)
    spellings = sorted({**tok.special_tokens, **tok.added_tokens})
    for _ in range(rng.randint(0, 3) if spellings else 0):
        s = rng.choice(spellings)
        piece = s if rng.random() < 0.7 else s[: rng.randint(1, len(s))]
        at = rng.randint(0, len(text))
        text = text[:at] + piece + text[at:]
    return text


@pytest.mark.parametrize("name", UNIGRAM)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=50, deadline=None)
@given(data=st.data())
def test_stream_equals_one_shot_encode(name: str, data) -> None:
    tok = _trained(name)
    check_sentencepiece_stream(tok, data, _text(tok, data, texts()))


@pytest.mark.parametrize("name", UNIGRAM)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=50, deadline=None)
@given(data=st.data())
def test_stream_equals_one_shot_encode_on_every_gettext_language(name: str, data) -> None:
    documents = gettext_documents()
    if not documents:
        pytest.skip(f"{GETTEXT} is absent (the shared corpora sit beside the checkout)")
    tok = _trained(name)
    check_sentencepiece_stream(tok, data, _text(tok, data, documents))


@pytest.mark.parametrize("name", UNIGRAM)
def test_long_stream_carries_the_viterbi_score_through_recentring(name: str) -> None:
    """A document long enough that Viterbi re-centres its path scores many times
    (|score| > 100000): every part continues from the carried score, so the IDs equal
    the one-shot encode, and almost all of them commit before the end."""
    tok = _trained(name)
    pool = list(texts()[:400]) + list(gettext_documents())
    text = " ".join(pool) * 2
    data = text.encode()
    rng = random.Random(11)
    enc = StreamingEncoder(tok)
    out: list[int] = []
    at = 0
    while at < len(data):
        n = rng.randint(1, 64)
        out += enc.push_bytes(data[at : at + n])
        at += n
    early = len(out)
    out += enc.finish()
    expected = tok.encode(text)
    assert len(expected) > 20_000
    assert out == expected
    assert early > 0.99 * len(expected)


@pytest.mark.parametrize("name", UNIGRAM)
def test_commits_while_streaming_and_the_tail_stays_short(name: str) -> None:
    """After every push what stays provisional is at most the text since the last
    space before a word and the normalizer's reach (words of at most 12 characters)."""
    tok = _trained(name)
    rng = random.Random(5)
    words = [w[:12] for t in texts()[:80] for w in t.split() if w]
    text = " ".join(words)
    data = text.encode()
    enc = StreamingEncoder(tok, scan_step=0)
    early: list[int] = []
    at = 0
    while at < len(data):
        n = rng.randint(1, 64)
        early += enc.push_bytes(data[at : at + n])
        at += n
        assert len(enc.pending_text.encode()) <= 48 + 1 + 64
    assert early + enc.finish() == tok.encode(text)
    assert len(early) > 0.9 * len(tok.encode(text))


@pytest.mark.parametrize("name", UNIGRAM)
def test_unigram_models_declare_the_sentence_cut(name: str) -> None:
    tok = _trained(name)
    assert "streaming_encode_sentencepiece" in tok.engine.capabilities
    assert StreamingEncoder(tok).rule == "sentencepiece"
    assert StreamingEncoder(tok, native=False).rule == "hold"


def test_pieces_spanning_spaces_fall_back_to_hold() -> None:
    """A vocabulary with ``▁`` inside pieces (trained without splitting at whitespace):
    a piece may span any space, so nothing commits before ``finish`` (or a recognized
    spelling), and the result is still exact."""
    tok = _trained("unigram-spanning-spaces")
    space = "\u2581".encode()
    inner = [p for p in tok.vocab() if space in p[1:]]
    assert inner, "the precondition is broken by real pieces"
    assert "streaming_encode_sentencepiece" not in tok.engine.capabilities
    enc = StreamingEncoder(tok)
    assert enc.rule == "hold" and enc._core is None
    text = " ".join(texts()[:20])
    data = text.encode()
    committed: list[int] = []
    for at in range(0, len(data), 7):
        committed += enc.push_bytes(data[at : at + 7])
    assert committed == []
    assert enc.finish() == tok.encode(text)
    assert StreamingEncoder(tok, allowed_special="all").rule == "specials"


def test_hostile_run_without_a_space() -> None:
    """No space (CJK text): nothing can be cut, the whole run stays provisional, pushes
    stay linear (the tail is rescanned only after doubling), and the result is exact."""
    tok = _trained("unigram-nfkc")
    text = "日本語のテキスト" * 20_000
    data = text.encode()
    enc = StreamingEncoder(tok)
    committed: list[int] = []
    for at in range(0, len(data), 64):
        committed += enc.push_bytes(data[at : at + 64])
    assert committed == []
    assert enc.finish() == tok.encode(text)
