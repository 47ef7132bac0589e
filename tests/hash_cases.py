"""Every tokenizer the tests load or train, by name, for the hash fixture.

``tests/fixtures/hashes.json`` records the semantic and release hash of each case;
``tests/unit/test_hash_fixture.py`` rebuilds every case and compares. A change to a
canonical config or a hash is a versioned change: regenerate the fixture with
``python scripts/record_hashes.py`` and list the change in CHANGELOG.md.

Trained cases use generated multilingual text (fixed seed), so they do not depend on
the interpreter's standard library the way harvested text does.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # tests/ on sys.path (pytest rootdir, scripts add it)
    from chat import chat_data
    from conformance import peer_data
except ImportError:  # pragma: no cover - imported as tests.hash_cases from the repo root
    from tests.chat import chat_data  # type: ignore[no-redef]
    from tests.conformance import peer_data  # type: ignore[no-redef]

_WORDS = (
    "the cat sleeps on a warm mat while rain falls outside tonight "
    "der Hund läuft schnell über die grüne Wiese und bellt laut "
    "кошка спит на тёплом коврике пока идёт дождь "
    "猫 は 暖かい マット の 上 で 眠る 雨 が 降る "
    "def encode ( self , text ) : return [ ] for i in range ( 10 ) "
    "naïve café déjà vu 1234 56.78 9,000 €20 $3.50 -- >>> <|eot|>"
).split()


def generated_texts(count: int = 400, seed: int = 20261201) -> list[str]:
    """Deterministic multilingual sentences (the same on every machine)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(3, 25))]
        sep = rng.choice([" ", " ", " ", "\n", "  "])
        texts.append(sep.join(words) + rng.choice([".", "!", "?", "", "\n"]))
    return texts


def _real_cases(tp: Any) -> dict[str, Callable[[], Any]]:
    cases: dict[str, Callable[[], Any]] = {
        "tiktoken/cl100k": lambda: tp.Tokenizer.from_tiktoken(
            peer_data.cl100k_tiktoken(),
            pattern="gpt4",
            special_tokens=peer_data.CL100K_SPECIAL_TOKENS,
        ),
        "tiktoken/llama3": lambda: tp.Tokenizer.from_tiktoken(
            peer_data.llama3_tiktoken_model(),
            pattern=peer_data.llama3_pattern(),
            special_tokens=peer_data.llama3_special_tokens(),
        ),
        "hf/deepseek-v3": lambda: tp.Tokenizer.load(peer_data.deepseek_v3_files().tokenizer_json),
        "hf/llama3.2": lambda: tp.Tokenizer.load(peer_data.llama3_hf_json()),
        "hf/minilm": lambda: tp.Tokenizer.load(peer_data.minilm_tokenizer_json()),
    }
    for model in chat_data.CHAT_MODELS:
        cases[f"chat/{model}"] = lambda model=model: tp.Tokenizer.load(chat_data.model_dir(model))
    for name in (
        "tokenizer.model.v1",
        "mistral_instruct_tokenizer_240216.model.v2",
        "mistral_instruct_tokenizer_240323.model.v3",
    ):
        cases[f"sentencepiece/{name}"] = lambda name=name: tp.Tokenizer.load(
            next(p for p in peer_data.mistral_models() if p.name == name)
        )
    return cases


def _trained_cases(tp: Any) -> dict[str, Callable[[], Any]]:
    texts = generated_texts()
    return {
        "trained/bpe-gpt4-600": lambda: tp.train_bpe(texts, vocab_size=600, pattern="gpt4"),
        "trained/bpe-llama3-min2": lambda: tp.train_bpe(
            texts, vocab_size=500, pattern="llama3", min_frequency=2
        ),
        "trained/unigram-400": lambda: tp.train_unigram(texts, vocab_size=400),
        "trained/wordpiece-400": lambda: tp.train_wordpiece(texts, vocab_size=400),
        "trained/char-bpe-200": lambda: tp.train_char_bpe(texts, num_merges=200),
    }


def cases(tp: Any) -> dict[str, Callable[[], Any]]:
    """Name -> a function building that tokenizer."""
    return {**_real_cases(tp), **_trained_cases(tp)}


def hashes_of(tok: Any, save_dir: Path) -> dict[str, str]:
    """The identities recorded for one case: in memory, and after save + load."""
    tok.save(save_dir)
    reloaded = type(tok).load(save_dir)
    return {
        "semantic": tok.semantic_hash,
        "release": tok.release_hash,
        "reloaded_semantic": reloaded.semantic_hash,
        "reloaded_release": reloaded.release_hash,
    }


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hashes.json"
