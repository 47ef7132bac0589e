"""Each normalizer and pre-tokenizer equals Hugging Face's, text and offsets.

Normalizers: ``tokenizers.normalizers.X().normalize_str`` against the engine's
``normalize_str`` on harvested text and edge cases (combining marks, CJK, control
chars, ß/İ/ﬁ lowercasing ...). Offsets through normalization: a tokenizer that makes one
token per normalized char (WordLevel with only ``[UNK]``), saved by HF and loaded by
tokenpact, must report HF's raw offsets for every char. Pre-tokenizers: the same
harness with each pre-tokenizer gives HF's pieces (as offsets).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex  # noqa: E402
from tokenizers import normalizers as N  # noqa: E402
from tokenizers import pre_tokenizers as P  # noqa: E402

EDGE = [
    "e\u0301", "\u0301a", "a\u0323\u0301", "ǘ\u0323", "ḳ́", "q\u0307\u0323", "Ａ\u0301",
    "İstanbul ß ﬁ ǅ Σ ΣΑΣ ẞ", "中文字 テスト 한국어 각 \u1100\u1161\u11a8", "\u0b47\u0b3e",
    "\x00a\x01b\u200d\ufffd\x7f\x85", "  padded  ", "\t\n", "ﬃ x² ½ ㍿ Å Å", "",
    "\U00011938 \u32ff ꟲ", "Ᲊ ꟋᲉ", "অ্যাট্রিবিউটের", "naïve café", "\u3000 \u2028",
]  # fmt: skip
NORMALIZERS: dict[str, Any] = {
    "NFC": N.NFC(),
    "NFD": N.NFD(),
    "NFKC": N.NFKC(),
    "NFKD": N.NFKD(),
    "Lowercase": N.Lowercase(),
    "StripAccents": N.StripAccents(),
    "NFD+StripAccents": N.Sequence([N.NFD(), N.StripAccents()]),
    "Replace(string)": N.Replace("  ", " "),
    "Replace(regex)": N.Replace(Regex(r"\s+"), "_"),
    "Replace(delete)": N.Replace("a", ""),
    # Empty matches insert (HF keeps them): a space after the last non-space char.
    "Replace(empty match)": N.Replace(Regex(r"(?<=\S)\z"), " "),
    "Replace(empty matches)": N.Replace(Regex(r"x*"), "-"),
    "Prepend": N.Prepend("▁"),
    "Strip": N.Strip(),
    "Strip(left)": N.Strip(left=True, right=False),
    "Strip(right)": N.Strip(left=False, right=True),
    "Bert": N.BertNormalizer(),
    "Bert(cased)": N.BertNormalizer(lowercase=False),
    "Bert(accents, no clean)": N.BertNormalizer(
        clean_text=False, strip_accents=True, lowercase=False
    ),
    "Bert(no chinese)": N.BertNormalizer(handle_chinese_chars=False),
    "Sequence": N.Sequence([N.NFKC(), N.Lowercase(), N.Replace(" ", "▁"), N.Prepend("▁")]),
}
PRE_TOKENIZERS: dict[str, Any] = {
    "Whitespace": P.Whitespace(),
    "WhitespaceSplit": P.WhitespaceSplit(),
    "BertPreTokenizer": P.BertPreTokenizer(),
    "Digits": P.Digits(individual_digits=False),
    "Digits(individual)": P.Digits(individual_digits=True),
    "Punctuation": P.Punctuation(),
    "Punctuation(merged_with_next)": P.Punctuation("merged_with_next"),
    "CharDelimiterSplit": P.CharDelimiterSplit("e"),
    "Sequence": P.Sequence([P.WhitespaceSplit(), P.Digits(True), P.Punctuation("contiguous")]),
}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()[::3] + EDGE


def _per_token_pair(tp: ModuleType, tmp: Path, normalizer: Any, pre: Any) -> tuple[Any, Any]:
    hf = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    if normalizer is not None:
        hf.normalizer = normalizer
    hf.pre_tokenizer = pre
    path = tmp / "tokenizer.json"
    hf.save(str(path))
    return tp.Tokenizer.load(path), hf


def _offset_mismatches(ours: Any, hf: Any, texts: list[str]) -> list[str]:
    bad = []
    for text in texts:
        got = ours.encode_structured(text).offsets
        want = [tuple(o) for o in hf.encode(text).offsets]
        if got != want:
            bad.append(f"{text[:40]!r}: ours {got[:6]} HF {want[:6]}")
    return bad


@pytest.mark.parametrize("name", list(NORMALIZERS))
def test_normalizer_text_and_offsets(
    name: str, tp: ModuleType, texts: list[str], tmp_path: Path
) -> None:
    from tokenpact import _native

    norm = NORMALIZERS[name]
    ours, hf = _per_token_pair(tp, tmp_path, norm, P.Split(Regex(r"[\s\S]"), "isolated"))
    node = json.dumps(json.loads(hf.to_str())["normalizer"])
    wrong = [t for t in texts if _native.normalize_str(node, t)[0] != norm.normalize_str(t)]
    assert not wrong, f"{name}: {len(wrong)} texts normalize differently, e.g. {wrong[:3]!r}"
    bad = _offset_mismatches(ours, hf, texts)
    assert not bad, f"{name}: {len(bad)} texts differ in offsets:\n" + "\n".join(bad[:5])


@pytest.mark.parametrize("name", list(PRE_TOKENIZERS))
def test_pre_tokenizer_pieces(name: str, tp: ModuleType, texts: list[str], tmp_path: Path) -> None:
    ours, hf = _per_token_pair(tp, tmp_path, None, PRE_TOKENIZERS[name])
    bad = _offset_mismatches(ours, hf, texts)
    assert not bad, f"{name}: {len(bad)} texts split differently:\n" + "\n".join(bad[:5])


def test_alignment_protocol_examples(tp: ModuleType) -> None:
    """The documented odd cases: composed chars point at the base, replacements at the
    last matched char, prepended chars at the first char."""
    from tokenpact import _native

    text, align = _native.normalize_str('{"type": "NFC"}', "e\u0301x")
    assert text == "éx" and align[0] == (0, 1) and align[-1] == (3, 4)
    text, align = _native.normalize_str(
        '{"type": "Replace", "pattern": {"String": "ab"}, "content": "XYZ"}', "cab"
    )
    assert text == "cXYZ" and align[1:] == [(2, 3)] * 3
    text, align = _native.normalize_str('{"type": "Prepend", "prepend": "_"}', "hi")
    assert text == "_hi" and align == [(0, 1), (0, 1), (1, 2)]


def test_unknown_normalizer_names_the_type(tp: ModuleType, tmp_path: Path) -> None:
    data = json.loads(
        tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).to_str()
    )
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "ByteLevel"}]}
    data["pre_tokenizer"] = {"type": "Whitespace"}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(tp.ArtifactError, match="ByteLevel"):
        tp.Tokenizer.load(path)
    data["normalizer"] = None
    data["pre_tokenizer"] = {"type": "UnicodeScripts"}
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(tp.ArtifactError, match="UnicodeScripts"):
        tp.Tokenizer.load(path)


def test_pretokenize_maps_normalized_pieces_to_raw_spans(tp: ModuleType) -> None:
    path = peer_data.minilm_tokenizer_json()
    ours = tp.Tokenizer.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    text = "Hello, WORLD!  Naïve café 中文 x1.5"
    spans = ours.pretokenize(text)
    pieces = [p for p, _ in hf.pre_tokenizer.pre_tokenize_str(hf.normalizer.normalize_str(text))]
    assert [ours.normalize(text[a:b]).strip() for a, b in spans] == pieces
    assert ours.normalize(text) == hf.normalizer.normalize_str(text)
