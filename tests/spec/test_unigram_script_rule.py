"""SentencePiece's script rule for Unigram pieces (split_by_unicode_script).

Without it the trainer spent its budget on pieces such as ``▁(المغرب`` or ``دوفرك،``
(Arabic glued to Common punctuation), and Arabic compressed 3% worse than
sentencepiece on the parallel-gettext mix (docs/PERFORMANCE.md, trainer-quality).
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.reference.piece_scripts import script_of, single_script

sp_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")

TABLE = Path(__file__).resolve().parents[2] / "src" / "unigram" / "scripts.bin"


@pytest.mark.parametrize(
    ("piece", "ok"),
    [
        ("▁مّ", True),  # shadda (Inherited) takes the script of its letter
        ("ّة", True),  # a leading mark takes the next letter's script
        ("كتبَ", True),  # fatha
        ("لـ", False),  # tatweel U+0640 is Common
        ("▁(المغرب", False),
        ("دوفرك،", False),  # Arabic comma U+060C is Common
        ("؟", True),
        ("٠١٢", True),  # Arabic-Indic digits are Arabic
        ("%s", False),
        ("%%", True),
        ("10", True),
        ("v2", False),
        ("カタカナ漢字ひらがなー", True),  # kana and U+30FC count as Han
        ("漢a", False),
        ("▁word", True),
        ("हिन्दी", True),  # virama and vowel signs are Devanagari
        ("한국어", True),
    ],
)
def test_reference_rule(piece: str, ok: bool) -> None:
    assert single_script(piece) is ok


def _table() -> list[tuple[int, int, str]]:
    raw = TABLE.read_bytes()
    assert raw[:4] == b"TPSC"
    n_names, n_ranges = struct.unpack("<II", raw[8:16])
    names, off = [], 16
    for _ in range(n_names):
        size = raw[off]
        names.append(raw[off + 1 : off + 1 + size].decode())
        off += 1 + size
    rows = [struct.unpack("<IIH", raw[off + 10 * k : off + 10 * k + 10]) for k in range(n_ranges)]
    return [(first, last, names[sid]) for first, last, sid in rows]


def _table_script(table: list[tuple[int, int, str]], cp: int) -> str:
    for first, last, name in table:
        if first <= cp <= last:
            return "Han" if name in ("Hiragana", "Katakana") or cp == 0x30FC else name
    return "Han" if cp == 0x30FC else "Common"


@settings(max_examples=300, deadline=None)
@given(st.characters(exclude_categories=["Cs"]))
def test_engine_table_matches_reference(char: str) -> None:
    if not TABLE.is_file():
        pytest.skip("src/unigram/scripts.bin is absent (installed package without sources)")
    assert _table_script(_table_cached(), ord(char)) == script_of(char)


_CACHE: list[list[tuple[int, int, str]]] = []


def _table_cached() -> list[tuple[int, int, str]]:
    if not _CACHE:
        _CACHE.append(_table())
    return _CACHE[0]


# Letters of several scripts, combining marks, Common punctuation and digits.
MIXED = "abمنّـ،(%1漢カ"
words = st.text(alphabet=MIXED, min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=5).map(" ".join), min_size=3, max_size=12))
def test_trained_pieces_keep_to_one_script(lines: list[str]) -> None:
    tok = tp.train_unigram(lines * 3, vocab_size=60, character_coverage=1.0)
    pieces = normal_pieces(tok)
    assert all(single_script(p) for p in pieces), [p for p in pieces if not single_script(p)]


def model_proto(tok: tp.Tokenizer) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.model"
        tok.export_sentencepiece(path)
        proto = sp_pb2.ModelProto()
        proto.ParseFromString(path.read_bytes())
    return proto


def normal_pieces(tok: tp.Tokenizer) -> list[str]:
    normal = sp_pb2.ModelProto.SentencePiece.NORMAL
    return [p.piece for p in model_proto(tok).pieces if p.type == normal]


ARABIC = ["(المغرب) (الجزائر)، دوفرك، (تونس) مّع", "▁(المغرب) كتب، (مصر)"] * 40


def test_the_rule_is_what_keeps_mixed_pieces_out() -> None:
    ruled = tp.train_unigram(ARABIC, vocab_size=80, character_coverage=1.0)
    free = tp.train_unigram(
        ARABIC, vocab_size=80, character_coverage=1.0, split_by_unicode_script=False
    )
    assert all(single_script(p) for p in normal_pieces(ruled))
    assert any(not single_script(p) for p in normal_pieces(free))
    assert any("ّ" in p and len(p) > 1 for p in normal_pieces(ruled))  # marks join letters
    assert model_proto(ruled).trainer_spec.split_by_unicode_script
    assert model_proto(ruled).trainer_spec.split_by_number  # digits keep their script
    assert not model_proto(free).trainer_spec.split_by_unicode_script
    assert not model_proto(free).trainer_spec.split_by_number
    assert ruled.training is not None
    assert ruled.training["config"]["split_by_unicode_script"] is True


def test_flag_must_be_bool() -> None:
    with pytest.raises(tp.errors.ConfigError, match="split_by_unicode_script"):
        tp.train_unigram(ARABIC, vocab_size=80, split_by_unicode_script=1)  # type: ignore[arg-type]
