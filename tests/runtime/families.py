"""Real tokenizers of every family the runtime supports, loaded once per session.

Each loader returns a ``tokenpact.Tokenizer``; peer files come from
``tests/conformance/peer_data.py`` (skipped when they cannot be fetched). The decoder
chain variants reuse one trained Unigram vocabulary: a decoder only maps token strings,
so every Hugging Face decoder step can be exercised on real pieces.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

try:
    from conformance import peer_data  # tests/ on sys.path (pytest rootdir, benchmarks)
except ImportError:  # pragma: no cover - imported as tests.runtime
    from tests.conformance import peer_data  # type: ignore[no-redef]

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def _load(data: dict[str, Any]) -> Any:
    import tokenpact as tp

    path = Path(tempfile.mkdtemp(prefix="tp-runtime-")) / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return tp.Tokenizer.load(path)


@functools.cache
def _trained_unigram() -> dict[str, Any]:
    """A Unigram model trained by HF tokenizers over Metaspace, with <0xXX> pieces."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, pre_tokenizers, trainers
    from tokenizers.models import Unigram

    texts = [t for t in peer_data.harvest_texts(3) if len(t) < 4000][:600]
    tok = tokenizers.Tokenizer(Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=2500, special_tokens=SPECIALS, unk_token="<unk>", max_piece_length=10
    )
    tok.train_from_iterator(texts, trainer=trainer)
    data = json.loads(tok.to_str())
    model = data["model"]
    low = min(score for _, score in model["vocab"]) - 1.0
    model["vocab"] = [list(v) for v in model["vocab"]] + [[f"<0x{b:02X}>", low] for b in range(256)]
    model["byte_fallback"] = True
    return data


def _with_decoder(node: dict[str, Any] | None) -> Callable[[], Any]:
    def load() -> Any:
        data = copy.deepcopy(_trained_unigram())
        data["decoder"] = node
        return _load(data)

    return load


# Decoder chains seen in released tokenizer.json files, plus every other HF step.
CHAINS: dict[str, dict[str, Any] | None] = {
    "metaspace": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    "metaspace-never": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never"},
    "llama-bytefallback": {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    },
    "metaspace-bytefallback": {
        "type": "Sequence",
        "decoders": [{"type": "Metaspace", "replacement": "\u2581"}, {"type": "ByteFallback"}],
    },
    "fuse-then-steps": {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Replace", "pattern": {"String": "\u2581th"}, "content": "<TH>"},
            {"type": "Strip", "content": "\u2581", "start": 2, "stop": 2},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
            {"type": "WordPiece", "prefix": "##", "cleanup": True},
        ],
    },
    "regex-after-fuse": {
        "type": "Sequence",
        "decoders": [
            {"type": "Fuse"},
            {"type": "Replace", "pattern": {"Regex": "\u2581+"}, "content": " "},
        ],
    },
    "wordpiece": {"type": "WordPiece", "prefix": "\u2581", "cleanup": True},
    "ctc": {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "\u2581", "cleanup": True},
    "bpe-suffix": {"type": "BPEDecoder", "suffix": "\u2581"},
    "strip-per-token": {
        "type": "Sequence",
        "decoders": [
            {"type": "Strip", "content": "\u2581", "start": 1, "stop": 1},
            {"type": "Replace", "pattern": {"Regex": "[aeiou]"}, "content": "_"},
        ],
    },
    "none": None,
}


def _mistral(suffix: str) -> Callable[[], Any]:
    def load() -> Any:
        import tokenpact as tp

        models = [m for m in peer_data.mistral_models() if m.name.endswith(suffix)]
        return tp.Tokenizer.load(models[0])

    return load


def _hf(path: Callable[[], Path]) -> Callable[[], Any]:
    def load() -> Any:
        import tokenpact as tp

        return tp.Tokenizer.load(path())

    return load


def _converted_mistral() -> Any:
    module = importlib.import_module(
        peer_data.__name__.replace("peer_data", "test_hf_char_bpe_conformance")
    )
    converted_sentencepiece = module.converted_sentencepiece

    return _load(converted_sentencepiece(".model.v3"))


FAMILIES: dict[str, Callable[[], Any]] = {
    "llama3.2": _hf(peer_data.llama3_hf_json),
    "deepseek-v3": _hf(lambda: peer_data.deepseek_v3_files().tokenizer_json),
    "mistral-sp-v1": _mistral("tokenizer.model.v1"),
    "mistral-sp-v3": _mistral(".model.v3"),
    "mistral-sp-v7": _mistral(".model.v7"),
    "mistral-hf-bytefallback": _converted_mistral,
    "minilm-wordpiece": _hf(peer_data.minilm_tokenizer_json),
    **{f"unigram-{name}": _with_decoder(node) for name, node in CHAINS.items()},
}

_cache: dict[str, Any] = {}


def family(name: str) -> Any:
    """The tokenizer of ``name`` (loaded once)."""
    if name not in _cache:
        _cache[name] = FAMILIES[name]()
    return _cache[name]


@functools.cache
def texts() -> tuple[str, ...]:
    """Real multilingual text and Unicode edge cases (deterministic)."""
    pool = [t for t in peer_data.harvest_texts(0) if t]
    rng = random.Random(7)
    rng.shuffle(pool)
    return tuple(t[:1500] for t in pool[:1500])
