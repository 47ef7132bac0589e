"""Rules shared with the reference tools: datasketch's LSH banding for any ``num_perm``
and Megatron-LM's shard dtype rule."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.data import Document, MinHashParams
from tokenpact.data.near import near_dedup, optimal_bands
from tokenpact.data.shard_formats import token_dtype


@pytest.mark.parametrize("num_perm", [16, 128, 191, 192, 256, 320, 512])
@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
def test_banding_is_datasketchs_for_any_num_perm(num_perm: int, threshold: float) -> None:
    lsh = pytest.importorskip("datasketch.lsh")
    assert optimal_bands(threshold, num_perm) == tuple(
        lsh._optimal_param(threshold, num_perm, 0.5, 0.5)
    )


def test_num_perm_256_is_the_17_by_15_banding() -> None:
    assert optimal_bands(0.8, 256) == (17, 15)


def test_near_dedup_runs_with_num_perm_above_191(real_docs: list[Document]) -> None:
    docs = [*real_docs[:40], Document("zz-copy", real_docs[0].text + " x")]
    result = near_dedup(docs, threshold=0.8, params=MinHashParams(num_perm=256))
    assert (result.bands, result.rows) == (17, 15)


@pytest.mark.parametrize(
    ("vocab", "megatron", "parquet"),
    [
        (50_000, np.uint16, np.uint16),
        (65_499, np.uint16, np.uint16),
        (65_500, np.int32, np.uint16),  # Megatron's DType.optimal_dtype: < 65500 -> uint16
        (65_536, np.int32, np.uint16),
        (65_537, np.int32, np.uint32),
        (151_936, np.int32, np.uint32),
    ],
)
def test_shard_dtype_rules(vocab: int, megatron: type, parquet: type) -> None:
    assert token_dtype(vocab, "megatron") == np.dtype(megatron)
    assert token_dtype(vocab, "parquet") == np.dtype(parquet)
