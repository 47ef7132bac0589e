"""The token column of native Parquet shards: a dictionary page plus bit-packed indices
(``RLE_DICTIONARY``), or PLAIN INT32 where the dictionary does not pay. Both forms read
back through pyarrow and through the shard reader as the IDs written, the choice per
row group follows the documented rule, and the bytes are deterministic."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from tokenpact.data.shard_formats import read_parquet_shard
from tokenpact.data.shard_writer import EncodedChunk, ShardWriter

MAX_DICTIONARY_ID = 1 << 20  # src/data/parquet_list_pages.rs
PAGE_BYTES = 1 << 20
ELEMENT = 1  # the token column's index in a row group


def rule_says_dictionary(ids: NDArray[Any]) -> bool:
    """The documented rule (docs/DATA.md), written out independently of the writer."""
    if ids.size == 0 or int(ids.max()) >= MAX_DICTIONARY_ID:
        return False
    distinct = len(np.unique(ids))
    width = max(1, (distinct - 1).bit_length())
    return 4 * distinct + -(-ids.size * width // 8) <= 3 * ids.size


def _chunk(lists: list[list[int]], dtype: Any) -> EncodedChunk:
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    ids = np.fromiter((t for x in lists for t in x), dtype=dtype, count=int(offsets[-1]))
    flags = np.array([i % 3 == 1 for i in range(len(lists))], dtype=bool)
    return EncodedChunk(ids, offsets, flags)


def _write(out: Path, groups: list[list[list[int]]], dtype: Any, *, native: bool = True) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    n = sum(len(g) for g in groups)
    writer = ShardWriter(
        out,
        "shard-00000",
        [f"doc-{i:05d}" for i in range(n)],
        format="parquet",
        dtype=np.dtype(dtype),
        metadata={"k": "v"},
        native=native,
    )
    for group in groups:
        writer.add(_chunk(group, dtype))
    summary = writer.finish()
    path = out / "shard-00000.parquet"
    assert summary.files[path.name] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return path


def _check(base: Path, groups: list[list[list[int]]], dtype: Any) -> list[bool]:
    """Writes natively and with pyarrow; both read back as the lists (pyarrow and the
    shard reader); returns which row groups have a dictionary page (checked against the
    rule)."""
    ours = _write(base / "native", groups, dtype)
    ref = _write(base / "pyarrow", groups, dtype, native=False)
    lists = [x for g in groups for x in g]
    table = pq.read_table(ours)
    assert table.equals(pq.read_table(ref))
    assert table.column("input_ids").to_pylist() == lists
    assert str(table.schema.field("input_ids").type) == (
        f"list<element: {np.dtype(dtype).name} not null>"
    )
    shard = read_parquet_shard(ours.read_bytes(), np.dtype(dtype))
    assert shard.ids.dtype == np.dtype(dtype)
    assert shard.ids.tolist() == [t for x in lists for t in x]
    assert shard.lengths.tolist() == [len(x) for x in lists]
    assert shard.doc_ids == table.column("doc_id").to_pylist()
    meta = pq.ParquetFile(ours).metadata
    assert meta.num_row_groups == sum(1 for g in groups if g)
    forms = []
    for g, group in enumerate(x for x in groups if x):
        column = meta.row_group(g).column(ELEMENT)
        ids = np.array([t for x in group for t in x], dtype=dtype)
        assert column.has_dictionary_page == rule_says_dictionary(ids)
        assert ("RLE_DICTIONARY" in column.encodings) == column.has_dictionary_page
        assert column.num_values == sum(max(1, len(x)) for x in group)
        assert not column.is_stats_set
        forms.append(column.has_dictionary_page)
    return forms


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_both_dtypes_round_trip_in_the_dictionary_form(tmp_path: Path, dtype: Any) -> None:
    rng = np.random.default_rng(3)
    groups = [
        [rng.integers(0, 500, int(n)).tolist() for n in rng.integers(0, 300, 40)] for _ in range(3)
    ]
    assert _check(tmp_path, groups, dtype) == [True, True, True]


def test_empty_documents_and_an_all_empty_chunk(tmp_path: Path) -> None:
    groups: list[list[list[int]]] = [
        [[], [1, 2, 3] * 20, [], [], [7] * 50, []],  # empty lists around tokens
        [[], [], []],  # no token at all: PLAIN with levels only
        [[], [9] * 30],
    ]
    assert _check(tmp_path, groups, np.uint16) == [True, False, True]


def test_a_chunk_with_one_distinct_id(tmp_path: Path) -> None:
    groups = [[[42] * 1000, [42], [42] * 7], [[0] * 9]]
    assert _check(tmp_path, groups, np.uint32) == [True, True]
    # One-bit indices: the token column is the dictionary page, levels and ~1000 bits.
    column = pq.ParquetFile(tmp_path / "native" / "shard-00000.parquet").metadata
    assert column.row_group(0).column(ELEMENT).total_compressed_size < 300


@pytest.mark.parametrize(
    ("dtype", "top", "dictionary"),
    [
        (np.uint16, 2**16 - 1, True),  # the dtype's maximum: a full 16-bit table
        (np.uint32, MAX_DICTIONARY_ID - 1, True),  # the table's last entry
        (np.uint32, MAX_DICTIONARY_ID, False),  # past the table: PLAIN
        (np.uint32, 2**32 - 1, False),  # the dtype's maximum: PLAIN
    ],
)
def test_ids_at_the_bounds(tmp_path: Path, dtype: Any, top: int, dictionary: bool) -> None:
    groups = [[[top, 0, top] * 30, [1, top], [top]]]
    assert _check(tmp_path, groups, dtype) == [dictionary]


def test_mostly_distinct_ids_fall_back_to_plain(tmp_path: Path) -> None:
    groups = [[list(range(200))], [list(range(200)) * 8], [list(range(100, 140))]]
    assert _check(tmp_path, groups, np.uint16) == [False, True, False]


def test_a_large_chunk_spans_many_pages(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 2000, 1500)
    lengths[::50] = 0
    lengths[7] = 1_000_000  # one document longer than a page is a page of its own
    ids = rng.integers(0, 50_000, int(lengths.sum())).tolist()  # 16-bit indices
    lists, start = [], 0
    for n in lengths.tolist():
        lists.append(ids[start : start + n])
        start += n
    # The first chunk (3 short documents over 50,000 IDs) is mostly distinct IDs: PLAIN.
    assert _check(tmp_path, [lists[:3], lists[3:]], np.uint16) == [False, True]
    meta = pq.ParquetFile(tmp_path / "native" / "shard-00000.parquet").metadata
    size = meta.row_group(1).column(ELEMENT).total_compressed_size
    tokens = int(lengths[3:].sum())
    # 16-bit indices: 2 bytes per token plus the dictionary page and the levels, over
    # several pages of about PAGE_BYTES.
    assert 2 * tokens < size < 2 * tokens + 4 * 50_000 + 64 * 1024
    assert size > 4 * PAGE_BYTES


def test_the_same_documents_give_the_same_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    groups = [[rng.integers(0, 300, int(n)).tolist() for n in rng.integers(0, 100, 60)]] * 2
    first = _write(tmp_path / "a", groups, np.uint16).read_bytes()
    second = _write(tmp_path / "b", groups, np.uint16).read_bytes()
    assert first == second


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_duckdb_reads_both_forms(tmp_path: Path, dtype: Any) -> None:
    duckdb = pytest.importorskip("duckdb")  # its own Parquet decoder, not Arrow's
    rng = np.random.default_rng(1)
    groups = [
        [rng.integers(0, 500, int(n)).tolist() for n in rng.integers(0, 300, 40)] + [[], [7] * 9],
        [list(range(300))],  # PLAIN
        [[2**16 - 1] * 5],  # one distinct ID
    ]
    path = _write(tmp_path, groups, dtype)
    rows = duckdb.sql(f"select doc_id, input_ids, length from '{path}'").fetchall()
    lists = [x for g in groups for x in g]
    assert [list(r[1]) for r in rows] == lists
    assert [r[2] for r in rows] == [len(x) for x in lists]
    assert [r[0] for r in rows] == [f"doc-{i:05d}" for i in range(len(lists))]


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from([np.uint16, np.uint32]),
    vocab=st.sampled_from([1, 2, 3, 17, 256, 257, 4097, 2**16, MAX_DICTIONARY_ID + 1, 2**32]),
    raw=st.lists(
        st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=120), max_size=12),
        min_size=1,
        max_size=4,
    ),
    data=st.data(),
)
def test_random_documents_read_back_identically(
    tmp_path_factory: pytest.TempPathFactory,
    dtype: Any,
    vocab: int,
    raw: list[list[list[int]]],
    data: st.DataObject,
) -> None:
    top = min(vocab, int(np.iinfo(dtype).max) + 1)
    # Small alphabets anywhere in the range (repeats: the dictionary form) and the whole
    # range (mostly distinct: PLAIN).
    span = min(top, data.draw(st.sampled_from([1, 2, 64, top])))
    offset = data.draw(st.integers(0, top - span))
    groups = [[[offset + v % span for v in x] for x in g] for g in raw]
    for dictionary in _check(tmp_path_factory.mktemp("pq"), groups, dtype):
        event("dictionary form" if dictionary else "PLAIN form")  # --hypothesis-show-statistics
