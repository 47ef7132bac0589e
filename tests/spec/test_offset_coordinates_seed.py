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
    # Without the file's own padding to 128 tokens, so encodings hold the text's tokens.
    return Tokenizer.load(peer_data.minilm_tokenizer_json()).with_padding(None)


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


def test_sentencepiece_normalized_offsets_spell_each_piece() -> None:
    # Mistral's SentencePiece BPE: the dummy prefix and meta symbol are normalization, so
    # a piece "▁word" spans " word" in tok.normalize(text), or "word" at the very start.
    tok = Tokenizer.load(peer_data.mistral_models()[0])
    texts = [*peer_data.edge_case_texts()[:200], "Hello   world", "  x", "Ｆｕｌｌ ﬁ"]
    exact = 0
    for text in texts:
        normalized = tok.normalize(text)
        enc = tok.encode_structured(text, coordinate="normalized_codepoints")
        assert enc.original_length == len(normalized)
        for token, (a, b) in zip(enc.tokens, enc.offsets, strict=True):
            assert 0 <= a <= b <= len(normalized)
            if token.startswith("<0x") or token == "<unk>":
                continue  # byte pieces and unknowns spell no text of their own
            piece = token.replace("\u2581", " ")
            # At the start, the dummy prefix the piece begins with is not in the text.
            dropped = piece[1:] if a == 0 and piece.startswith(" ") else piece
            assert normalized[a:b] in (piece, dropped), (text, token, (a, b))
            exact += 1
    assert exact > 500


def test_an_unknown_coordinate_is_a_typed_error(bert: Tokenizer) -> None:
    with pytest.raises(ConfigError, match="normalized_codepoints"):
        bert.encode_structured("x", coordinate="normalized")


def test_sentencepiece_expansion_splits_exactly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("fish and chips\nfine fish\nshelf\n" * 20, encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(tmp_path / "char"),
        model_type="char",
        vocab_size=20,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    tok = Tokenizer.load(tmp_path / "char.model")
    text = "\ufb01sh  fine"  # NFKC: "ﬁ" -> "fi"; runs of spaces collapse
    assert tok.normalize(text) == "fish fine"
    enc = tok.encode_structured(text, coordinate="normalized_codepoints")
    normalized = tok.normalize(text)
    assert [normalized[a:b] for a, b in enc.offsets] == [
        "", "f", "i", "s", "h", " ", "f", "i", "n", "e"
    ]  # fmt: skip
    # In raw coordinates both halves of the ligature point at the one raw character.
    raw = tok.encode_structured(text).offsets
    assert raw[1][0] == raw[2][0] == 0
