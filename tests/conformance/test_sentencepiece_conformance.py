"""SentencePiece ``.model`` files load with IDs, offsets and decoding identical to
``sentencepiece``.

Models: mistral-common's SentencePiece files (BPE with byte fallback, user-defined and
control pieces), plus Unigram, BPE, char and word models trained here by ``sentencepiece`` on
harvested text, with byte fallback on and off, a user-defined and a control symbol, and
SentencePiece's default ``nmt_nfkc`` normalizer (a precompiled charsmap). Peer:
``sentencepiece.SentencePieceProcessor`` on the same file; tokenpact never imports it.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from . import peer_data

spm = pytest.importorskip("sentencepiece")

MAX_REPORTED = 5
# Trained models: (model_type, byte_fallback, extra trainer options).
TRAINED = {
    "unigram": ("unigram", False, {}),
    "unigram-bytes": ("unigram", True, {"split_digits": True}),
    "bpe": ("bpe", False, {}),
    "bpe-bytes": ("bpe", True, {"remove_extra_whitespaces": False}),
    # char and word: one lookup per character (user-defined pieces whole) / per word.
    "char": ("char", False, {"hard_vocab_limit": False}),
    "char-bytes": ("char", True, {"hard_vocab_limit": False}),
    "word": ("word", False, {}),
}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory, texts: list[str]) -> Path:
    path = tmp_path_factory.mktemp("spm") / "train.txt"
    lines = [line for t in texts[::2] for line in t.splitlines() if line.strip()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _train(corpus: Path, name: str) -> Path:
    model_type, byte_fallback, extra = TRAINED[name]
    prefix = corpus.parent / name
    options: dict[str, Any] = {
        "input": str(corpus),
        "model_prefix": str(prefix),
        "model_type": model_type,
        "vocab_size": 1500,
        "byte_fallback": byte_fallback,
        "character_coverage": 0.995,  # leave rare characters unknown
        "user_defined_symbols": ["<tool>"],
        "control_symbols": ["<ctl>"],
        "num_threads": 2,
        "input_sentence_size": 20000,
        "shuffle_input_sentence": False,
        "minloglevel": 2,
        **extra,
    }
    spm.SentencePieceTrainer.train(**options)
    return prefix.with_suffix(".model")


def _models(corpus: Path) -> dict[str, Path]:
    models = {name: _train(corpus, name) for name in TRAINED}
    for path in peer_data.mistral_models():
        models[path.name] = path
    return models


@pytest.fixture(scope="module")
def models(corpus_file: Path) -> dict[str, Path]:
    return _models(corpus_file)


def _pair(tp: ModuleType, path: Path) -> tuple[Any, Any]:
    return tp.Tokenizer.load(path), spm.SentencePieceProcessor(model_file=str(path))


def _peer_pieces(peer: Any, text: str) -> list[tuple[int, int, int]]:
    """(id, begin, end) of each piece from sentencepiece's serialized SentencePieceText
    (decoded with tokenpact's protobuf reader: this environment has no ``protobuf``)."""
    from tokenpact.formats.sentencepiece_model import _fields

    out = []
    for number, _, value in _fields(peer.encode(text, out_type="serialized_proto"), "text"):
        if number == 2:
            fields = {n: v for n, _, v in _fields(value, "piece")}
            out.append((fields.get(2, 0), fields.get(4, 0), fields.get(5, 0)))
    return out


def _report(name: str, bad: list[str], count: int, total: int) -> str:
    return f"{name}: {count}/{total} texts differ:\n" + "\n".join(bad)


def test_ids_and_decode_identical(
    tp: ModuleType, models: dict[str, Path], texts: list[str]
) -> None:
    failures = []
    for name, path in models.items():
        ours, peer = _pair(tp, path)
        bad: list[str] = []
        count = 0
        for text in texts:
            ids = ours.encode(text)
            ref = peer.encode(text, out_type=int)
            if ids != ref or ours.decode(ref) != peer.decode(ref):
                count += 1
                if len(bad) < MAX_REPORTED:
                    at = next(
                        (i for i, (a, b) in enumerate(zip(ids, ref, strict=False)) if a != b), 0
                    )
                    bad.append(f"{text[:50]!r} at {at}: {ids[at : at + 4]} vs {ref[at : at + 4]}")
        if count:
            failures.append(_report(name, bad, count, len(texts)))
    assert not failures, "\n".join(failures)


def test_offsets_identical(tp: ModuleType, models: dict[str, Path], texts: list[str]) -> None:
    failures = []
    for name, path in models.items():
        ours, peer = _pair(tp, path)
        bad: list[str] = []
        count = 0
        for text in texts[::3]:
            enc = ours.encode_structured(text, coordinate="raw_utf8_bytes")
            pieces = _peer_pieces(peer, text)
            ref = [(b, e) for _, b, e in pieces]
            if enc.ids != [i for i, _, _ in pieces] or enc.offsets != ref:
                count += 1
                if len(bad) < MAX_REPORTED:
                    bad.append(f"{text[:50]!r}: {enc.offsets[:4]} vs {ref[:4]}")
        if count:
            failures.append(_report(name, bad, count, len(texts[::3])))
    assert not failures, "\n".join(failures)


def test_batch_equals_single(tp: ModuleType, models: dict[str, Path], texts: list[str]) -> None:
    tok = tp.Tokenizer.load(models["unigram"])
    sample = texts[:400]
    single = [tok.encode(t) for t in sample]
    assert tok.encode_batch(sample, threads=2) == single
    ids, offsets = tok.encode_batch_flat(sample, threads=2)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(sample))] == single


def test_control_pieces_need_permission(tp: ModuleType, models: dict[str, Path]) -> None:
    tok, peer = _pair(tp, models["bpe-bytes"])
    text = "say <ctl> and <s> then <tool>"
    # Plain encode treats control spellings as text, as sentencepiece does.
    assert tok.encode(text) == peer.encode(text)
    assert tok.special_tokens["<ctl>"] not in tok.encode(text)
    assert tok.token_id("<tool>") in tok.encode(text)  # user-defined: ordinary vocabulary
    trusted = tok.encode(text, allowed_special={"<ctl>"})
    assert tok.special_tokens["<ctl>"] in trusted
    assert tok.encode("hi", add_special_tokens=True)[0] == tok.bos_id == peer.bos_id()
    assert (tok.eos_id, tok.pad_id) == (peer.eos_id(), None)


def test_decode_replaces_broken_bytes_like_sentencepiece(
    tp: ModuleType, models: dict[str, Path]
) -> None:
    tok, peer = _pair(tp, models["unigram-bytes"])
    euro = [peer.piece_to_id(f"<0x{b:02X}>") for b in "€".encode()]
    for ids in (euro[:2], euro[1:], [euro[0], *euro], euro + euro[:1]):
        assert tok.decode(ids, errors="replace") == peer.decode(ids)
    with pytest.raises(tp.DecodeError):
        tok.decode(euro[:2])


def test_semantic_hash_is_stable(tp: ModuleType, models: dict[str, Path]) -> None:
    path = models["unigram"]
    assert tp.Tokenizer.load(path).semantic_hash == tp.Tokenizer.load(path).semantic_hash
    assert tp.Tokenizer.load(path).semantic_hash != tp.Tokenizer.load(models["bpe"]).semantic_hash


def test_normalizer_identical(tp: ModuleType, models: dict[str, Path], texts: list[str]) -> None:
    """The precompiled charsmap (nmt_nfkc), whitespace rules and dummy prefix."""
    for name in ("unigram", "bpe-bytes"):
        ours, peer = _pair(tp, models[name])
        differ = [t for t in texts if ours._core.normalize(t) != peer.normalize(t)]
        assert not differ, f"{name}: {len(differ)} texts normalize differently: {differ[:3]!r}"
