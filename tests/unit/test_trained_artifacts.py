"""Trained Unigram / WordPiece / character BPE tokenizers save, load, export and keep
their training record; Unigram IDs equal the trainer's Viterbi on generated text."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact import _native
from tokenpact.errors import ArtifactError, ContractError
from tokenpact.reference import char_bpe as cref

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "naïve café façade — 東京 in ünïcödé,  double  spaces\tand tabs",
    "def train(texts, *, vocab_size): return tokens  # 42",
] * 20


@pytest.fixture(scope="module")
def unigram() -> tp.train.UnigramTokenizer:
    return tp.train_unigram(TEXTS, vocab_size=120)


def test_unigram_is_a_sentencepiece_tokenizer(unigram: tp.train.UnigramTokenizer) -> None:
    assert isinstance(unigram, tp.Tokenizer) and unigram.semantics == "sentencepiece"
    assert unigram.training["algorithm"] == "unigram"
    assert unigram.training["stop_reason"] and "seed" in unigram.training
    assert unigram.special_tokens == {"<s>": 1, "</s>": 2}
    assert unigram.pieces[unigram.unk_id] == "<unk>"
    text = TEXTS[1]
    # SentencePiece's default whitespace cleanup: runs of spaces become one (tabs stay).
    assert unigram.decode(unigram.encode(text)) == text.replace("  ", " ")
    assert unigram.encode_batch([text, text]) == [unigram.encode(text)] * 2
    enc = unigram.encode_structured(text)
    assert enc.ids == unigram.encode(text)
    assert unigram.nbest(text, 2)[0][0] == unigram.encode(text)


def test_unigram_keep_whitespace_is_lossless() -> None:
    tok = tp.train_unigram(TEXTS, vocab_size=120, remove_extra_whitespaces=False)
    for text in [*TEXTS[:3], "  lead and trail  ", "a    b"]:
        assert tok.decode(tok.encode(text)) == text
    # The model says so, so sentencepiece (and a reload) keep the spaces too.
    assert not tok._sp_model.normalizer_spec.remove_extra_whitespaces  # type: ignore[attr-defined]


def test_unigram_normalization_is_in_the_model() -> None:
    tok = tp.train_unigram(TEXTS, vocab_size=150, normalization="nmt_nfkc")
    spec = tok.spec.sentencepiece_model.normalizer_spec
    assert spec.name == "nmt_nfkc" and spec.precompiled_charsmap
    # NFKC folds the full-width letters to ASCII before segmentation.
    assert tok.encode("\uff46\uff4f\uff58") == tok.encode("fox")
    with pytest.raises(tp.errors.ConfigError, match="normalization"):
        tp.train_unigram(TEXTS, vocab_size=150, normalization="nfkd")


def test_unigram_save_load_round_trip(unigram: tp.train.UnigramTokenizer, tmp_path: Path) -> None:
    unigram.save(tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {"tokenizer.model", "training.json", "manifest.json", "golden.json"}
    assert (tmp_path / "tokenizer.model").read_bytes() == unigram.provenance.files[
        "tokenizer.model"
    ]
    back = tp.Tokenizer.load(tmp_path)
    assert isinstance(back, tp.train.UnigramTokenizer)
    assert back.training == unigram.training
    assert back.semantic_hash == unigram.semantic_hash
    assert back.scores == unigram.scores
    for text in TEXTS[:3]:
        assert back.encode(text) == unigram.encode(text)
        assert back.log_likelihood(text) == unigram.log_likelihood(text)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    flags = manifest["training"]["trainer_flags_and_seed"]
    assert flags["vocab_size"] == 120 and flags["seed"] is None
    assert manifest["training"]["stop_reason"] == unigram.training["stop_reason"]


def test_unigram_export_sentencepiece(unigram: tp.train.UnigramTokenizer, tmp_path: Path) -> None:
    path = unigram.export_sentencepiece(tmp_path)
    assert path == tmp_path / "tokenizer.model"
    plain = tp.Tokenizer.from_sentencepiece(path)
    assert plain.encode(TEXTS[1]) == unigram.encode(TEXTS[1])
    with pytest.raises(ArtifactError, match="no SentencePiece model"):
        tp.train_bpe(TEXTS, vocab_size=300).export_sentencepiece(tmp_path)


def test_tampered_training_record_is_drift(
    unigram: tp.train.UnigramTokenizer, tmp_path: Path
) -> None:
    unigram.save(tmp_path)
    record = json.loads((tmp_path / "training.json").read_text())
    record["stop_reason"] = "edited"
    (tmp_path / "training.json").write_text(json.dumps(record))
    with pytest.raises(ContractError, match=r"training\.json"):
        tp.Tokenizer.load(tmp_path)


def test_loaded_sentencepiece_model_saves(
    unigram: tp.train.UnigramTokenizer, tmp_path: Path
) -> None:
    model = unigram.export_sentencepiece(tmp_path / "src.model")
    plain = tp.Tokenizer.load(model)
    plain.save(tmp_path / "saved")
    assert not (tmp_path / "saved" / "training.json").exists()
    back = tp.Tokenizer.load(tmp_path / "saved")
    assert type(back) is tp.Tokenizer and back.semantic_hash == plain.semantic_hash


def test_wordpiece_save_load_export(tmp_path: Path) -> None:
    tok = tp.train_wordpiece(TEXTS, vocab_size=150, lowercase=True)
    assert tok.semantics == "hf_pipeline" and tok.training["algorithm"] == "wordpiece"
    assert tok.special_token_roles["[UNK]"] == "unk"
    tok.save(tmp_path / "a")
    back = tp.Tokenizer.load(tmp_path / "a")
    assert back.training == tok.training and back.semantic_hash == tok.semantic_hash
    assert back.special_token_roles == tok.special_token_roles
    assert back.encode(TEXTS[1]) == tok.encode(TEXTS[1])
    exported = json.loads(tok.export_hf(tmp_path / "b").read_text())
    assert exported == json.loads((tmp_path / "a" / "tokenizer.json").read_text())
    assert exported["model"]["type"] == "WordPiece"


def test_char_bpe_save_load_round_trip(tmp_path: Path) -> None:
    tok = tp.train_char_bpe(TEXTS, num_merges=40)
    assert isinstance(tok, tp.Tokenizer) and tok.training["algorithm"] == "char_bpe"
    tok.save(tmp_path / "a")
    back = tp.Tokenizer.load(tmp_path / "a")
    assert back.training == tok.training and back.semantic_hash == tok.semantic_hash
    for text in TEXTS[:4]:
        assert back.encode(text) == tok.encode(text) == _char_bpe_reference(tok, text)
        assert back.decode(tok.encode(text)) == cref.decode(
            tok.encode(text), tok.char_pieces, unk_id=_unk(tok)
        )


def test_char_bpe_export_hf_is_loadable(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tp.train_char_bpe(TEXTS, num_merges=40)
    path = tok.export_hf(tmp_path)
    doc = json.loads(path.read_text())
    # The marker is spelled as the space that ends every word.
    marker = [(a, b.replace("</w>", " ")) for a, b in tok.char_merges if b.endswith("</w>")]
    assert marker and all(m in [tuple(x) for x in doc["model"]["merges"]] for m in marker)
    peer = tokenizers.Tokenizer.from_file(str(path))
    assert peer.get_vocab_size() == tok.vocab_size
    assert peer.encode("low lower").ids == tok.encode("low lower")


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="abcdefg hé東#\t", min_size=1, max_size=60))
def test_unigram_ids_equal_trainer_viterbi(text: str) -> None:
    tok = _trained()
    lattice = _native.UnigramCore(tok.pieces, tok.scores, tok.unk_id, None)
    ours, trainer = tok.encode(text), list(lattice.encode(text))
    if ours != trainer:
        # Only an exact tie may be broken differently (float32 sums vs float64).
        unk = min(x for x in tok.scores if math.isfinite(x)) - 10.0
        total = [
            math.fsum(tok.scores[i] if i != tok.unk_id else unk for i in x) for x in (ours, trainer)
        ]
        assert total[0] == total[1]


_CACHE: dict[str, tp.train.UnigramTokenizer] = {}


def _trained() -> tp.train.UnigramTokenizer:
    if "tok" not in _CACHE:
        _CACHE["tok"] = tp.train_unigram(
            # Whitespace kept: the trainer's lattice splits raw text exactly as this
            # model's normalizer does (test_trained_export_conformance covers cleanup).
            ["abc abd  bca ce fg hé 東東 ##"] * 5 + TEXTS,
            vocab_size=60,
            remove_extra_whitespaces=False,
        )
    return _CACHE["tok"]


def test_unigram_export_hf_refuses_other_shapes(tmp_path: Path) -> None:
    import sp_proto as pb

    pieces = [("<unk>", 0.0, pb.UNKNOWN), ("a", -1.0, pb.NORMAL), ("\u2581", -2.0, pb.NORMAL)]
    path = tmp_path / "m.model"
    path.write_bytes(pb.model(pieces, add_dummy_prefix=False))
    tok = tp.Tokenizer.from_sentencepiece(path)
    with pytest.raises(ArtifactError, match="add_dummy_prefix"):
        tok.export_hf(tmp_path / "out")


_MIXED = st.text(alphabet="abcdefg ABé東#,.!€-\t\n\u3000\u0301", min_size=0, max_size=60)


@settings(max_examples=80, deadline=None)
@given(_MIXED)
def test_wordpiece_ids_equal_trainer_engine(text: str) -> None:
    tok = _wordpiece()
    vocab = [p.decode() for p in tok.vocab()]
    engine = _native.WordPieceCore(vocab, tok.token_id("[UNK]"), "##", 100, True)
    assert tok.encode(text) == list(engine.encode(text))


@settings(max_examples=80, deadline=None)
@given(_MIXED)
def test_char_bpe_export_equals_tokenizers(text: str) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = _char_bpe()
    peer = tokenizers.Tokenizer.from_str(tok.provenance.files["tokenizer.json"].decode())
    assert peer.encode(text).ids == tok.encode(text) == _char_bpe_reference(tok, text)


def _unk(tok: tp.train.CharBpeTokenizer) -> int:
    assert tok.unk_id is not None
    return tok.unk_id


def _char_bpe_reference(tok: tp.train.CharBpeTokenizer, text: str) -> list[int]:
    """The IDs of the merges applied in rank order (``tokenpact.reference.char_bpe``)."""
    return cref.encode(text, tok.char_pieces, tok.char_merges, unk_id=_unk(tok))


def _wordpiece() -> tp.Tokenizer:
    if "wp" not in _OTHERS:
        _OTHERS["wp"] = tp.train_wordpiece(
            ["abc abd, bca! ce fg. hé 東東 ##"] * 5 + TEXTS, vocab_size=90, lowercase=True
        )
    return _OTHERS["wp"]


def _char_bpe() -> tp.train.CharBpeTokenizer:
    if "cb" not in _OTHERS:
        _OTHERS["cb"] = tp.train_char_bpe(
            ["abc abd, bca! ce fg. hé 東東 ##"] * 5 + TEXTS, num_merges=60
        )
    return _OTHERS["cb"]


_OTHERS: dict[str, Any] = {}
