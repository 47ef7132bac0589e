"""Unigram, Metaspace, ByteLevel(add_prefix_space), Nmt and Precompiled in
``tokenizer.json`` give Hugging Face's IDs and offsets.

Tokenizers, all built here from harvested text:

* ``SentencePieceUnigramTokenizer`` (Nmt + NFKC + Replace, Metaspace, Unigram);
* ``models.Unigram`` trained with ``UnigramTrainer``, with and without byte fallback
  (``<0xXX>`` pieces appended), under Metaspace with every ``prepend_scheme`` and
  ``split`` on and off, and special tokens inside the text;
* a ``sentencepiece`` Unigram model converted by transformers' ``SpmConverter``
  (Precompiled charsmap normalizer, Metaspace without split);
* ``ByteLevelBPETokenizer(add_prefix_space=True)`` and the same model behind
  ``RobertaProcessing(trim_offsets=True, add_prefix_space=True)``.

Texts: harvested real text with edge cases (``peer_data.harvest_texts``) plus hostile
strings. The peer is ``tokenizers`` loading the same file; decoders other than
ByteLevel come with the decoder branch, so encode comparisons load the files without
their decoder and the decode comparisons are expected to fail until then.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")

MAX_REPORTED = 5
SPECIALS = ["<unk>", "<s>", "</s>", "<sep>"]
# fmt: off
HOSTILE = [
    "", " ", "  ", "   a", "a   ", " a  b   c ", "\u2581", "\u2581\u2581x", " \u2581 x",
    "🙂", "👩\u200d👩\u200d👧", "a🙂b", "日本語のテキスト", "𠀀𪚥", "e\u0301\u0301", "\u0301",
    "ﬁﬂ ①②", "ＡＢＣ", "\u00a0\u3000x", "\x01\x0b\x7f", "\u200b\ufeff\ufffd", "x\ty\nz",
    "<s>", "<s><s>", " <s> ", "a<s>b", "<s> a", "a </s>", "<s>\u2581a", "<sep>  x  <sep>",
    "ꙮ\U000e0100\U0010fffd",
]
# fmt: on


def _texts() -> list[str]:
    return peer_data.harvest_texts() + HOSTILE


def _train_texts(seed: int, n: int = 700) -> list[str]:
    return peer_data.harvest_texts(seed=seed)[:n]


def _compare(ours: Any, peer: Any, texts: list[str], *, add: bool = False) -> list[str]:
    """Texts whose (ID, offsets) pairs differ, described (at most MAX_REPORTED)."""
    problems: list[str] = []
    count = 0
    for text in texts:
        ref = peer.encode(text, add_special_tokens=add)
        enc = ours.encode_structured(text, allowed_special="all", add_special_tokens=add)
        mine = list(zip(enc.ids, enc.offsets, strict=True))
        theirs = [(i, tuple(o)) for i, o in zip(ref.ids, ref.offsets, strict=True)]
        if mine != theirs:
            count += 1
            if len(problems) < MAX_REPORTED:
                i = next(
                    (k for k, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
                    min(len(mine), len(theirs)),
                )
                problems.append(
                    f"{text[:50]!r}: at {i} ours {mine[i : i + 3]} peer {theirs[i : i + 3]}"
                )
    if count:
        problems.insert(0, f"{count}/{len(texts)} texts differ")
    return problems


def _load_pair(tp: ModuleType, data: dict[str, Any], path: Path) -> tuple[Any, Any]:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    peer.no_padding()
    return tp.Tokenizer.load(path), peer


def _without_decoder(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "decoder": None}


# ---------------------------------------------------------------- trained tokenizers
@pytest.fixture(scope="module")
def sp_unigram() -> dict[str, Any]:
    from tokenizers.implementations import SentencePieceUnigramTokenizer

    tok = SentencePieceUnigramTokenizer()
    tok.train_from_iterator(
        _train_texts(4), vocab_size=6000, special_tokens=SPECIALS, unk_token="<unk>"
    )
    return json.loads(tok.to_str())


@pytest.fixture(scope="module")
def trained_unigram() -> dict[str, Any]:
    """UnigramTrainer over Metaspace; the vocabulary is shared by the variants below."""
    from tokenizers import pre_tokenizers, trainers
    from tokenizers.models import Unigram

    tok = tokenizers.Tokenizer(Unigram())
    tok.normalizer = tokenizers.normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=3000, special_tokens=SPECIALS, unk_token="<unk>", max_piece_length=12
    )
    tok.train_from_iterator(_train_texts(5, 500), trainer=trainer)
    return json.loads(tok.to_str())


def _with_byte_fallback(data: dict[str, Any]) -> dict[str, Any]:
    """The model with ``<0xXX>`` pieces (lowest scores) and ``byte_fallback`` on."""
    model = dict(data["model"])
    vocab = [list(v) for v in model["vocab"]]
    low = min(score for _, score in vocab) - 1.0
    vocab += [[f"<0x{b:02X}>", low] for b in range(256)]
    model.update(vocab=vocab, byte_fallback=True)
    return {**data, "model": model}


def _metaspace(data: dict[str, Any], scheme: str, split: bool) -> dict[str, Any]:
    node = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme}
    return {**data, "pre_tokenizer": {**node, "split": split}}


def _special_texts(texts: list[str]) -> list[str]:
    """Texts with special tokens at the start, in the middle and at the end."""
    out = []
    for i, text in enumerate(texts[::7]):
        cut = len(text) // 2
        token = SPECIALS[1 + i % 3]
        out += [token + text, text[:cut] + token + text[cut:], text + token, f"{token} {text}"]
    return out


def test_sentencepiece_unigram_tokenizer(tp: ModuleType, sp_unigram, tmp_path: Path) -> None:
    assert [n["type"] for n in sp_unigram["normalizer"]["normalizers"]][:2] == ["Nmt", "NFKC"]
    ours, peer = _load_pair(tp, _without_decoder(sp_unigram), tmp_path / "tokenizer.json")
    texts = _texts()
    assert not _compare(ours, peer, texts + _special_texts(texts[:700]))


@pytest.mark.parametrize("byte_fallback", [False, True])
@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_trained_unigram_metaspace_variants(
    tp: ModuleType, trained_unigram, tmp_path: Path, byte_fallback: bool, scheme: str, split: bool
) -> None:
    data = _metaspace(_without_decoder(trained_unigram), scheme, split)
    if byte_fallback:
        data = _with_byte_fallback(data)
    ours, peer = _load_pair(tp, data, tmp_path / "tokenizer.json")
    texts = _texts()
    sample = texts[:: 3 if split else 5] + HOSTILE
    assert not _compare(ours, peer, sample + _special_texts(sample[:600]))


def test_unigram_engine_matches_peer_on_unknowns(tp: ModuleType, tmp_path: Path) -> None:
    """A tiny vocabulary: most characters are unknown (fused runs, byte fallback)."""
    vocab = [["<unk>", 0.0], ["a", -1.0], ["b", -1.5], ["ab", -2.0], ["\u2581", -1.2]]
    vocab += [["\u2581a", -2.5], ["<0xC3>", -8.0], ["<0xA9>", -8.0], ["é", -9.0]]
    for fallback in (False, True):
        data = {
            "version": "1.0",
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"},
            "post_processor": None,
            "decoder": None,
            "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": fallback},
        }
        ours, peer = _load_pair(tp, data, tmp_path / "tokenizer.json")
        texts = ["ab xé ü abab", "éé", "xyz", "a<unk>b", "  ", "aé", "ü\u2581a"] + HOSTILE
        assert not _compare(ours, peer, texts + peer_data.edge_case_texts()[:200]), fallback


# ---------------------------------------------------------- sentencepiece, converted
@pytest.fixture(scope="module")
def spm_converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A sentencepiece Unigram model (nmt_nfkc charsmap) through transformers'
    SpmConverter: Precompiled normalizer, Metaspace(split=False), Unigram."""
    spm = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    converter = pytest.importorskip("transformers.convert_slow_tokenizer")
    directory = tmp_path_factory.mktemp("spm-hf")
    corpus = directory / "train.txt"
    lines = [line for t in _train_texts(6, 1200) for line in t.splitlines() if line.strip()]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / "m"),
        model_type="unigram",
        vocab_size=1500,
        character_coverage=0.995,
        num_threads=2,
        minloglevel=2,
    )
    proto = converter.import_protobuf().ModelProto()
    proto.ParseFromString((directory / "m.model").read_bytes())
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = converter.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
    return json.loads(tok.to_str())


def test_sentencepiece_converted_with_precompiled(
    tp: ModuleType, spm_converted, tmp_path: Path
) -> None:
    kinds = [n["type"] for n in spm_converted["normalizer"]["normalizers"]]
    assert kinds[0] == "Precompiled"
    ours, peer = _load_pair(tp, _without_decoder(spm_converted), tmp_path / "tokenizer.json")
    assert not _compare(ours, peer, _texts())


def test_precompiled_normalizer_offsets(tp: ModuleType, spm_converted) -> None:
    node = spm_converted["normalizer"]["normalizers"][0]
    peer = tokenizers.normalizers.Precompiled(
        __import__("base64").b64decode(node["precompiled_charsmap"])
    )
    for text in _texts()[::5] + HOSTILE:
        ours_text, align = tp._native.normalize_str(json.dumps(node), text)
        assert ours_text == peer.normalize_str(text), text[:40]
        got = tp._native.normalize_str(json.dumps({"type": "Nmt"}), text)[0]
        assert got == tokenizers.normalizers.Nmt().normalize_str(text), text[:40]
        assert len(align) == len(ours_text.encode("utf-8"))


# ------------------------------------------------------- byte level, prefix space
@pytest.fixture(scope="module")
def prefix_bpe() -> dict[str, Any]:
    from tokenizers.implementations import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer(add_prefix_space=True)
    tok.train_from_iterator(_train_texts(7, 600), vocab_size=2000, special_tokens=["<s>", "</s>"])
    return json.loads(tok.to_str())


def test_byte_level_add_prefix_space(tp: ModuleType, prefix_bpe, tmp_path: Path) -> None:
    assert prefix_bpe["pre_tokenizer"]["add_prefix_space"] is True
    ours, peer = _load_pair(tp, prefix_bpe, tmp_path / "tokenizer.json")
    texts = _texts()
    assert not _compare(ours, peer, texts + _special_texts(texts[:700]))
    for text in ["hello world", " lead", "x<s>y"] + HOSTILE:
        ids = peer.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == peer.decode(ids, skip_special_tokens=False), text


def test_roberta_like_trim_offsets(tp: ModuleType, prefix_bpe, tmp_path: Path) -> None:
    vocab = prefix_bpe["model"]["vocab"]
    processor = {
        "type": "RobertaProcessing",
        "sep": ["</s>", vocab["</s>"]],
        "cls": ["<s>", vocab["<s>"]],
        "trim_offsets": True,
        "add_prefix_space": True,
    }
    ours, peer = _load_pair(tp, {**prefix_bpe, "post_processor": processor}, tmp_path / "t.json")
    assert not _compare(ours, peer, _texts(), add=True)


# -------------------------------------------------------------------- decoding
def test_decode_sentencepiece_unigram(tp: ModuleType, sp_unigram, tmp_path: Path) -> None:
    ours, peer = _load_pair(tp, sp_unigram, tmp_path / "tokenizer.json")
    for text in _texts()[::9] + HOSTILE:
        ids = peer.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == peer.decode(ids, skip_special_tokens=False), text[:40]


def test_decode_converted_sentencepiece(tp: ModuleType, spm_converted, tmp_path: Path) -> None:
    ours, peer = _load_pair(tp, spm_converted, tmp_path / "tokenizer.json")
    for text in _texts()[::9] + HOSTILE:
        ids = peer.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == peer.decode(ids, skip_special_tokens=False), text[:40]


def test_decode_trained_unigram_byte_fallback(
    tp: ModuleType, trained_unigram, tmp_path: Path
) -> None:
    data = _with_byte_fallback(trained_unigram)
    data["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    }
    ours, peer = _load_pair(tp, data, tmp_path / "tokenizer.json")
    for text in _texts()[::9] + HOSTILE:
        ids = peer.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == peer.decode(ids, skip_special_tokens=False), text[:40]


def test_saved_artifacts_reload_with_same_identity(
    tp: ModuleType, sp_unigram, prefix_bpe, tmp_path: Path
) -> None:
    text = "Hello  wörld ﬁ <s>日本 🙂"
    hashes = set()
    for name, data in (("unigram", _without_decoder(sp_unigram)), ("prefix", prefix_bpe)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tok = tp.Tokenizer.load(path)
        tok.save(tmp_path / name)
        again = tp.Tokenizer.load(tmp_path / name)
        assert again.semantic_hash == tok.semantic_hash, name
        assert again.encode_structured(text) == tok.encode_structured(text), name
        hashes.add(tok.semantic_hash)
    # The prefix-space step is part of the identity.
    plain = {**prefix_bpe, "pre_tokenizer": {**prefix_bpe["pre_tokenizer"]}}
    plain["pre_tokenizer"]["add_prefix_space"] = False
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain, ensure_ascii=False), encoding="utf-8")
    hashes.add(tp.Tokenizer.load(path).semantic_hash)
    assert len(hashes) == 3
