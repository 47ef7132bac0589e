"""The bytes ``tok.save`` writes for each kind of tokenizer are pinned.

``tokenpact.json`` is the spec's canonical config plus the training record; the other
kinds save their source files (and ``training.json`` / ``policy.json``). Any change to
what a save writes is a versioned format change: these digests (SHA-256 of every
tokenizer file, not the manifest or golden vectors) must then be re-recorded on purpose,
with a CHANGELOG entry. Loading the saved directory gives back the same spec.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

import tokenpact as tp
from hash_cases import generated_texts
from tokenpact.core import RankedMerges, TokenizerSpec
from tokenpact.patterns import PATTERNS
from tokenpact.special import SpecialToken
from tokenpact.truncation import Padding

TEXTS = generated_texts(120)
# ab -> 256, abc -> 257, abab -> 258
MERGES = [(97, 98), (256, 99), (256, 256)]
# Files a save writes that describe the identity or check it, not the tokenizer.
SEALS = {"manifest.json", "golden.json"}


def _trained_bpe() -> tp.Tokenizer:
    return tp.train_bpe(TEXTS, vocab_size=300, pattern="gpt4")


def _merges_with_gaps() -> tp.Tokenizer:
    # Special IDs with a gap, a post-processor, a padding policy and a training record
    # that holds non-finite floats (written as strings).
    spec = TokenizerSpec(
        RankedMerges(MERGES),
        pattern=PATTERNS["gpt4"],
        pattern_name="gpt4",
        special_tokens=[
            (SpecialToken("<|bos|>", "bos"), 259),
            (SpecialToken("<|eos|>", "eos"), 260),
            (SpecialToken("<|日本|>", "reserved"), 300),
        ],
        post_processor={"type": "prepend_bos", "token": "<|bos|>"},
    )
    training = {"stop_reason": "vocab_size_reached", "loss": float("nan"), "t": [float("-inf")]}
    tok = tp.Tokenizer(spec, provenance=tp.core.Provenance(training=training))
    return tok.with_padding(Padding(pad_id=260, side="left", multiple=8))


def _tiktoken() -> tp.Tokenizer:
    singles = [bytes([b]) for b in range(255, -1, -1)]  # single bytes need not sit at 0..255
    return tp.Tokenizer.from_ranks(
        [*singles, b"ab", b"abc", b" the"],
        pattern=r"\w+|\s+|[^\w\s]+",
        special_tokens={"<|endoftext|>": 259, "<|pad|>": 265},
        roles={"<|endoftext|>": "eot"},
    )


def _sentencepiece() -> tp.Tokenizer:
    return tp.train_unigram(TEXTS, vocab_size=200, remove_extra_whitespaces=False)


def _hf_pipeline() -> tp.Tokenizer:
    return tp.train_wordpiece(TEXTS, vocab_size=200)


CASES: dict[str, Callable[[], tp.Tokenizer]] = {
    "trained-bpe": _trained_bpe,
    "merges-gaps-policy": _merges_with_gaps,
    "tiktoken": _tiktoken,
    "sentencepiece": _sentencepiece,
    "hf-pipeline": _hf_pipeline,
}

# SHA-256 of each tokenizer file a save writes, by case (recorded before tokenpact.json
# became spec.to_config(); the bytes did not change).
PINNED: dict[str, dict[str, str]] = {
    "hf-pipeline": {
        "tokenizer.json": "79e375f8adc8aadbb44826419c6e2a7a0123b90a064a344d5910a0b6f8343f76",
        "tokenizer_config.json": "ff01027828a332aa6d23efd52145be717035f16e745cdc9a618ae52a62bfe703",
        "training.json": "3004661467f4f3156fe0718a5148de3a9de914789380cbafd5985625377659f0",
    },
    "merges-gaps-policy": {
        "policy.json": "4e74d584964fa9fed2c5d1ec01fb5541a61f4da92db0ce683d8bd9f83f5ce514",
        "tokenpact.json": "95a1949f119243a26eed24be11faee7d5dfeb61bd6e588d0c3e6425c201d6096",
    },
    "sentencepiece": {
        "tokenizer.model": "a8e516ef727adc835912a519176f81e6c99282729fc431f8d07259e7aede8cdc",
        "training.json": "1e2e85c2efc216bf4d961217f8e871e6d1d04b3298207f586bd21f98d579da23",
    },
    "tiktoken": {
        "tokenpact.json": "217989b7e0cbb7583e2ab0537bd81e88c9055cb4b6d17b790c66c89006d3e774",
    },
    "trained-bpe": {
        "tokenpact.json": "b7369f7517dabb6dc5e86694b3e16505e65c5c5e5805726b0b0f7fb4a9181c14",
    },
}


def saved_digests(tok: tp.Tokenizer, directory: Path) -> dict[str, str]:
    tok.save(directory)
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.name not in SEALS
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_saved_bytes_are_pinned(name: str, tmp_path: Path) -> None:
    tok = CASES[name]()
    assert saved_digests(tok, tmp_path / "a") == PINNED[name]
    reloaded = tp.Tokenizer.load(tmp_path / "a")
    assert reloaded.to_config() == tok.to_config()
    assert reloaded.semantic_hash == tok.semantic_hash
    assert reloaded.training == tok.training or name == "merges-gaps-policy"
    # Saving the loaded tokenizer writes the same bytes again.
    assert saved_digests(reloaded, tmp_path / "b") == PINNED[name]
