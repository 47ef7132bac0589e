"""BPE over characters (``tokenizer.json`` BPE without ByteLevel) gives Hugging Face's
IDs, offsets, tokens and decodes.

Tokenizers, all built here with ``tokenizers`` (and transformers' SentencePiece
converter): CharBPETokenizer (BertNormalizer, BertPreTokenizer, suffix ``</w>``,
BPEDecoder); a BPE trained with ``continuing_subword_prefix="##"`` over Whitespace
(WordPiece decoder); a SentencePiece-style BPE with ``byte_fallback``, an unk token and
``ignore_merges`` behind Prepend/Replace and a ``▁`` Split (Metaspace + ByteFallback
decoder); a BPE with ``fuse_unk`` and a small alphabet (BPEDecoder); Mistral's
SentencePiece BPE models converted by ``LlamaConverter`` (Prepend/Replace normalizer,
byte_fallback, fuse_unk, decoder Replace, ByteFallback, Fuse, Strip).
Texts: harvested real text, the edge cases of ``peer_data`` and hostile strings.
"""

from __future__ import annotations

import importlib
import json
import random
from types import ModuleType
from typing import Any

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")

MAX_REPORTED = 5
NAMES = ["charbpe", "bpe-prefix", "bpe-byte-fallback", "bpe-fuse-unk", "llama-v1", "mistral-v3"]
BYTES = [f"<0x{b:02X}>" for b in range(256)]
HOSTILE = [
    "", " ", "   \t\n  ", "\u0301", "e\u0301\u0302\u0303", "🙂", "👩\u200d👩\u200d👧", "中文字符",
    "𠀀𪚥", "\x00\x7f", "\ufffd", "<0x41>", "</w>", "##", "▁", "▁▁ ▁", "<unk>", "[UNK]",
    "a" * 300, "ὕαλον ϕαγεῖν", "ﬁ ǅ", "\U0010ffff", " leading", "trailing ",
]  # fmt: skip


def _train(tok: Any, trainer: Any, seed: int) -> dict[str, Any]:
    tok.train_from_iterator(peer_data.harvest_texts(seed=seed), trainer=trainer)
    return json.loads(tok.to_str())


def _charbpe() -> dict[str, Any]:
    tok = tokenizers.implementations.CharBPETokenizer()
    tok.train_from_iterator(peer_data.harvest_texts(seed=3), vocab_size=3000)
    return json.loads(tok._tokenizer.to_str())


def _bpe_prefix() -> dict[str, Any]:
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        special_tokens=["[UNK]"],
        continuing_subword_prefix="##",
        limit_alphabet=300,
    )
    return _train(tok, trainer, seed=4)


def _bpe_byte_fallback() -> dict[str, Any]:
    """SentencePiece-like: Prepend + Replace to ``▁``, Split before each ``▁``."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
    tok.decoder = decoders.Sequence([decoders.Metaspace(), decoders.ByteFallback()])
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<unk>"], limit_alphabet=200)
    data = _train(tok, trainer, seed=5)
    vocab = data["model"]["vocab"]
    for piece in BYTES:  # the byte pieces a SentencePiece byte_fallback model carries
        vocab.setdefault(piece, len(vocab))
    data["model"]["ignore_merges"] = True
    return data


def _bpe_fuse_unk() -> dict[str, Any]:
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(
        models.BPE(unk_token="<unk>", fuse_unk=True, end_of_word_suffix="</w>")
    )
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["<unk>"], end_of_word_suffix="</w>", limit_alphabet=60
    )
    return _train(tok, trainer, seed=6)


def converted_sentencepiece(suffix: str) -> dict[str, Any]:
    """A mistral-common SentencePiece BPE model through transformers' LlamaConverter.

    transformers 5's converter calls ``SpmExtractor(path).extract(vocab_scores)`` and
    unpacks two values, which its extractor no longer returns; the shim restores the
    4.x contract with transformers' own ``generate_merges``.
    """
    pytest.importorskip("google.protobuf")
    pytest.importorskip("sentencepiece")
    convert = importlib.import_module("transformers.convert_slow_tokenizer")
    import sentencepiece as spm

    models = [m for m in peer_data.mistral_models() if m.name.endswith(suffix)]
    if len(models) != 1:
        pytest.fail(f"expected one mistral-common model ending in {suffix}, found {models}")
    path = str(models[0])

    class Extractor:
        def __init__(self, _path: str) -> None:
            pass

        def extract(self, vocab_scores: list[tuple[str, float]]) -> tuple[dict, list]:
            vocab = {w: i for i, (w, _) in enumerate(vocab_scores)}
            return vocab, convert.generate_merges(vocab, vocab_scores)

    class Slow:  # what LlamaConverter reads from a slow (SentencePiece) tokenizer
        vocab_file = path
        legacy = True
        add_prefix_space = True
        special_tokens: list[str] = []

        def __init__(self) -> None:
            self.sp_model = spm.SentencePieceProcessor(model_file=path)

        def convert_ids_to_tokens(self, i: int) -> str:
            return str(self.sp_model.id_to_piece(i))

    class Converter(convert.LlamaConverter):
        SpmExtractor = Extractor

    return json.loads(Converter(Slow()).converted().to_str())


BUILDERS = {
    "charbpe": _charbpe,
    "bpe-prefix": _bpe_prefix,
    "bpe-byte-fallback": _bpe_byte_fallback,
    "bpe-fuse-unk": _bpe_fuse_unk,
    "llama-v1": lambda: converted_sentencepiece("tokenizer.model.v1"),
    "mistral-v3": lambda: converted_sentencepiece(".model.v3"),
}


@pytest.fixture(scope="module", params=NAMES)
def pair(request: pytest.FixtureRequest, tp: ModuleType):
    from tokenpact.formats.hf_json import load_hf_data

    data = BUILDERS[request.param]()
    peer = tokenizers.Tokenizer.from_str(json.dumps(data))
    peer.no_truncation()
    peer.no_padding()
    return request.param, data, load_hf_data(data), peer


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts() + HOSTILE


def test_converted_file_has_the_expected_form(pair) -> None:
    """The SentencePiece conversion takes the path this engine implements (no Metaspace
    pre-tokenizer, which would be another helper's component)."""
    name, data, _, _ = pair
    model = data["model"]
    assert model["type"] == "BPE" and "ByteLevel" not in json.dumps(data["pre_tokenizer"])
    if name in ("llama-v1", "mistral-v3"):
        assert data["pre_tokenizer"] is None
        assert [n["type"] for n in data["normalizer"]["normalizers"]] == ["Prepend", "Replace"]
        assert (model["byte_fallback"], model["fuse_unk"], model["unk_token"]) == (
            True,
            True,
            "<unk>",
        )
        kinds = [d["type"] for d in data["decoder"]["decoders"]]
        assert kinds == ["Replace", "ByteFallback", "Fuse", "Strip"]


def test_ids_offsets_identical(pair, texts: list[str]) -> None:
    name, _, ours, peer = pair
    problems: list[str] = []
    count = 0
    for text in texts:
        enc = ours.encode_structured(text, allowed_special="all")
        ref = peer.encode(text, add_special_tokens=False)
        mine = list(zip(enc.ids, enc.offsets, strict=True))
        theirs = [(i, tuple(o)) for i, o in zip(ref.ids, ref.offsets, strict=True)]
        if mine != theirs:
            count += 1
            if len(problems) < MAX_REPORTED:
                pairs = enumerate(zip(mine, theirs, strict=False))
                i = next((k for k, (a, b) in pairs if a != b), min(len(mine), len(theirs)))
                problems.append(
                    f"{text[:50]!r}: at {i} ours {mine[i : i + 3]} peer {theirs[i : i + 3]}"
                )
    assert count == 0, f"{name}: {count}/{len(texts)} differ:\n" + "\n".join(problems)


def test_decode_identical(pair, texts: list[str]) -> None:
    name, _, ours, peer = pair
    special = set(ours.special_tokens.values())
    problems = []
    for text in texts[::2]:
        ids = peer.encode(text, add_special_tokens=False).ids
        for skip in (False, True):
            want = peer.decode(ids, skip_special_tokens=skip)
            got = ours.decode([i for i in ids if not (skip and i in special)], errors="replace")
            if got != want and len(problems) < MAX_REPORTED:
                problems.append(f"skip={skip} {text[:40]!r}: ours {got[:60]!r} peer {want[:60]!r}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_random_id_sequences_decode_identical(pair) -> None:
    """Arbitrary IDs: byte pieces out of order (invalid UTF-8), specials, suffixes."""
    name, _, ours, peer = pair
    rng = random.Random(11)
    size = peer.get_vocab_size(with_added_tokens=True)
    byte_ids = [peer.token_to_id(b) for b in BYTES if peer.token_to_id(b) is not None]
    problems = []
    for _ in range(400):
        pool = byte_ids if byte_ids and rng.random() < 0.5 else range(size)
        ids = [
            rng.choice(pool) if rng.random() < 0.6 else rng.randrange(size)
            for _ in range(rng.randint(0, 12))
        ]
        want = peer.decode(ids, skip_special_tokens=False)
        got = ours.decode(ids, errors="replace")
        if got != want and len(problems) < MAX_REPORTED:
            problems.append(f"{ids}: ours {got!r} peer {want!r}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_pieces_tokens_and_fast_paths(pair, texts: list[str]) -> None:
    name, _, ours, peer = pair
    vocab = ours.vocab()
    assert [p.decode("utf-8") for p in vocab] == [peer.id_to_token(i) for i in range(len(vocab))]
    for i in (0, len(vocab) // 2, len(vocab) - 1):
        assert ours.token_bytes(i) == peer.id_to_token(i).encode("utf-8")
    sample = texts[:300]
    for text in sample[::10]:
        enc = ours.encode_structured(text, allowed_special="all")
        assert enc.tokens == peer.encode(text, add_special_tokens=False).tokens, name
    assert [ours.encode(t) for t in sample] == [ours.encode_structured(t).ids for t in sample]
    assert ours.encode_batch(sample, threads=2) == [ours.encode(t) for t in sample]


def test_dropout_is_recorded_and_not_sampled(tp: ModuleType) -> None:
    """Policy (docs/PIPELINE.md): a file's ``dropout`` loads and is recorded, ``encode``
    stays deterministic (HF samples; stochastic segmentation is ``tp.bpe_dropout``)."""
    from tokenpact.formats.hf_json import load_hf_data

    data = _charbpe()
    data["model"]["dropout"] = 0.5
    ours = load_hf_data(data)
    assert ours.source["dropout"] == 0.5
    sampling = tokenizers.Tokenizer.from_str(json.dumps(data))
    exact = tokenizers.Tokenizer.from_str(
        json.dumps({**data, "model": {**data["model"], "dropout": None}})
    )
    text = "tokenization of several unremarkable words, repeatedly"
    samples = {tuple(sampling.encode(text).ids) for _ in range(30)}
    assert len(samples) > 1  # HF draws a segmentation per call
    assert {tuple(ours.encode(text)) for _ in range(30)} == {tuple(exact.encode(text).ids)}
