"""Encoded shards: Parquet and Megatron round trips, binding checks, byte identity."""

from __future__ import annotations

import hashlib
import json
import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tokenpact as tp
from tokenpact.batch import collate_bins, first_fit_decreasing
from tokenpact.contract import CorpusManifest
from tokenpact.data import Document, build_corpus_manifest, encode_dataset, open_dataset
from tokenpact.data.shard_formats import read_megatron_index, token_dtype
from tokenpact.errors import ConfigError, ContractError


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=600, special_tokens=())


@pytest.fixture(scope="module")
def docs(real_docs: list[Document]) -> list[Document]:
    return real_docs[:150] + [Document("zz-empty", "", source="edge")]


def _tree(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("fmt", ["parquet", "megatron"])
def test_round_trip_through_the_reader(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document], fmt: str
) -> None:
    manifest = encode_dataset(docs, tok, tmp_path / "ds", format=fmt, records_per_shard=40)
    ds = open_dataset(tmp_path / "ds", tokenizer=tok)
    ordered = sorted(docs, key=lambda d: d.doc_id)
    assert ds.doc_ids == [d.doc_id for d in ordered]
    for (doc_id, ids), doc in zip(ds, ordered, strict=True):
        assert ids.tolist() == tok.encode(doc.text), doc_id
    assert ds.input_ids.dtype == np.uint16
    assert manifest["records"] == len(docs) and len(manifest["shards"]) == 4
    assert manifest["tokens"] == int(ds.lengths.sum())
    assert manifest["max_token_id"] == int(ds.input_ids.max())
    assert manifest["mixture"]["totals"]["tokens"] == manifest["tokens"]
    corpus = CorpusManifest.from_json(json.loads((tmp_path / "ds" / "corpus.json").read_text()))
    assert corpus.hash == manifest["corpus_hash"] == ds.declaration.corpus_hash
    assert corpus.hash == build_corpus_manifest(docs, revision="unversioned").hash
    by_source = {r["source"]: 0 for r in manifest["mixture"]["rows"]}
    for r in manifest["mixture"]["rows"]:
        by_source[r["source"]] += r["tokens"]
    assert sum(by_source.values()) == sum(s["tokens"] for s in manifest["shards"])
    for shard in manifest["shards"]:
        for name, digest in shard["files"].items():
            data = (tmp_path / "ds" / name).read_bytes()
            assert digest == "sha256:" + hashlib.sha256(data).hexdigest()


def test_parquet_schema(tmp_path: Path, tok: tp.Tokenizer, docs: list[Document]) -> None:
    encode_dataset(docs, tok, tmp_path / "z", format="parquet", compression="zstd")
    assert open_dataset(tmp_path / "z", tokenizer=tok).doc_ids[0] == min(d.doc_id for d in docs)
    with pytest.raises(ConfigError, match="compression"):
        encode_dataset(docs, tok, tmp_path / "x", compression="brotli9")
    encode_dataset(docs, tok, tmp_path, format="parquet", records_per_shard=1000)
    table = pq.read_table(tmp_path / "shard-00000.parquet")
    assert table.column_names == ["doc_id", "input_ids", "length", "truncated"]
    ids_type = table.schema.field("input_ids").type
    assert ids_type.value_type == pa.uint16() and pa.types.is_list(ids_type)
    meta = table.schema.metadata
    assert meta[b"tokenpact.tokenizer_hash"].decode() == tok.semantic_hash


def _megatron_reference(seqs: list[list[int]], dtype: np.dtype, code: int) -> tuple[bytes, bytes]:
    """The .bin/.idx an IndexedDatasetBuilder writes for one sequence per document,
    spelled out from its documented format (header, sizes, pointers, doc indices)."""
    sizes = [len(s) for s in seqs]
    pointers, at = [], 0
    for n in sizes:
        pointers.append(at)
        at += n * dtype.itemsize
    idx = b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", code)
    idx += struct.pack("<Q", len(seqs)) + struct.pack("<Q", len(seqs) + 1)
    idx += struct.pack(f"<{len(sizes)}i", *sizes)
    idx += struct.pack(f"<{len(pointers)}q", *pointers)
    idx += struct.pack(f"<{len(seqs) + 1}q", *range(len(seqs) + 1))
    data = b"".join(np.asarray(s, dtype=dtype).tobytes() for s in seqs)
    return data, idx


def test_megatron_bytes_match_the_builder_format(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document]
) -> None:
    encode_dataset(docs, tok, tmp_path, format="megatron", records_per_shard=1000)
    ordered = sorted(docs, key=lambda d: d.doc_id)
    seqs = [tok.encode(d.text) for d in ordered]
    data, idx = _megatron_reference(seqs, np.dtype(np.uint16), 8)
    assert (tmp_path / "shard-00000.bin").read_bytes() == data
    assert (tmp_path / "shard-00000.idx").read_bytes() == idx
    dtype, sizes, _ = read_megatron_index(idx)
    assert dtype == np.uint16 and sizes.tolist() == [len(s) for s in seqs]


def test_wide_vocabularies_use_32_bit_ids() -> None:
    assert token_dtype(65_499, "megatron") == np.uint16
    assert token_dtype(65_500, "megatron") == np.int32  # Megatron's own rule (< 65500)
    assert token_dtype(65_536, "parquet") == np.uint16
    assert token_dtype(65_537, "parquet") == np.uint32


def test_byte_identical_for_any_order_and_thread_count(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document]
) -> None:
    shuffled = docs[:]
    random.Random(5).shuffle(shuffled)
    for fmt in ("parquet", "megatron"):
        encode_dataset(docs, tok, tmp_path / f"{fmt}1", format=fmt, records_per_shard=33, threads=1)
        encode_dataset(
            shuffled, tok, tmp_path / f"{fmt}2", format=fmt, records_per_shard=33, threads=2
        )
        assert _tree(tmp_path / f"{fmt}1") == _tree(tmp_path / f"{fmt}2")


def test_reader_refuses_other_tokenizer_and_changed_shard(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document], real_docs: list[Document]
) -> None:
    encode_dataset(docs, tok, tmp_path, format="megatron", records_per_shard=60)
    other = tp.train_bpe([d.text for d in real_docs], vocab_size=590, special_tokens=())
    with pytest.raises(ContractError, match="encoded with tokenizer"):
        open_dataset(tmp_path, tokenizer=other)
    with pytest.raises(ContractError, match="template"):
        open_dataset(tmp_path, tokenizer=tok, template_hash="sha256:" + "0" * 64)
    path = tmp_path / "shard-00001.bin"
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    lazy = open_dataset(tmp_path, tokenizer=tok)  # opening reads only the indexes
    assert lazy[0].size and not lazy.verified
    with pytest.raises(ContractError, match="shard-00001.bin has digest"):
        lazy[int(lazy.shard_docs[1])]  # first touch of the changed shard
    with pytest.raises(ContractError, match="shard-00001.bin has digest"):
        open_dataset(tmp_path, tokenizer=tok, verify="open")
    background = open_dataset(tmp_path, tokenizer=tok, verify="background")
    background.verify_in_background().join()  # a second pass, joined here
    assert isinstance(background.background_error, ContractError)
    assert "shard-00001.bin" in str(background.background_error) and not background.verified
    with pytest.raises(ContractError, match="shard-00001.bin has digest"):
        background[int(background.shard_docs[1])]  # still refused on first touch
    (tmp_path / "shard-00001.bin").unlink()
    with pytest.raises(ContractError, match="missing"):
        open_dataset(tmp_path, tokenizer=tok)
    with pytest.raises(ConfigError, match="already holds a dataset"):
        encode_dataset(docs, tok, tmp_path, format="megatron")


def test_truncation_flags_and_packing(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document]
) -> None:
    manifest = encode_dataset(docs, tok, tmp_path, format="parquet", max_length=64)
    ds = open_dataset(tmp_path, tokenizer=tok)
    full = {d.doc_id: tok.encode(d.text) for d in docs}
    for i, doc_id in enumerate(ds.doc_ids):
        assert ds[i].tolist() == full[doc_id][:64]
        assert bool(ds.truncated[i]) == (len(full[doc_id]) > 64)
    assert manifest["truncated"] == int(ds.truncated.sum()) > 0
    table = ds.record_table()
    plan = first_fit_decreasing(table.lengths, capacity=128)
    batch = collate_bins(table, plan, start=0, stop=min(4, plan.n_bins))
    assert batch.input_ids.shape[0] == int(plan.bin_tokens[: min(4, plan.n_bins)].sum())
    first = batch.sample_ids[0]
    np.testing.assert_array_equal(
        batch.input_ids[: batch.cu_seqlens[1]], ds[ds.doc_ids.index(first)]
    )
