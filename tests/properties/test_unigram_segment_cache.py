"""Hypothesis: the SentencePiece Unigram segment cache never changes a segmentation.

The engine memoizes the segmentation of each whitespace-delimited segment, reusing it
only where f32 Viterbi provably makes the same choice at the running path score (see
``src/sentencepiece/unigram.rs``). Here the cached engine must equal the same engine
with the cache off (whole-text Viterbi) and ``sentencepiece`` itself, on:

- hand-made vocabularies whose scores sit on a grid with exact and near (one-ulp) ties,
  with "heavy" pieces that drive the running score past 100,000 (sentencepiece's
  re-centring) so the same segment recurs at very different starting scores;
- a model trained by ``sentencepiece`` on real text, with random multilingual text.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sp_proto as pb
from tokenpact import _native

try:
    import sentencepiece as spm
except ImportError:  # the peer is optional here; cached vs uncached still runs
    spm = None  # type: ignore[assignment]

UNK_SURFACE = " \u2047 ".encode()
# Letters of three UTF-8 lengths and an ASCII punctuation mark: class cuts (between
# characters no piece joins) split the longer stretches between spaces.
LETTERS = "abé日."
# Scores on a grid: many splits tie exactly; the 1-ulp neighbours make near ties whose
# winner depends on f32 rounding at the running score.
SCORES = [-0.5, -1.0, -1.5, -2.0, -3.0, -1.0000001, -2.0000002, -0.99999994, -3.0000002]
# Pieces that only cover "z": they move the running score by large steps.
HEAVY = [-900.0, -20000.0, -99999.0, -33333.332]


def _engine(
    entries: list[tuple[str, float, int]], byte_fallback: bool, *, cache: bool, dummy: bool
) -> Any:
    return _native.SentencePieceCore(
        [p.encode() for p, _, _ in entries],
        [s for _, s, _ in entries],
        [t for _, _, t in entries],
        "unigram",
        byte_fallback,
        (b"", dummy, False, True, False),
        None,
        UNK_SURFACE,
        segment_cache=cache,
    )


def _peer_ids(entries: list[tuple[str, float, int]], byte_fallback: bool, dummy: bool, text: str):
    if spm is None:
        return None
    data = pb.model(entries, byte_fallback=byte_fallback, add_dummy_prefix=dummy)
    return spm.SentencePieceProcessor(model_proto=data).encode(text)


piece_texts = st.builds(
    lambda space, body: ("\u2581" if space else "") + body,
    st.booleans(),
    st.text(alphabet=LETTERS, min_size=1, max_size=3),
)
words = st.text(alphabet=LETTERS + "zq", max_size=10)


def _f32_step(x: float, ulps: int) -> float:
    """The float32 ``ulps`` representable values away from ``x`` (negative x here)."""
    bits = struct.unpack("<i", struct.pack("<f", x))[0]
    return float(struct.unpack("<f", struct.pack("<i", bits + ulps))[0])


@st.composite
def near_ties(draw: st.DrawFn) -> dict[str, float]:
    """A piece whose score is within a few float32 ulps of the split into two pieces:
    which one f32 Viterbi picks depends on the running score it is added to."""
    head = draw(piece_texts)
    tail = draw(st.text(alphabet=LETTERS, min_size=1, max_size=2))
    a, b = draw(st.sampled_from(SCORES)), draw(st.sampled_from(SCORES))
    whole = struct.unpack("<f", struct.pack("<f", a + b))[0]
    return {head: a, tail: b, head + tail: _f32_step(whole, draw(st.integers(-3, 3)))}


@given(
    vocab=st.dictionaries(piece_texts, st.sampled_from(SCORES), min_size=1, max_size=16),
    ties=st.lists(near_ties(), max_size=3),
    heavy=st.lists(st.sampled_from(HEAVY), max_size=2, unique=True),
    sentence=st.lists(words, min_size=1, max_size=8),
    repeat=st.integers(1, 40),
    byte_fallback=st.booleans(),
    dummy=st.booleans(),
)
def test_cache_equals_whole_text_viterbi(
    vocab: dict[str, float],
    ties: list[dict[str, float]],
    heavy: list[float],
    sentence: list[str],
    repeat: int,
    byte_fallback: bool,
    dummy: bool,
) -> None:
    for tie in ties:
        vocab.update(tie)
        # The tied word itself, so that it recurs at many running scores.
        sentence = [*sentence, max(tie, key=len).lstrip("\u2581")]
    entries = [("<unk>", 0.0, pb.UNKNOWN), ("<s>", 0.0, pb.CONTROL)]
    entries += [(p, s, pb.NORMAL) for p, s in sorted(vocab.items())]
    entries += [(p, s, pb.NORMAL) for p, s in zip(["\u2581z", "z"], heavy, strict=False)]
    if byte_fallback:
        entries += [(f"<0x{b:02X}>", 0.0, pb.BYTE) for b in range(256)]
    # The same words over and over: cached segments recur at ever larger |score|.
    text = " ".join(sentence * repeat)
    cached = _engine(entries, byte_fallback, cache=True, dummy=dummy)
    plain = _engine(entries, byte_fallback, cache=False, dummy=dummy)
    ids = cached.encode(text)
    assert ids == plain.encode(text)
    assert cached.encode_offsets_lists(text) == plain.encode_offsets_lists(text)
    peer = _peer_ids(entries, byte_fallback, dummy, text)
    if peer is not None:
        assert ids == peer


@given(
    inner=st.sampled_from(["a\u2581b", "ab\u2581", "\u2581\u2581a"]),
    sentence=st.lists(words, min_size=1, max_size=8),
)
def test_vocabularies_the_proof_rejects_still_encode_exactly(
    inner: str, sentence: list[str]
) -> None:
    """A piece with `▁` past its first character spans a cut: the cache must stay off
    (or its absence be harmless), and results still equal whole-text Viterbi."""
    entries = [("<unk>", 0.0, pb.UNKNOWN)]
    entries += [(p, -1.0, pb.NORMAL) for p in ["a", "b", "\u2581", "\u2581a", inner]]
    text = "  ".join(sentence)
    cached = _engine(entries, False, cache=True, dummy=True)
    plain = _engine(entries, False, cache=False, dummy=True)
    assert cached.encode(text) == plain.encode(text)
    peer = _peer_ids(entries, False, True, text)
    if peer is not None:
        assert cached.encode(text) == peer


MULTILINGUAL = (
    "the quick brown fox jumps over lazy dogs. Größe straße café naïve "
    "Съешь же ещё этих мягких французских булок "
    "日本語の文章を書きます 中文的句子 한국어 문장입니다 "
    "مرحبا بالعالم हिन्दी भाषा 123 4567 (){}[] "
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if spm is None:
        pytest.skip("sentencepiece is not installed")
    from conformance import peer_data

    lines = [line for t in peer_data.harvest_texts()[::3] for line in t.splitlines() if line]
    lines += [MULTILINGUAL] * 20
    root = tmp_path_factory.mktemp("segcache")
    corpus = root / "train.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(root / "m"),
        model_type="unigram",
        vocab_size=3000,
        character_coverage=0.995,
        num_threads=2,
        input_sentence_size=20000,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    return root / "m.model"


@pytest.fixture(scope="module")
def pair(tp: ModuleType, trained: Path) -> tuple[Any, Any]:
    return tp.Tokenizer.load(trained), spm.SentencePieceProcessor(model_file=str(trained))


@given(
    text=st.lists(
        st.one_of(
            st.sampled_from(MULTILINGUAL.split(" ")),
            st.text(alphabet=MULTILINGUAL + "\u2581\t\n", max_size=12),
        ),
        max_size=60,
    ).map(" ".join),
    repeat=st.integers(1, 30),
)
def test_trained_model_cached_equals_peer(pair: tuple[Any, Any], text: str, repeat: int) -> None:
    tok, peer = pair
    long_text = " ".join([text] * repeat)
    assert tok.encode(long_text) == peer.encode(long_text)
