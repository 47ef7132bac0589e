"""The pipelined local encoder (several chunk batch calls in flight) writes the same
bytes as the reference path (one call at a time, in order), for random documents."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.data import Document, encode_dataset, open_dataset
from tokenpact.data import encode as encode_module
from tokenpact.data.chunk_encoding import encode_flat_digests
from tokenpact.data.chunk_source import LocalChunkSource
from tokenpact.data.corpus_manifest import build_corpus_manifest
from tokenpact.data.shard_formats import token_dtype
from tokenpact.errors import ConfigError, ContractError, InvalidInputError, TokenpactError


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    # The default special tokens bring a post-processor (BOS first): add_special_tokens
    # then changes the IDs.
    tok = tp.train_bpe([d.text for d in real_docs], vocab_size=700)
    assert tok.encode("x", add_special_tokens=True) != tok.encode("x")
    return tok


def _tree(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def _encode_both(
    docs: list[Document], tok: tp.Tokenizer, root: Path, **options: Any
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The shard tree written by the reference path (one call at a time, the corpus
    thread hashing the texts) and by the pipelined one (the encoder hashing them)."""
    trees = []
    for ahead in (1, 4):
        # 1: each chunk encoded after the last, and the corpus thread hashes the texts.
        source = LocalChunkSource(encode_ahead=ahead, text_digests=ahead > 1)
        encode_dataset(docs, tok, root / f"ahead{ahead}", engine=source, **options)
        trees.append(_tree(root / f"ahead{ahead}"))
    return trees[0], trees[1]


_texts = st.text(
    st.characters(exclude_categories=["Cs"], max_codepoint=0x1F64F), max_size=120
) | st.sampled_from(["", " ", "naïve café", "日本語のテキスト", "def f(x):\n    return x"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_texts, max_size=40),
    fmt=st.sampled_from(["parquet", "megatron"]),
    wide=st.booleans(),
    compression=st.sampled_from(["none", "none", "zstd"]),
    max_length=st.none() | st.integers(1, 12),
    specials=st.booleans(),
    per_shard=st.integers(1, 25),
    chunk_chars=st.integers(1, 300),
    threads=st.sampled_from([1, 2]),
)
def test_pipelined_shards_equal_the_reference_path(
    tok: tp.Tokenizer,
    texts: list[str],
    fmt: str,
    wide: bool,
    compression: str,
    max_length: int | None,
    specials: bool,
    per_shard: int,
    chunk_chars: int,
    threads: int,
) -> None:
    docs = [
        Document(f"doc-{i:03d}", t, source=f"s{i % 3}", license_class=("cc-by", 'x\n"é')[i % 2])
        for i, t in enumerate(texts)
    ]
    roles = {d.doc_id: ("fit", "valid", "test")[i % 3] for i, d in enumerate(docs) if i % 4}
    saved = encode_module.CHUNK_CHARS
    # 32-bit IDs (uint32 Parquet, int32 Megatron) without a 65,537-entry vocabulary.
    if wide:
        encode_module.token_dtype = lambda _v, f: np.dtype(  # type: ignore[assignment]
            np.uint32 if f == "parquet" else np.int32
        )
    encode_module.CHUNK_CHARS = chunk_chars  # several chunks (row groups) per shard
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ref, fast = _encode_both(
                docs,
                tok,
                Path(tmp),
                format=fmt,
                compression=compression if fmt == "parquet" else "none",
                max_length=max_length,
                add_special_tokens=specials,
                records_per_shard=per_shard,
                threads=threads,
                roles=roles,
                corpus_revision="r\u00e9v",
            )
            assert fast == ref  # shards, corpus.json and dataset.json
            if not docs:
                return
            ds = open_dataset(Path(tmp) / "ahead4", tokenizer=tok)
            for (_, ids), doc in zip(ds, docs, strict=True):
                want = tok.encode(doc.text, add_special_tokens=specials)
                assert ids.tolist() == want[:max_length]
    finally:
        encode_module.token_dtype = token_dtype
        encode_module.CHUNK_CHARS = saved


def test_pipelined_errors_stay_typed_and_name_the_shard(tmp_path: Path, tok: tp.Tokenizer) -> None:
    docs = [Document(f"d{i:03d}", "plain text " * 30) for i in range(60)]
    bad = [*docs, Document("d999", "bad \ud800 surrogate")]
    encode_module.CHUNK_CHARS, saved = 500, encode_module.CHUNK_CHARS
    try:
        for fmt in ("parquet", "megatron"):
            out = tmp_path / fmt
            with pytest.raises(InvalidInputError, match="shard 2"):
                encode_dataset(bad, tok, out, format=fmt, records_per_shard=25, threads=2)
            assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
            assert not (out / "dataset.json").exists()
        # An ID too large for the dataset's dtype: a ContractError, nothing left behind.
        encode_module.token_dtype = lambda _v, _f: np.dtype(np.uint8)  # type: ignore[assignment]
        with pytest.raises(ContractError, match="does not fit"):
            encode_dataset(docs, tok, tmp_path / "narrow", format="megatron", threads=2)
        assert not [p.name for p in (tmp_path / "narrow").iterdir() if p.name.startswith(".")]
    finally:
        encode_module.CHUNK_CHARS = saved
        encode_module.token_dtype = token_dtype


def test_a_given_corpus_manifest_is_written_and_bound(
    tmp_path: Path, tok: tp.Tokenizer, real_docs: list[Document]
) -> None:
    docs = real_docs[:80]
    roles = {d.doc_id: ("fit" if i % 3 else "test") for i, d in enumerate(docs)}
    built = build_corpus_manifest(docs, revision="r1", roles=roles)
    given = encode_dataset(docs, tok, tmp_path / "given", corpus=built, roles=roles)
    derived = encode_dataset(docs, tok, tmp_path / "derived", corpus_revision="r1", roles=roles)
    # The pipeline's own manifest is the same one: same corpus file, hash and mixture.
    assert (tmp_path / "given" / "corpus.json").read_bytes() == (
        tmp_path / "derived" / "corpus.json"
    ).read_bytes()
    assert given["corpus_hash"] == derived["corpus_hash"] == built.hash
    assert given["mixture"] == derived["mixture"]


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=60), max_size=12), threads=st.sampled_from([1, 2]))
def test_encoder_digests_are_the_texts_sha256(
    tok: tp.Tokenizer, texts: list[str], threads: int
) -> None:
    if any("\ud800" <= c <= "\udfff" for t in texts for c in t):
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            encode_flat_digests(tok, texts, threads=threads)
        return
    ids, offsets, digests, sizes = encode_flat_digests(tok, texts, threads=threads)
    flat_ids, flat_offsets = tok.encode_batch_flat(texts, threads=threads)
    assert ids.tolist() == flat_ids.tolist() and offsets.tolist() == flat_offsets.tolist()
    assert digests.shape == (len(texts), 32) and digests.dtype == np.uint8
    assert [bytes(d) for d in digests] == [hashlib.sha256(t.encode()).digest() for t in texts]
    assert sizes.tolist() == [len(t.encode()) for t in texts]


def test_the_tokenizer_digest_method_is_a_deprecated_alias(tok: tp.Tokenizer) -> None:
    texts = ["naïve café", "", "日本語"]
    with pytest.warns(DeprecationWarning, match="encode_flat_digests"):
        got = tok.encode_batch_flat_digests(texts, threads=1)
    want = encode_flat_digests(tok, texts, threads=1)
    assert all(a.tolist() == b.tolist() for a, b in zip(got, want, strict=True))


def test_a_chunk_source_is_checked(tmp_path: Path, tok: tp.Tokenizer) -> None:
    with pytest.raises(ConfigError, match="encode_ahead"):
        LocalChunkSource(encode_ahead=0)
    with pytest.raises(ConfigError, match="unknown engine"):
        encode_dataset([Document("a", "x")], tok, tmp_path, engine="spark")


@pytest.mark.parametrize("field", ["source", "license_class", "doc_id", "role"])
def test_a_bad_record_field_fails_as_on_the_reference_path(
    tmp_path: Path, tok: tp.Tokenizer, field: str
) -> None:
    docs = [Document(f"d{i:03d}", f"text {i} " * 20) for i in range(30)]
    roles = {"d005": "holdout"} if field == "role" else None
    if field != "role":
        docs.append(Document(**{"doc_id": "z999", "text": "fine", field: "bad \ud800 field"}))
    outcomes = []
    for digests in (False, True):
        source = LocalChunkSource(text_digests=digests)
        try:
            encode_dataset(
                docs, tok, tmp_path / str(digests), records_per_shard=7, roles=roles, engine=source
            )
        except TokenpactError as exc:
            outcomes.append((type(exc), str(exc)))
        else:
            outcomes.append((None, (tmp_path / str(digests) / "corpus.json").read_text("utf-8")))
        out = tmp_path / str(digests)
        assert not out.exists() or not [p.name for p in out.iterdir() if p.name[0] == "."]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] is not None and issubclass(outcomes[0][0], TokenpactError)


@given(parts=st.lists(st.binary(max_size=40), max_size=6))
def test_framed_digest_of_parts_is_that_of_the_joined_payload(parts: list[bytes]) -> None:
    from tokenpact.contract.hashing import framed_digest, framed_digest_parts

    assert framed_digest_parts("corpus-v1", parts) == framed_digest("corpus-v1", b"".join(parts))
