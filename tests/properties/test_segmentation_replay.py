"""Any sample's manifest, stored as JSON, replays to the same IDs (seed 000, 0x08).

For random texts, keys (large seeds, string sample IDs, views) and parameters, the
replayed BPE-dropout IDs equal both the Rust engine and the Python reference, and the
replayed Unigram sample equals the lattice sample.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.contract import replay_segmentation, segmentation_manifest
from tokenpact.stochastic import SampleKey, bpe_dropout_reference

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "low lower lowest newest widest tokenization tokenizer tokens",
    "Die Straße in Köln ist schön; la façade est très belle.",
    "東京の天気は晴れです。 Сегодня хорошая погода.",
] * 10


@cache
def bpe() -> tp.Tokenizer:
    return tp.train_bpe(CORPUS, vocab_size=400, special_tokens=())


@cache
def unigram() -> Any:
    return tp.train_unigram(CORPUS, vocab_size=150, character_coverage=1.0)


texts = st.one_of(st.sampled_from(CORPUS), st.text(alphabet="ab lowöé東京.\n", max_size=50))
keys = st.builds(
    SampleKey,
    seed=st.integers(0, 2**64 - 1),
    epoch=st.integers(0, 1000),
    sample_id=st.one_of(st.integers(0, 2**40), st.text(max_size=10)),
    view=st.integers(0, 4),
)


def _stored(record: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(record))
    return loaded


@given(text=texts, p=st.floats(0.0, 1.0), key=keys)
def test_bpe_dropout_replay_matches_engine_and_reference(
    text: str, p: float, key: SampleKey
) -> None:
    tok = bpe()
    record = _stored(
        segmentation_manifest(tok, method="bpe_dropout", parameter=p, key=key).to_json()
    )
    ids = tp.bpe_dropout(tok, text, p=p, key=key)
    assert replay_segmentation(tok, text, record, expected=ids) == ids
    assert bpe_dropout_reference(tok, text, p=p, key=key) == ids


@given(text=texts, alpha=st.floats(0.01, 5.0), key=keys)
def test_unigram_replay_matches_sample(text: str, alpha: float, key: SampleKey) -> None:
    tok = unigram()
    record = _stored(tok.sampling_record(alpha, key))
    ids = tok.sample(text, alpha=alpha, key=key)
    assert replay_segmentation(tok, text, record, expected=ids) == ids
