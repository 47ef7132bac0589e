"""The native Parquet shard writer against pyarrow's: the same Arrow table and schema
read back, the same row groups and per-document statistics, a digest of the bytes as
written, and typed errors. (The token column's dictionary form: test_parquet_dictionary.)"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact import _native
from tokenpact.data import Document
from tokenpact.data.shard_writer import EncodedChunk, ShardWriter
from tokenpact.errors import ConfigError, InvalidInputError

META = {"tokenpact.dataset": '{"x": 1}', "tokenpact.note": "ünïcode"}


def _chunk(lists: list[list[int]], dtype: Any, truncated: list[bool] | None = None) -> EncodedChunk:
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    ids = np.fromiter((t for x in lists for t in x), dtype=dtype, count=int(offsets[-1]))
    flags = np.array(truncated if truncated is not None else [False] * len(lists), dtype=bool)
    return EncodedChunk(ids, offsets, flags)


def _write(
    out: Path, doc_ids: list[str], chunks: list[EncodedChunk], dtype: Any, *, native: bool
) -> tuple[Path, str]:
    out.mkdir(parents=True, exist_ok=True)
    writer = ShardWriter(
        out,
        "shard-00000",
        doc_ids,
        format="parquet",
        dtype=np.dtype(dtype),
        metadata=META,
        native=native,
    )
    assert (writer._native is not None) == native
    for chunk in chunks:
        writer.add(chunk)
    summary = writer.finish()
    return out / "shard-00000.parquet", summary.files["shard-00000.parquet"]


def _assert_same_shard(ours: Path, ref: Path) -> None:
    ours_table, ref_table = pq.read_table(ours), pq.read_table(ref)
    assert ours_table.schema.equals(ref_table.schema, check_metadata=True)
    assert ours_table.equals(ref_table)
    ours_file, ref_file = pq.ParquetFile(ours), pq.ParquetFile(ref)
    assert ours_file.schema.equals(ref_file.schema)  # the Parquet schema, logical types too
    assert ours_file.schema_arrow.equals(ref_file.schema_arrow, check_metadata=True)
    assert ours_file.metadata.metadata == ref_file.metadata.metadata  # ARROW:schema + ours
    assert ours_file.num_row_groups == ref_file.num_row_groups
    for g in range(ref_file.num_row_groups):
        a, b = ours_file.metadata.row_group(g), ref_file.metadata.row_group(g)
        assert a.num_rows == b.num_rows
        for c in range(b.num_columns):
            ca, cb = a.column(c), b.column(c)
            assert ca.compression == cb.compression == "UNCOMPRESSED"
            assert not cb.has_dictionary_page
            if ca.path_in_schema == "input_ids.list.element":
                # The token column is ours: a dictionary page and indices, or PLAIN.
                assert ca.num_values == cb.num_values
                dictionary = "RLE_DICTIONARY" in ca.encodings
                assert ca.has_dictionary_page == dictionary
                assert set(ca.encodings) == (
                    {"PLAIN", "RLE", "RLE_DICTIONARY"} if dictionary else {"PLAIN", "RLE"}
                )
            else:
                assert not ca.has_dictionary_page
            assert ca.is_stats_set == cb.is_stats_set
            if cb.is_stats_set:
                sa, sb = ca.statistics, cb.statistics
                assert (sa.min, sa.max, sa.null_count) == (sb.min, sb.max, sb.null_count)
    # Only the per-document columns carry statistics, never the token column.
    stats = (
        {
            ours_file.metadata.row_group(0).column(c).path_in_schema: ours_file.metadata.row_group(
                0
            )
            .column(c)
            .is_stats_set
            for c in range(4)
        }
        if ours_file.num_row_groups
        else {}
    )
    if stats:
        assert stats == {
            "doc_id": True,
            "input_ids.list.element": False,
            "length": True,
            "truncated": True,
        }


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=600, special_tokens=())


def test_real_text_reads_back_as_pyarrow_writes_it(
    tmp_path: Path, tok: tp.Tokenizer, real_docs: list[Document]
) -> None:
    docs = real_docs[:300]
    lists = [list(x) for x in tok.encode_batch([d.text for d in docs])]
    lists[5] = []  # an empty document inside a row group
    doc_ids = [d.doc_id for d in docs]
    cuts = [0, 1, 40, 41, 200, 300]  # row groups of 1, 39, 1, 159 and 100 documents
    flags = [i % 7 == 0 for i in range(len(docs))]
    for dtype in (np.uint16, np.uint32):
        chunks = [
            _chunk(lists[a:b], dtype, flags[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)
        ]
        ours, ours_digest = _write(
            tmp_path / f"n{dtype.__name__}", doc_ids, chunks, dtype, native=True
        )
        ref, _ = _write(tmp_path / f"p{dtype.__name__}", doc_ids, chunks, dtype, native=False)
        _assert_same_shard(ours, ref)
        assert ours_digest == "sha256:" + hashlib.sha256(ours.read_bytes()).hexdigest()
        table = pq.read_table(ours)
        assert table.column("input_ids").to_pylist() == lists
        assert table.column("doc_id").to_pylist() == doc_ids
        assert (
            str(table.schema.field("input_ids").type)
            == f"list<element: {np.dtype(dtype).name} not null>"
        )


def test_a_document_longer_than_a_level_batch(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    lists = [[], rng.integers(0, 2**32, 300_001, dtype=np.uint32).tolist(), [], [5], []]
    doc_ids = [f"d{i}" for i in range(len(lists))]
    chunks = [_chunk(lists[:3], np.uint32), _chunk(lists[3:], np.uint32)]
    ours, _ = _write(tmp_path / "n", doc_ids, chunks, np.uint32, native=True)
    ref, _ = _write(tmp_path / "p", doc_ids, chunks, np.uint32, native=False)
    _assert_same_shard(ours, ref)
    assert pq.read_table(ours).column("input_ids").to_pylist() == lists


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([np.uint16, np.uint32]),
    st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=30), max_size=25),
    st.lists(st.integers(0, 25), max_size=4),
    st.data(),
)
def test_random_lengths_read_back_as_pyarrow_writes_them(
    tmp_path_factory: pytest.TempPathFactory,
    dtype: Any,
    raw: list[list[int]],
    cuts: list[int],
    data: st.DataObject,
) -> None:
    top = int(np.iinfo(dtype).max)
    lists = [[v % (top + 1) for v in x] for x in raw]
    bounds = sorted({0, len(lists), *(min(c, len(lists)) for c in cuts)})
    chunks = [
        _chunk(
            lists[a:b], dtype, data.draw(st.lists(st.booleans(), min_size=b - a, max_size=b - a))
        )
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    doc_ids = [data.draw(st.text(max_size=6)) + f"#{i}" for i in range(len(lists))]
    base = tmp_path_factory.mktemp("pq")
    ours, digest = _write(base / "n", doc_ids, chunks, dtype, native=True)
    ref, _ = _write(base / "p", doc_ids, chunks, dtype, native=False)
    _assert_same_shard(ours, ref)
    assert pq.read_table(ours).column("input_ids").to_pylist() == lists
    assert digest == "sha256:" + hashlib.sha256(ours.read_bytes()).hexdigest()
    again, digest2 = _write(base / "again", doc_ids, chunks, dtype, native=True)
    assert again.read_bytes() == ours.read_bytes() and digest2 == digest


def _raw_writer(path: Path, n: int) -> _native.ParquetShardWriter:
    return _native.ParquetShardWriter(
        str(path), id_bits=16, doc_ids=[f"d{i}" for i in range(n)], metadata=[], created_by="t"
    )


def test_bad_chunks_raise_typed_errors(tmp_path: Path) -> None:
    w = _raw_writer(tmp_path / "a.parquet", 2)
    ids = np.array([1, 2, 3], dtype=np.uint16)
    with pytest.raises(InvalidInputError, match="offsets"):
        w.write_chunk(ids, np.array([0, 2], dtype=np.int64), np.array([False]))
    with pytest.raises(InvalidInputError, match="offsets"):
        w.write_chunk(ids, np.array([0, 3, 2, 3], dtype=np.int64), np.zeros(3, bool))
    with pytest.raises(InvalidInputError, match="truncation flags"):
        w.write_chunk(ids, np.array([0, 3], dtype=np.int64), np.zeros(2, bool))
    with pytest.raises(InvalidInputError, match="more encoded records"):
        w.write_chunk(ids, np.array([0, 1, 2, 3], dtype=np.int64), np.zeros(3, bool))
    w.write_chunk(ids, np.array([0, 3], dtype=np.int64), np.array([True]))
    assert w.written == 1
    with pytest.raises(InvalidInputError, match="1 of 2"):
        w.finish()
    assert w.closed
    with pytest.raises(InvalidInputError, match="closed"):
        w.write_chunk(ids, np.array([0, 3], dtype=np.int64), np.array([True]))
    with pytest.raises(ConfigError, match="16- or 32-bit"):
        _native.ParquetShardWriter(
            str(tmp_path / "b.parquet"), id_bits=8, doc_ids=[], metadata=[], created_by="t"
        )


def test_abort_removes_the_temporary_file(tmp_path: Path) -> None:
    writer = ShardWriter(
        tmp_path,
        "shard-00000",
        ["a", "b"],
        format="parquet",
        dtype=np.dtype(np.uint16),
        metadata={},
    )
    writer.add(_chunk([[1, 2]], np.uint16))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_large_and_small_writes_keep_their_order(tmp_path: Path) -> None:
    # 40,000 documents with 30-character IDs: the doc_id page (> 1 MiB) reaches the file
    # sink as one large write after small ones, the token column as 8 KiB pieces.
    n = 40_000
    lists = [[i % 5, 7] if i % 3 else [] for i in range(n)]
    doc_ids = [f"document-{i:08d}-{'x' * 12}" for i in range(n)]
    chunks = [_chunk(lists[:100], np.uint16), _chunk(lists[100:], np.uint16)]
    ours, digest = _write(tmp_path / "n", doc_ids, chunks, np.uint16, native=True)
    ref, _ = _write(tmp_path / "p", doc_ids, chunks, np.uint16, native=False)
    _assert_same_shard(ours, ref)
    assert pq.read_table(ours).column("doc_id").to_pylist() == doc_ids
    assert digest == "sha256:" + hashlib.sha256(ours.read_bytes()).hexdigest()
