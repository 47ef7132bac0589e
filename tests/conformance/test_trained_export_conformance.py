"""Trained tokenizers against the peer libraries that load their exported files.

Unigram: ``sentencepiece`` loading the ``.model`` that ``train_unigram`` writes gives our
IDs; for all three, ``tokenizers`` loading the exported ``tokenizer.json`` gives our
IDs. Unigram and WordPiece also equal the trainers' own minimal engines (src/unigram
Viterbi, src/wordpiece.rs). Texts: harvested real and edge-case text (lines, for
training and held-out encoding).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact import _native
from tokenpact.reference import char_bpe as cref
from tokenpact.train.char_bpe import build_char_bpe_tokenizer

from .peer_data import harvest_texts


@pytest.fixture(scope="module")
def lines() -> tuple[list[str], list[str]]:
    out = [line for text in harvest_texts() for line in text.split("\n") if line.strip()]
    return out[:4000], out[4000:7000]


UNIGRAM_VARIANTS = {
    # byte_fallback, remove_extra_whitespaces, normalization
    "unk": (False, True, "identity"),
    "byte_fallback": (True, True, "identity"),
    "keep_whitespace": (True, False, "identity"),
    "nmt_nfkc": (True, True, "nmt_nfkc"),
}


@pytest.fixture(scope="module", params=list(UNIGRAM_VARIANTS))
def unigram(request: pytest.FixtureRequest, lines: tuple[list[str], list[str]]) -> tp.Tokenizer:
    byte_fallback, remove_ws, rule = UNIGRAM_VARIANTS[request.param]
    return tp.train_unigram(
        lines[0],
        vocab_size=1500 if byte_fallback else 1200,
        byte_fallback=byte_fallback,
        remove_extra_whitespaces=remove_ws,
        normalization=rule,
    )


def test_unigram_sentencepiece_library_agrees(
    unigram: tp.train.UnigramTokenizer, lines: tuple[list[str], list[str]]
) -> None:
    spm = pytest.importorskip("sentencepiece")
    peer = spm.SentencePieceProcessor(model_proto=unigram.provenance.files["tokenizer.model"])
    assert peer.get_piece_size() == unigram.vocab_size
    texts = lines[1] + [t for t in harvest_texts(seed=1) if len(t) < 5000][:500]
    mismatches = [t for t in texts if unigram.encode(t) != peer.encode(t)]
    assert mismatches == []
    for text in texts[:300]:
        ids = unigram.encode(text)
        assert unigram.decode(ids) == peer.decode(ids)


def test_unigram_tokenizers_library_agrees(
    unigram: tp.train.UnigramTokenizer, lines: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    hf = pytest.importorskip("tokenizers")
    peer = hf.Tokenizer.from_file(str(unigram.export_hf(tmp_path)))
    texts = lines[1] + [t for t in harvest_texts(seed=1) if len(t) < 5000][:500]
    texts += ["", " ", "  a  b ", " \u2581x", "\u00a0x\u3000y  ", "ｆｕｌｌ ①  ﬁ"]
    # Hugging Face sums scores in float64 and breaks exact ties its own way (docs/
    # SENTENCEPIECE.md); a tie is two segmentations with exactly equal scores.
    mismatches = [
        t for t in texts if not _same_or_tie(unigram, unigram.encode(t), peer.encode(t).ids)
    ]
    assert mismatches == []
    for text in texts[:300]:
        ids = unigram.encode(text)
        if unigram.unk_id not in ids:  # HF's decode skips the unknown piece
            assert peer.decode(ids) == unigram.decode(ids)


def test_unigram_ids_equal_trainer_viterbi(
    unigram: tp.train.UnigramTokenizer, lines: tuple[list[str], list[str]]
) -> None:
    """The SentencePiece engine on the written model == the trainer's per-word Viterbi
    (the lattice built from the same pieces and float32 scores)."""
    lattice = _native.UnigramCore(
        unigram.pieces,
        unigram.scores,
        unigram.unk_id,
        unigram.pieces.index("<0x00>") if unigram.byte_fallback else None,
    )
    texts = lines[1] + [t for t in harvest_texts(seed=2) if len(t) < 5000][:500]
    mismatches = []
    for text in texts:
        # The lattice splits raw text at spaces; give it the model's normalized text.
        normalized = unigram._lattice_text(text)  # type: ignore[attr-defined]
        if not normalized:  # all spaces, removed: no words (the lattice would see one "▁")
            assert unigram.encode(text) == []
            continue
        if not _same_or_tie(unigram, unigram.encode(text), list(lattice.encode(normalized))):
            mismatches.append(text)
    assert mismatches == []


def _same_or_tie(tok: tp.train.UnigramTokenizer, ours: list[int], other: list[int]) -> bool:
    """Equal IDs, or two segmentations with exactly equal scores (e.g. a run of '#' cut
    at different places into the same pieces): a tie, which SentencePiece breaks by
    float32 rounding of its running sums and float64 engines their own way; anything
    else is a real difference. An unknown character costs 10 below the worst piece."""
    if ours == other:
        return True
    scores, unk = tok.scores, tok.unk_id
    unk_score = min(x for x in scores if math.isfinite(x)) - 10.0
    exact = [math.fsum(scores[i] if i != unk else unk_score for i in ids) for ids in (ours, other)]
    return exact[0] == exact[1]


@pytest.mark.parametrize("lowercase", [False, True])
def test_wordpiece_tokenizers_library_agrees(
    lines: tuple[list[str], list[str]], lowercase: bool, tmp_path: Path
) -> None:
    hf = pytest.importorskip("tokenizers")
    tok = tp.train_wordpiece(lines[0], vocab_size=3000, lowercase=lowercase)
    peer = hf.Tokenizer.from_file(str(tok.export_hf(tmp_path)))
    texts = lines[1] + [t for t in harvest_texts(seed=1) if len(t) < 5000][:500]
    mismatches = [t for t in texts if tok.encode(t) != peer.encode(t, add_special_tokens=False).ids]
    assert mismatches == []


def test_wordpiece_ids_equal_trainer_engine(lines: tuple[list[str], list[str]]) -> None:
    tok = tp.train_wordpiece(lines[0], vocab_size=3000)
    vocab = [p.decode() for p in tok.vocab()]
    engine = _native.WordPieceCore(vocab, tok.token_id("[UNK]"), "##", 100, False)
    texts = lines[1] + [t for t in harvest_texts(seed=2) if len(t) < 5000][:500]
    mismatches = [t for t in texts if tok.encode(t) != list(engine.encode(t))]
    assert mismatches == []


@pytest.mark.parametrize("lowercase", [False, True])
def test_char_bpe_tokenizers_library_agrees(
    lines: tuple[list[str], list[str]], lowercase: bool, tmp_path: Path
) -> None:
    hf = pytest.importorskip("tokenizers")
    tok = tp.train_char_bpe(lines[0], num_merges=2000, lowercase=lowercase)
    peer = hf.Tokenizer.from_file(str(tok.export_hf(tmp_path)))
    texts = lines[1] + [t for t in harvest_texts(seed=1) if len(t) < 5000][:500]
    texts += ["", "  ", "x", " a  b\t\tc \u3000d\u2028 "]
    mismatches = [t for t in texts if tok.encode(t) != peer.encode(t).ids]
    assert mismatches == []
    for text in lines[1][:300]:
        ids = tok.encode(text)
        if tok.unk_id not in ids:
            assert peer.decode(ids) == tok.decode(ids)


def test_char_bpe_full_tokenizer(lines: tuple[list[str], list[str]]) -> None:
    full = tp.train_char_bpe(lines[0], num_merges=2000)
    assert full.unk_id is not None
    again = build_char_bpe_tokenizer(
        full.char_pieces,
        full.char_merges,
        [tp.SpecialToken("<unk>", "unk")],
        training=full.training,
    )
    assert again.to_config() == full.to_config() and again.release_hash == full.release_hash
    # The pipeline engine gives the IDs of the merges applied in rank order.
    texts = lines[1] + ["", "  ", "x", " a  b\t\tc \u3000d\u2028 ", "lobster🐍 low"]
    pieces, merges = full.char_pieces, full.char_merges
    mismatches = [
        t for t in texts if full.encode(t) != cref.encode(t, pieces, merges, unk_id=full.unk_id)
    ]
    assert mismatches == []
    for text in lines[1][:300]:
        ids = full.encode(text)
        assert full.decode(ids) == cref.decode(ids, pieces, unk_id=full.unk_id)
