"""Seed 000 0x08: the Unigram "abab" lattice, decoded by Viterbi.

Pieces a, b (p=1/4), ab (7/20), aba (1/10), bab (1/20); the best path is ab + ab
(probability 49/400), not the longest-match aba + b (1/40).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import pytest

import sp_proto as pb

PROBS = {
    "a": Fraction(1, 4),
    "b": Fraction(1, 4),
    "ab": Fraction(7, 20),
    "aba": Fraction(1, 10),
    "bab": Fraction(1, 20),
}


def _model(tmp_path: Path) -> Path:
    pieces = [(p, math.log(float(q)), pb.NORMAL) for p, q in PROBS.items()]
    pieces.append(("<unk>", 0.0, pb.UNKNOWN))  # a=0 b=1 ab=2 aba=3 bab=4 as in the seed
    path = tmp_path / "abab.model"
    path.write_bytes(pb.model(pieces, unk_id=5))
    return path


def _paths(text: str) -> dict[tuple[str, ...], Fraction]:
    if not text:
        return {(): Fraction(1)}
    out: dict[tuple[str, ...], Fraction] = {}
    for piece, q in PROBS.items():
        if text.startswith(piece):
            for rest, r in _paths(text[len(piece) :]).items():
                out[(piece, *rest)] = q * r
    return out


def test_six_paths_and_marginal() -> None:
    paths = _paths("abab")
    assert len(paths) == 6
    assert sum(paths.values()) == Fraction(1329, 6400)
    best = max(paths, key=lambda k: paths[k])
    assert best == ("ab", "ab") and paths[best] == Fraction(49, 400)
    assert paths[("aba", "b")] == Fraction(1, 40)


def test_viterbi_picks_ab_ab(tp: ModuleType, tmp_path: Path) -> None:
    tok = tp.Tokenizer.load(_model(tmp_path))
    assert tok.encode("abab") == [2, 2]
    enc = tok.encode_structured("abab")
    assert enc.tokens == ["ab", "ab"]
    assert enc.offsets == [(0, 2), (2, 4)]
    assert tok.decode([2, 2]) == "abab"
    assert tok.encode("abax") == [3, 5]  # x is unknown: one <unk>


def test_sentencepiece_agrees_on_the_hand_built_model(tp: ModuleType, tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    path = _model(tmp_path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = tp.Tokenizer.load(path)
    for text in ["abab", "ababab", "babab", "aba", "abxxab", "x"]:
        assert tok.encode(text) == sp.encode(text), text
