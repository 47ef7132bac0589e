"""Seed inputs of the fuzz suite: small synthetic files of every format (always
available) and, when the cached peer data is there, real ones."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from security.hostile import added_token, byte_level_bpe, wordpiece


def unigram_json() -> dict[str, Any]:
    """A small Hugging Face Unigram ``tokenizer.json`` with Metaspace."""
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"}
    vocab = [["<unk>", 0.0], ["\u2581", -1.0], ["a", -2.0], ["b", -2.5], ["\u2581ab", -1.5]]
    vocab += [[c, -4.0] for c in "cdefghijklmnopqrstuvwxyz"]
    return {
        "version": "1.0",
        "added_tokens": [added_token(0, "<unk>")],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {**meta, "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"Sequence": {"id": "A", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {},
        },
        "decoder": meta,
        "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": False},
    }


def tokenizer_json_seeds(real: bool) -> list[Any]:
    seeds: list[Any] = [byte_level_bpe(), wordpiece(), unigram_json()]
    seeds[0]["added_tokens"] = [added_token(259, "<|endoftext|>")]
    if real:
        try:
            from conformance.peer_data import minilm_tokenizer_json

            seeds.append(json.loads(minilm_tokenizer_json().read_text(encoding="utf-8")))
        except Exception:  # noqa: BLE001 - real files are optional seeds
            pass
    return seeds


@cache
def _texts() -> tuple[str, ...]:
    from tokenpact.corpus import builtin_corpus

    return tuple(d.text for d in builtin_corpus(max_bytes=300_000))


def _corpus(n: int) -> list[str]:
    return list(_texts()[:n])


def sentencepiece_seeds(directory: Path, real: bool) -> list[bytes]:
    import tokenpact as tp

    tok = tp.train_unigram(_corpus(20), vocab_size=200)
    saved = tok.save(directory / "sp")
    seeds = [(saved / "tokenizer.model").read_bytes()]
    if real:
        try:
            from conformance.peer_data import mistral_models

            seeds.append(mistral_models()[0].read_bytes())
        except Exception:  # noqa: BLE001
            pass
    return seeds


def tiktoken_seeds(artifact: Path) -> list[bytes]:
    """The rank file of the saved artifact's tokenizer."""
    import tokenpact as tp

    target = artifact.parent / "seed.tiktoken"
    tp.Tokenizer.load(artifact).export_tiktoken(target)
    return [target.read_bytes()]


def saved_artifact(directory: Path) -> Path:
    import tokenpact as tp

    tok = tp.train_bpe(_corpus(20), vocab_size=320, special_tokens=tp.DEFAULT_SPECIAL_TOKENS)
    return tok.save(directory / "artifact")


def chat_seeds() -> list[Any]:
    return [
        {"messages": [{"role": "user", "content": "Hello <|eot_id|> there"}], "limit": 64},
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "weather", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "content": "18C <|start_header_id|>", "tool_call_id": "c1"},
                {"role": "assistant", "content": "Rainy."},
                {"role": "user", "content": "Thanks"},
            ],
            "mode": "generation",
            "limit": 40,
        },
    ]


def cli_seeds(artifact: Path, hf_file: Path) -> list[Any]:
    """Command lines over a saved artifact and a tokenizer.json. Outputs are relative
    paths: the workers run in a scratch directory, so a mutated output path stays there."""
    a, h = str(artifact), str(hf_file)
    return [
        ["encode", "-t", a, "hello world"],
        ["encode", "-t", h, "--allowed-special", "all", "hi [CLS]"],
        ["decode", "-t", a, "1", "2", "3"],
        ["inspect", "-t", a, "hello"],
        ["verify", a],
        ["convert", h, "conv", "--to", "native"],
        ["convert", a, "conv.json", "--to", "hf"],
        ["hash", a],
        ["train", "--help"],
    ]
