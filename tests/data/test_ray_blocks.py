"""Blocks of documents for the Ray engine (one UTF-8 buffer + offsets) and the native
functions the workers run on them, against the list-of-strings functions of the local
engine. No Ray cluster needed: these are the units a Ray task runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact import _native
from tokenpact.data import MinHashParams, minhash_signatures
from tokenpact.data.ray_blocks import (
    band_keys_block,
    block_bounds,
    count_block,
    pack_block,
    sum_counts,
)
from tokenpact.errors import ConfigError, InvalidInputError
from tokenpact.patterns import resolve_pattern
from tokenpact.train import PretokenCounts, count_pretokens

# Real-looking text: words, punctuation, digits, accents, CJK, emoji, newlines.
TEXT = st.text(
    alphabet=st.sampled_from(list("ab cd\n\tEé.,!?01 日本語 🙂'’-")), min_size=0, max_size=60
)
TEXTS = st.lists(TEXT, min_size=0, max_size=25)


def _split(texts: list[str], cuts: list[int]) -> list[tuple[int, int]]:
    edges = sorted({0, len(texts), *(c % (len(texts) + 1) for c in cuts)})
    return list(zip(edges[:-1], edges[1:], strict=True))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5000), min_size=0, max_size=60),
    st.integers(1, 12),
    st.one_of(st.none(), st.integers(1, 10)),
)
def test_blocks_cover_the_documents_in_order(
    lengths: list[int], parts: int, max_docs: int | None
) -> None:
    texts = ["x" * n for n in lengths]
    bounds = block_bounds(texts, parts=parts, max_docs=max_docs)
    starts = [0] + [stop for _, stop in bounds[:-1]]
    assert [start for start, _ in bounds] == (starts if texts else [])
    assert (bounds[-1][1] if bounds else 0) == len(texts)
    assert all(stop > start for start, stop in bounds)
    if max_docs is not None:
        assert all(stop - start <= max_docs for start, stop in bounds)
    if max_docs is None:
        assert len(bounds) <= parts


def test_blocks_balance_characters_not_documents() -> None:
    texts = ["y" * 10_000] + ["x"] * 999  # one long document, many short ones
    bounds = block_bounds(texts, parts=2)
    assert bounds == [(0, 1), (1, 1000)]


@settings(max_examples=60, deadline=None)
@given(TEXTS, st.integers(0, 30), st.integers(0, 30))
def test_a_block_holds_its_documents_as_utf8(texts: list[str], a: int, b: int) -> None:
    start, stop = sorted((a % (len(texts) + 1), b % (len(texts) + 1)))
    buf, offsets = pack_block(texts, start, stop)
    assert buf.dtype == np.uint8 and offsets.dtype == np.uint64
    raw = buf.tobytes()
    decoded = [raw[offsets[i] : offsets[i + 1]].decode() for i in range(len(offsets) - 1)]
    assert decoded == texts[start:stop]


@settings(max_examples=40, deadline=None)
@given(TEXTS, st.lists(st.integers(0, 30), max_size=4), st.sampled_from(["gpt4", "gpt2"]))
def test_block_count_tables_add_up_to_the_local_counts(
    texts: list[str], cuts: list[int], pattern: str
) -> None:
    name, source = resolve_pattern(pattern)
    tables = [count_block(pack_block(texts, a, b), source, name) for a, b in _split(texts, cuts)]
    pieces, counts, documents, nbytes, digest = sum_counts(tables)
    summed = PretokenCounts(
        pattern=pattern,
        pieces=tuple(pieces),
        counts=np.asarray(counts, dtype=np.uint64),
        documents=documents,
        bytes=nbytes,
        digest=digest,
    )
    assert summed == count_pretokens(texts, pattern=pattern)


@settings(max_examples=40, deadline=None)
@given(TEXTS, st.sampled_from(["word", "char"]), st.integers(1, 4))
def test_block_band_keys_equal_keys_of_local_signatures(
    texts: list[str], kind: str, n: int
) -> None:
    params = MinHashParams(num_perm=32, shingle=kind, n=n)
    a, b = params.permutations
    keys = band_keys_block(pack_block(texts, 0, len(texts)), (kind, n, params.scheme), (a, b), 4, 8)
    expected = _native.lsh_band_keys(minhash_signatures(texts, params), 4, 8, 1)
    assert keys.shape == (len(texts), 4)
    assert np.array_equal(keys, expected)


def test_bad_input_is_refused_with_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        pack_block(["fine", "bad \ud800"], 0, 2)
    with pytest.raises(InvalidInputError, match="text 1 is int"):
        pack_block(["fine", 3], 0, 2)  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="block_docs"):
        block_bounds(["a"], parts=2, max_docs=0)
    name, source = resolve_pattern("gpt4")
    buf = np.frombuffer("héllo".encode(), dtype=np.uint8)
    for offsets in ([0, 2, 6], [0, 3], [1, 6], [0, 4, 3, 6]):
        with pytest.raises(InvalidInputError):
            count_block((buf, np.asarray(offsets, dtype=np.uint64)), source, name)
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        bad = np.asarray([0xFF], dtype=np.uint8)
        count_block((bad, np.asarray([0, 1], dtype=np.uint64)), source, name)
    table = count_block(pack_block(["a b"], 0, 1), source, name)
    with pytest.raises(InvalidInputError, match="count table 0"):
        _native.sum_count_tables([table[0]], [table[1][1:]], [table[2]], None)
    with pytest.raises(InvalidInputError, match="as many"):
        _native.sum_count_tables([table[0]], [], [table[2]], None)
