"""Readers: every format yields the same documents with stable IDs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from tokenpact.data import Document, content_id, read_documents, sniff_format
from tokenpact.errors import ConfigError, InvalidInputError

ROWS = [
    {"id": "d1", "text": "The cat sleeps.", "src": "web"},
    {"id": "d2", "text": "Le chat dort.", "src": "books"},
    {"id": "d3", "text": "猫が寝ている。", "src": "web"},
]


def _expected(with_ids: bool = True) -> list[Document]:
    return [
        Document(r["id"] if with_ids else content_id(r["text"]), r["text"], source=r["src"])
        for r in ROWS
    ]


def _jsonl(rows: list[dict[str, str]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_jsonl_plain_and_compressed(tmp_path: Path, suffix: str) -> None:
    data = _jsonl(ROWS)
    if suffix.endswith(".gz"):
        data = gzip.compress(data)
    elif suffix.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    path = tmp_path / f"c{suffix}"
    path.write_bytes(data)
    assert sniff_format(path) == "jsonl"
    assert list(read_documents(path, source_field="src")) == _expected()


def test_sources_from_a_field_are_shared_objects(tmp_path: Path) -> None:
    # Many documents, few source names: one str object per name (memory, and the
    # encoder's passes over the sources read a few objects, not one per document).
    path = tmp_path / "c.jsonl"
    path.write_bytes(_jsonl([{"id": f"d{i}", "text": "x", "src": "w" + "eb"} for i in range(3)]))
    docs = list(read_documents(path, source_field="src"))
    assert [d.source for d in docs] == ["web"] * 3
    assert docs[0].source is docs[1].source is docs[2].source


def test_parquet_reader(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path, row_group_size=2)
    assert list(read_documents(path, source_field="src")) == _expected()


def test_hf_arrow_directory(tmp_path: Path) -> None:
    """The save_to_disk layout: state.json naming Arrow IPC stream files."""
    table = pa.Table.from_pylist(ROWS)
    for i, part in enumerate((table.slice(0, 2), table.slice(2))):
        name = f"data-0000{i}-of-00002.arrow"
        with pa.OSFile(str(tmp_path / name), "wb") as sink:
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_table(part)
    state = {"_data_files": [{"filename": f"data-0000{i}-of-00002.arrow"} for i in range(2)]}
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert sniff_format(tmp_path) == "hf-arrow"
    assert list(read_documents(tmp_path, source_field="src")) == _expected()


def test_hf_datasets_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    assert list(read_documents(tmp_path / "ds", source_field="src")) == _expected()


def test_missing_ids_are_content_derived_and_unique(tmp_path: Path) -> None:
    rows = [{"text": r["text"], "src": r["src"]} for r in ROWS] + [
        {"text": ROWS[0]["text"], "src": "web"}
    ]
    path = tmp_path / "c.jsonl"
    path.write_bytes(_jsonl(rows))
    docs = list(read_documents(path, source_field="src"))
    assert [d.doc_id for d in docs[:3]] == [content_id(r["text"]) for r in ROWS]
    assert docs[3].doc_id == content_id(ROWS[0]["text"]) + "#2"
    again = list(read_documents(path, source_field="src"))
    assert [d.doc_id for d in again] == [d.doc_id for d in docs]


def test_text_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first line\n\nsecond line\n", encoding="utf-8")
    whole = list(read_documents(path, source="notes"))
    assert whole == [Document("notes.txt", "first line\n\nsecond line\n", source="notes")]
    lines = list(read_documents(path, format="lines"))
    assert [(d.doc_id, d.text) for d in lines] == [
        ("notes.txt:1", "first line"),
        ("notes.txt:3", "second line"),
    ]


def test_bad_input_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1, "text": "ok"}\nnot json\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match="bad.jsonl:2"):
        list(read_documents(path))
    path.write_text('{"id": 1, "body": "ok"}\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match="text_field"):
        list(read_documents(path))
    with pytest.raises(InvalidInputError, match="does not exist"):
        list(read_documents(tmp_path / "absent.jsonl"))
    with pytest.raises(ConfigError, match="unknown corpus format"):
        list(read_documents(path, format="csv"))


def test_repeated_ids_can_be_numbered(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(_jsonl([ROWS[0], ROWS[1], ROWS[0]]))
    ids = [d.doc_id for d in read_documents(path, duplicate_ids="number")]
    assert ids == ["d1", "d2", "d1#2"]
    with pytest.raises(ConfigError, match="duplicate_ids"):
        list(read_documents(path, duplicate_ids="drop"))
