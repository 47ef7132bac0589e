"""Chunked shard writing: chunk cuts, row groups, compression, the corpus fast path,
the array mixture tally, and clean-up after an error."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.contract import canonical_bytes
from tokenpact.data import Document, account_mixture, encode_dataset, open_dataset
from tokenpact.data import encode as encode_module
from tokenpact.data.corpus_manifest import build_corpus_manifest, corpus_records_bytes
from tokenpact.data.documents import sort_by_id
from tokenpact.data.mixture import tally_mixture
from tokenpact.data.shard_writer import chunk_bounds
from tokenpact.errors import ContractError, InvalidInputError


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=600, special_tokens=())


@pytest.fixture(scope="module")
def docs(real_docs: list[Document]) -> list[Document]:
    return real_docs[:150] + [Document("zz-empty", "", source="edge")]


def _tree(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 120))
def test_chunk_bounds_are_the_shortest_runs_reaching_the_size(sizes: list[int], limit: int) -> None:
    texts = ["x" * n for n in sizes]
    bounds = chunk_bounds(texts, limit)
    assert [i for a, b in bounds for i in range(a, b)] == list(range(len(texts)))
    for k, (a, b) in enumerate(bounds):
        total = sum(sizes[a:b])
        if k < len(bounds) - 1:
            assert total >= limit  # a chunk is closed only once it is big enough
        assert b - a == 1 or sum(sizes[a : b - 1]) < limit  # and not one document later


def test_multi_chunk_shards_round_trip_and_stay_byte_identical(
    tmp_path: Path,
    tok: tp.Tokenizer,
    docs: list[Document],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encode_module, "CHUNK_CHARS", 2_000)
    shuffled = docs[:]
    random.Random(11).shuffle(shuffled)
    ordered = sort_by_id(docs)
    for fmt in ("parquet", "megatron"):
        a, b = tmp_path / f"{fmt}-a", tmp_path / f"{fmt}-b"
        encode_dataset(docs, tok, a, format=fmt, records_per_shard=70, threads=1)
        encode_dataset(shuffled, tok, b, format=fmt, records_per_shard=70, threads=2)
        assert _tree(a) == _tree(b)
        ds = open_dataset(a, tokenizer=tok)
        assert ds.doc_ids == [d.doc_id for d in ordered]
        for (_, ids), doc in zip(ds, ordered, strict=True):
            assert ids.tolist() == tok.encode(doc.text)
        assert not [p for p in a.iterdir() if p.name.startswith(".")]
    texts = [d.text for d in ordered[:70]]
    meta = pq.ParquetFile(tmp_path / "parquet-a" / "shard-00000.parquet").metadata
    assert meta.num_row_groups == len(chunk_bounds(texts, 2_000)) > 1
    # Megatron bytes do not depend on the chunking: the same as one chunk per shard.
    monkeypatch.setattr(encode_module, "CHUNK_CHARS", 1 << 30)
    encode_dataset(docs, tok, tmp_path / "one", format="megatron", records_per_shard=70)
    assert _tree(tmp_path / "one") == _tree(tmp_path / "megatron-a")


@pytest.mark.parametrize(("compression", "codec"), [("none", "UNCOMPRESSED"), ("zstd", "ZSTD")])
def test_parquet_compression_is_the_one_asked_for(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document], compression: str, codec: str
) -> None:
    manifest = encode_dataset(docs, tok, tmp_path, compression=compression)
    meta = pq.ParquetFile(tmp_path / "shard-00000.parquet").metadata
    codecs = {meta.row_group(0).column(c).compression for c in range(meta.num_columns)}
    assert codecs == {codec} and manifest["compression"] == compression
    assert open_dataset(tmp_path, tokenizer=tok).lengths.sum() == manifest["tokens"]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_parquet_pages_required_fields_no_token_statistics(
    tmp_path: Path, tok: tp.Tokenizer, docs: list[Document], compression: str
) -> None:
    encode_dataset(docs, tok, tmp_path, compression=compression)
    shard = pq.ParquetFile(tmp_path / "shard-00000.parquet")
    schema = shard.schema_arrow
    assert not any(f.nullable for f in schema)
    assert not schema.field("input_ids").type.value_field.nullable
    group = shard.metadata.row_group(0)
    columns = {group.column(c).path_in_schema: group.column(c) for c in range(4)}
    assert {name: col.is_stats_set for name, col in columns.items()} == {
        "doc_id": True,
        "input_ids.list.element": False,
        "length": True,
        "truncated": True,
    }
    for name, col in columns.items():  # PLAIN pages, a dictionary for the native tokens
        assert "PLAIN" in col.encodings
        dictionary = compression == "none" and name == "input_ids.list.element"
        assert col.has_dictionary_page == dictionary
        assert ("RLE_DICTIONARY" in col.encodings) == dictionary
        assert "PLAIN_DICTIONARY" not in col.encodings
    # Any encoding reads back to the IDs the tokenizer gives.
    table = shard.read()
    ordered = sort_by_id(docs)
    assert table.column("doc_id").to_pylist() == [d.doc_id for d in ordered]
    assert table.column("input_ids").to_pylist() == [tok.encode(d.text) for d in ordered]


def test_a_failed_encoding_leaves_no_files(tmp_path: Path, tok: tp.Tokenizer) -> None:
    docs = [Document(f"d{i:03d}", "plain text " * 20) for i in range(50)]
    docs.append(Document("d999", "bad \ud800 surrogate"))
    for fmt in ("parquet", "megatron"):
        out = tmp_path / fmt
        with pytest.raises(InvalidInputError, match="shard 1"):
            encode_dataset(docs, tok, out, format=fmt, records_per_shard=30)
        # No temporary file and no manifest: open_dataset fails closed on what is left.
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
        assert not (out / "dataset.json").exists()


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(_text.filter(bool), _text, _text.filter(bool), _text), max_size=12),
    st.sampled_from(["fit", "valid", "test", "train"]),
    _text,
)
def test_corpus_fast_path_equals_the_reference_manifest(
    rows: list[tuple[str, str, str, str]], role: str, revision: str
) -> None:
    docs = {d: Document(d, t, source=s, license_class=lic or "unknown") for d, t, s, lic in rows}
    ordered = sort_by_id(docs.values())
    roles = {d.doc_id: role for d in ordered[::2]}
    data, sizes = corpus_records_bytes(ordered, revision=revision or "r", roles=roles)
    reference = build_corpus_manifest(ordered, revision=revision or "r", roles=roles)
    assert data == canonical_bytes(reference.to_json())
    assert sizes.tolist() == [len(d.text.encode("utf-8")) for d in ordered]


def test_corpus_records_of_real_text_equal_the_reference(real_docs: list[Document]) -> None:
    ordered = sort_by_id(real_docs)
    data, sizes = corpus_records_bytes(ordered, revision="r1")
    reference = build_corpus_manifest(ordered, revision="r1")
    assert data == canonical_bytes(reference.to_json())
    assert sizes.dtype == np.int64
    assert sizes.tolist() == [len(d.text.encode("utf-8")) for d in ordered]
    digest = hashlib.sha256(ordered[0].text.encode("utf-8")).hexdigest()
    assert f'"raw_sha256":"sha256:{digest}"'.encode() in data


def test_corpus_records_hash_a_lone_surrogate_from_its_surrogatepass_bytes() -> None:
    # Such a text has no UTF-8 (the native path refuses it): the reference records.
    docs = [
        Document("a", "plain"),
        Document("b", "bad \ud800 surrogate"),
        Document("c", "caf\u00e9"),
    ]
    data, sizes = corpus_records_bytes(docs, revision="r")
    raw = [d.text.encode("utf-8", "surrogatepass") for d in docs]
    assert sizes.tolist() == [len(b) for b in raw]
    for b in raw:
        assert f"sha256:{hashlib.sha256(b).hexdigest()}".encode() in data


def test_native_records_refuse_columns_of_different_lengths() -> None:
    from tokenpact import _native

    with pytest.raises(InvalidInputError, match="record columns differ in length"):
        _native.corpus_records_json(["a", "b"], ["a"], ["x", "x"], ["s", "s"], ["t", "t"])


def test_corpus_fast_path_names_a_role_without_split() -> None:
    docs = [Document("a", "x"), Document("b", "y")]
    with pytest.raises(ContractError, match="role 'holdout' has no corpus split"):
        corpus_records_bytes(docs, revision="r", roles={"b": "holdout"})


def test_array_tally_equals_account_mixture(real_docs: list[Document]) -> None:
    rng = random.Random(3)
    lengths = {d.doc_id: rng.randrange(0, 900) for d in real_docs}
    roles = {d.doc_id: rng.choice(["fit", "valid"]) for d in real_docs}
    fast = tally_mixture(
        [d.source for d in real_docs],
        [roles[d.doc_id] for d in real_docs],
        [d.n_bytes for d in real_docs],
        np.array([lengths[d.doc_id] for d in real_docs]),
    )
    assert fast == account_mixture(real_docs, lengths, roles=roles)
    assert fast.to_json() == account_mixture(real_docs, lengths, roles=roles).to_json()
    with pytest.raises(InvalidInputError, match="one entry per document"):
        tally_mixture(["a"], ["all"], [1, 2], [3])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["web", "code", "é-books", ""]),
            st.sampled_from(["fit", "valid", "test"]),
            st.integers(0, 40),
            st.integers(0, 5_000),
        ),
        max_size=30,
    )
)
def test_array_tally_equals_account_mixture_in_order(
    rows: list[tuple[str, str, int, int]],
) -> None:
    # Random (source, role) columns: the same rows, in the same (first-seen) order.
    docs = [
        Document(f"d{i:03d}", "é" * size, source=src or "unknown")
        for i, (src, _, size, _) in enumerate(rows)
    ]
    roles = {d.doc_id: r[1] for d, r in zip(docs, rows, strict=True)}
    fast = tally_mixture(
        [d.source for d in docs],
        [r[1] for r in rows],
        [d.n_bytes for d in docs],
        [r[3] for r in rows],
    )
    slow = account_mixture(
        docs, {d.doc_id: r[3] for d, r in zip(docs, rows, strict=True)}, roles=roles
    )
    assert fast == slow
    assert list(fast.rows) == list(slow.rows)
    with pytest.raises(InvalidInputError, match="one entry per document"):
        tally_mixture([d.source for d in docs] + ["extra"], [r[1] for r in rows], [1], [1])
