"""Replay from the manifest on real multilingual text, per language (seed 000, 0x08).

parallel-gettext messages in nine languages (skipped when ../shared/corpus is absent):
each held-out message gets its own key, is segmented by BPE-dropout and by Unigram
sampling, stored with its manifest as JSON, and replayed; every replay must equal the
draw, decode to the message, and differ from the deterministic encoding somewhere in
each language (so the draws were not trivially empty).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.contract import replay_segmentation, segmentation_manifest

from .corpus_slices import LANGUAGES, multilingual_split

PER_LANGUAGE = 40


@pytest.fixture(scope="module")
def split() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    return multilingual_split(per_language=40_000)


@pytest.fixture(scope="module")
def bpe(split: Any) -> tp.Tokenizer:
    return tp.train_bpe(list(split[0]), vocab_size=2000, special_tokens=())


@pytest.fixture(scope="module")
def unigram(split: Any) -> Any:
    return tp.train_unigram(list(split[0]), vocab_size=2000, byte_fallback=True)


@pytest.mark.parametrize("method", ["bpe_dropout", "unigram_sample"])
def test_replay_per_language(method: str, split: Any, bpe: tp.Tokenizer, unigram: Any) -> None:
    tok = bpe if method == "bpe_dropout" else unigram
    changed: dict[str, int] = {}
    for lang in LANGUAGES:
        lines = split[1][lang][:PER_LANGUAGE]
        assert lines, f"no held-out {lang} messages"
        changed[lang] = 0
        for i, text in enumerate(lines):
            key = tp.SampleKey(seed=2026, epoch=1, sample_id=f"{lang}/{i}")
            if method == "bpe_dropout":
                ids = tp.bpe_dropout(tok, text, p=0.2, key=key)
                record = segmentation_manifest(tok, method=method, parameter=0.2, key=key)
                stored = json.loads(json.dumps(record.to_json()))
            else:
                ids = tok.sample(text, alpha=0.3, key=key)
                stored = json.loads(json.dumps(tok.sampling_record(0.3, key)))
            assert replay_segmentation(tok, text, stored, expected=ids) == ids
            assert tok.decode(ids) == tok.decode(tok.encode(text))
            changed[lang] += ids != tok.encode(text)
    print(method, "samples differing from the deterministic encoding per language:", changed)
    assert all(changed[lang] > 0 for lang in LANGUAGES), changed
