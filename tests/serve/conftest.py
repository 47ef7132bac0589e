"""Fixtures for the playground: two small tokenizers trained here, plus a real chat model."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp

WORDS = (
    "the cat sat on the mat while the dog ran after a ball; naïve café owners serve "
    "crème brûlée, 日本語のテキスト and emoji 🤖 next to code like x += 1"
).split()


def corpus(seed: int, n: int = 400) -> list[str]:
    """Deterministic sentences over WORDS (a small LCG, no random module state)."""
    state = seed
    lines = []
    for _ in range(n):
        words = []
        for _ in range(12):
            state = (state * 1103515245 + 12345) % (1 << 31)
            words.append(WORDS[state % len(WORDS)])
        lines.append(" ".join(words))
    return lines


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A --dir with two trained artifacts, ``small`` and ``tiny`` (different vocabularies)."""
    root = tmp_path_factory.mktemp("tokenizers")
    tp.train_bpe(corpus(1), vocab_size=420).save(root / "small")
    tp.train_bpe(corpus(2), vocab_size=300).save(root / "tiny")
    return root


@pytest.fixture(scope="session")
def chat_model_dir() -> Path:
    from tests.chat.chat_data import model_dir

    return model_dir("qwen-2.5")
