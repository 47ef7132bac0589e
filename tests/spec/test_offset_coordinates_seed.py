"""Offsets in normalized-text coordinates as well as raw ones (seed 0x02A: "é" and
"e\\u0301" differ in bytes and codepoints, not once normalized), and ``None`` rather than
``(0, 0)`` for inserted control tokens (seed 0x04A)."""

from __future__ import annotations

import pytest

from tokenpact import SpecialToken, Tokenizer
from tokenpact.errors import ConfigError

try:  # tests/ on sys.path (pytest rootdir)
    from conformance import peer_data
except ImportError:  # pragma: no cover
    from tests.conformance import peer_data  # type: ignore[no-redef]


@pytest.fixture(scope="module")
def bert() -> Tokenizer:
    return Tokenizer.load(peer_data.minilm_tokenizer_json())


def test_composed_and_decomposed_e_agree_only_in_normalized_coordinates(bert: Tokenizer) -> None:
    composed, decomposed = "café au lait", "cafe\u0301 au lait"
    raw = [bert.encode_structured(t).offsets for t in (composed, decomposed)]
    assert raw[0][1] == (5, 7) and raw[1][1] == (6, 8)  # codepoints differ
    utf8 = [bert.encode_structured(t, coordinate="raw_utf8_bytes").offsets for t in (composed,)]
    assert utf8[0][0] == (0, 5)  # "é" is two bytes
    coordinate = "normalized_codepoints"
    norm = [bert.encode_structured(t, coordinate=coordinate) for t in (composed, decomposed)]
    assert norm[0].offsets == norm[1].offsets == [(0, 4), (5, 7), (8, 11), (11, 12)]
    assert norm[0].original_length == len(bert.normalize(composed)) == 12
    assert norm[0].coordinate == "normalized_codepoints"


def test_normalized_offsets_spell_each_wordpiece(bert: Tokenizer) -> None:
    texts = peer_data.edge_case_texts()[:300] + ["Naïve CAFÉ!", "Ｆｕｌｌｗｉｄｔｈ ﬁsh"]
    exact = partial = 0
    for text in texts:
        normalized = bert.normalize(text)
        enc = bert.encode_structured(text, coordinate="normalized_codepoints")
        enc.validate(bert.vocab_size)
        for token, (a, b) in zip(enc.tokens, enc.offsets, strict=True):
            if token == "[UNK]":
                continue
            piece = token.removeprefix("##")
            # A token holding part of what one raw character normalizes to (a Hangul
            # syllable decomposed into jamo) covers that character's whole normalized form.
            assert piece in normalized[a:b], (text, token, (a, b))
            exact += normalized[a:b] == piece
            partial += normalized[a:b] != piece
    assert exact > 1000 and partial < exact / 20, (exact, partial)


def test_without_a_normalizer_normalized_offsets_are_raw_offsets() -> None:
    tok = Tokenizer.from_merges([(97, 98)])
    text = "ab é ab\u0301 🙂"
    raw = tok.encode_structured(text)
    assert tok.encode_structured(text, coordinate="normalized_codepoints").offsets == raw.offsets


def test_inserted_controls_have_no_span_but_spelled_ones_do(bert: Tokenizer) -> None:
    enc = bert.encode_structured("hello [SEP] world", "again", add_special_tokens=True)
    assert enc.offsets[0] == (0, 0)  # HF's value for [CLS], kept
    spans = enc.span_offsets
    assert spans[0] is None and spans[-1] is None
    # Plain encode treats "[SEP]" in text as text; allowed, it is a control with a span.
    allowed = bert.encode_structured("hello [SEP]", allowed_special="all", add_special_tokens=True)
    assert allowed.tokens == ["[CLS]", "hello", "[SEP]", "[SEP]"]
    assert allowed.span_offsets == [None, (0, 5), (6, 11), None]
    padded = Tokenizer.from_merges([], special_tokens=[SpecialToken("<pad>", "pad")])
    from tokenpact import Padding

    enc = padded.encode_structured("ab", padding=Padding(length=4))
    assert enc.offsets == [(0, 1), (1, 2), (0, 0), (0, 0)]
    assert enc.span_offsets == [(0, 1), (1, 2), None, None]


def test_sentencepiece_normalized_offsets_are_a_typed_error() -> None:
    import sentencepiece as spm  # noqa: F401  (the test extra has it)

    files = peer_data.mistral_models()
    tok = Tokenizer.load(files[0])
    with pytest.raises(ConfigError, match="SentencePiece"):
        tok.encode_structured("hello", coordinate="normalized_codepoints")
