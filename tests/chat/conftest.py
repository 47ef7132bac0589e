"""Fixtures of the chat tests: real chat models (tokenpact + transformers) and the seed's
byte-level tokenizer.

``transformers`` runs offline and quietly (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_VERBOSITY=error``) and loads the same local files tokenpact reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from .chat_data import CHAT_MODELS, model_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


@dataclass(frozen=True)
class ChatModel:
    """One model: its files, our tokenizer and template, and transformers' tokenizer."""

    name: str
    tok: Any
    template: Any
    hf: Any


_LOADED: dict[str, ChatModel] = {}

# transformers 5's Qwen2Tokenizer class replaces the pre-tokenizer of tokenizer.json with
# Qwen 2's pattern (no \p{M}), so for Qwen 3.5 ``AutoTokenizer`` splits Thai and other
# combining-mark scripts differently from the published file (and from ``tokenizers``).
# Its generic backend loads the file as published; that is the reference here.
GENERIC_BACKEND = frozenset({"qwen-3.5"})


def hf_tokenizer(transformers: ModuleType, name: str, directory: Any) -> Any:
    """The transformers tokenizer whose IDs are the reference for ``name``."""
    if name in GENERIC_BACKEND:
        return transformers.PreTrainedTokenizerFast.from_pretrained(str(directory))
    return transformers.AutoTokenizer.from_pretrained(str(directory))


def load_model(name: str, tp: ModuleType) -> ChatModel:
    """Load (once per session) a chat model; skip with the reason when it cannot load."""
    if name in _LOADED:
        return _LOADED[name]
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("jinja2")
    directory = model_dir(name)
    tok = tp.Tokenizer.load(directory)
    template = tp.chat.ChatTemplate.from_hf(directory, tok)
    hf = hf_tokenizer(transformers, name, directory)
    _LOADED[name] = ChatModel(name, tok, template, hf)
    return _LOADED[name]


@pytest.fixture(scope="session")
def tp(tp: ModuleType) -> ModuleType:
    """``tokenpact`` with its chat package importable as ``tp.chat``."""
    import tokenpact.chat  # noqa: F401 - until tokenpact/__init__ exports it

    return tp


@pytest.fixture(scope="session", params=CHAT_MODELS)
def chat_model(request: pytest.FixtureRequest, tp: ModuleType) -> ChatModel:
    return load_model(request.param, tp)


@pytest.fixture(scope="session")
def deepseek(tp: ModuleType) -> ChatModel:
    return load_model("deepseek-v3", tp)


@pytest.fixture(scope="session")
def glm(tp: ModuleType) -> ChatModel:
    return load_model("glm-4", tp)


@pytest.fixture(scope="session")
def seed_tok(tp: ModuleType) -> Any:
    """The seed's synthetic byte tokenizer: bytes are IDs 0..255, controls 256..265."""
    return tp.Tokenizer.from_merges([], special_tokens=tp.chat.SEED_SPECIAL_TOKENS)


def hf_ids(hf: Any, messages: list[dict[str, Any]], **options: Any) -> list[int]:
    """``apply_chat_template(..., tokenize=True)`` as a plain list of IDs."""
    return list(hf.apply_chat_template(messages, tokenize=True, return_dict=False, **options))
