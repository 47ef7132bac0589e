"""Encoded datasets read back as untrusted (issue 43): a manifest that lies about its own
shards, its declaration, its corpus or its IDs is refused with a ContractError, and a
valid dataset still opens and reads the same."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.contract import DatasetDeclaration
from tokenpact.data import Document, encode_dataset, open_dataset
from tokenpact.errors import ConfigError, ContractError

FORMATS = ["parquet", "megatron"]


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=400, special_tokens=())


@pytest.fixture(scope="module")
def originals(
    tmp_path_factory: pytest.TempPathFactory, tok: tp.Tokenizer, real_docs: list[Document]
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tamper")
    out = {}
    for fmt in FORMATS:
        encode_dataset(real_docs[:40], tok, root / fmt, format=fmt, records_per_shard=10)
        out[fmt] = root / fmt
    return out


@pytest.fixture
def copy_of(originals: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    """A fresh copy of the encoded dataset of a format, to tamper with."""
    return lambda fmt: Path(shutil.copytree(originals[fmt], tmp_path / fmt))


def _tampered(copy_of: Callable[[str], Path], fmt: str, change: Callable[..., None]) -> Path:
    """A copy of the ``fmt`` dataset whose manifest ``change`` edited."""
    path = copy_of(fmt)
    _edit(path, change)
    return path


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((path / "dataset.json").read_text())
    change(manifest)
    (path / "dataset.json").write_text(json.dumps(manifest))


def _rehash_declaration(m: dict[str, Any]) -> None:
    m["declaration_hash"] = DatasetDeclaration.from_json(m["declaration"]).hash


def _reseal(path: Path, name: str) -> None:
    """Recompute the manifest's digest of ``name`` (what an attacker would do)."""
    digest = "sha256:" + hashlib.sha256((path / name).read_bytes()).hexdigest()

    def change(m: dict[str, Any]) -> None:
        for entry in m["shards"]:
            if name in entry["files"]:
                entry["files"][name] = digest

    _edit(path, change)


def _refused(path: Path, tok: tp.Tokenizer | None = None, match: str | None = None) -> None:
    with pytest.raises(ContractError, match=match):
        open_dataset(path, tokenizer=tok, verify="open")


def _read_all(path: Path, tok: tp.Tokenizer) -> tuple[list[str], list[list[int]]]:
    ds = open_dataset(path, tokenizer=tok, verify="open")
    return ds.doc_ids, [ds[i].tolist() for i in range(len(ds))]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_valid_dataset_still_opens_and_verifies(
    originals: dict[str, Path], tok: tp.Tokenizer, fmt: str
) -> None:
    ids, records = _read_all(originals[fmt], tok)
    assert len(ids) == 40 and ids == sorted(ids)
    assert all(max(r, default=0) < tok.vocab_size for r in records)


def _drop(m: dict[str, Any]) -> None:
    gone = m["shards"].pop(1)
    m["records"] -= gone["records"]
    m["tokens"] -= gone["tokens"]


def _swap(m: dict[str, Any]) -> None:
    m["shards"][0], m["shards"][1] = m["shards"][1], m["shards"][0]


def _duplicate(m: dict[str, Any]) -> None:
    m["shards"][1] = m["shards"][0]
    m["tokens"] = sum(s["tokens"] for s in m["shards"])


def _drop_last_everywhere(m: dict[str, Any]) -> None:
    """The last shard dropped, and every count that says 40 records rewritten to 30."""
    gone = m["shards"].pop()
    m["records"] -= gone["records"]
    m["tokens"] -= gone["tokens"]
    m["declaration"]["record_count"] = m["records"]
    _rehash_declaration(m)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("change", [_drop, _swap, _duplicate, _drop_last_everywhere])
def test_shard_entries_dropped_swapped_or_duplicated_are_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str, change: Callable[..., None]
) -> None:
    _refused(_tampered(copy_of, fmt, change), tok)


def _other_tokenizer(m: dict[str, Any]) -> None:
    m["declaration"]["tokenizer_hash"] = "sha256:" + "ab" * 32
    _rehash_declaration(m)


def _max_below(m: dict[str, Any]) -> None:
    m["max_token_id"] = m["declaration"]["max_token_id"] = 20
    _rehash_declaration(m)


def _max_above(m: dict[str, Any]) -> None:
    m["max_token_id"] = m["declaration"]["max_token_id"] = m["max_token_id"] + 1
    _rehash_declaration(m)


def _declaration_hash(m: dict[str, Any]) -> None:
    m["declaration_hash"] = "sha256:" + "00" * 32


def _corpus_hash_everywhere(m: dict[str, Any]) -> None:
    m["corpus_hash"] = m["declaration"]["corpus_hash"] = "sha256:" + "cd" * 32
    _rehash_declaration(m)


def _corpus_hash_manifest_only(m: dict[str, Any]) -> None:
    m["corpus_hash"] = "sha256:" + "cd" * 32


def _truncated(m: dict[str, Any]) -> None:
    m["truncated"] = 3


def _first_doc_id(m: dict[str, Any]) -> None:
    m["shards"][2]["first_doc_id"] = m["shards"][1]["last_doc_id"] + "~"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "change",
    [
        _other_tokenizer,
        _max_below,
        _max_above,
        _declaration_hash,
        _corpus_hash_everywhere,
        _corpus_hash_manifest_only,
        _truncated,
        _first_doc_id,
    ],
)
def test_declaration_and_counts_that_lie_are_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str, change: Callable[..., None]
) -> None:
    path = _tampered(copy_of, fmt, change)
    _refused(path, tok)
    _refused(path, None)


@pytest.mark.parametrize("fmt", FORMATS)
def test_vocab_size_must_be_the_tokenizers(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str
) -> None:
    path = copy_of(fmt)
    _edit(path, lambda m: m.update(vocab_size=m["vocab_size"] + 7))
    _refused(path, tok, "vocab_size")
    _edit(path, lambda m: m.update(vocab_size=70_000))  # IDs no longer fit the dtype
    _refused(path, None, "dtype")


@pytest.mark.parametrize("fmt", FORMATS)
def test_corpus_json_is_bound(copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str) -> None:
    path = copy_of(fmt)
    corpus = json.loads((path / "corpus.json").read_text())
    corpus["revision"] = "edited"
    (path / "corpus.json").write_text(json.dumps(corpus))
    _refused(path, tok, "corpus")
    (path / "corpus.json").unlink()
    _refused(path, tok, "corpus.json is missing")


@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_version_and_deep_or_malformed_manifests_are_typed(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str
) -> None:
    path = copy_of(fmt)
    good = (path / "dataset.json").read_text()
    _edit(path, lambda m: m.update(version=2))
    _refused(path, tok, "version")
    (path / "dataset.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(path, tok, "nest")
    for change in (
        lambda m: m["shards"][0]["files"].clear(),
        lambda m: m["shards"][0].pop("records"),
        lambda m: m.update(dtype=["uint16"]),
        lambda m: m.update(declaration=None),
        lambda m: m.update(shards={"a": 1}),
        lambda m: m["shards"].__setitem__(0, 5),
    ):
        (path / "dataset.json").write_text(good)
        _edit(path, change)
        _refused(path, tok)


def test_resealed_shard_ids_above_the_vocabulary_are_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer
) -> None:
    path = copy_of("megatron")
    data = bytearray((path / "shard-00001.bin").read_bytes())
    data[0:2] = struct.pack("<H", tok.vocab_size + 5)
    (path / "shard-00001.bin").write_bytes(bytes(data))
    _reseal(path, "shard-00001.bin")
    ds = open_dataset(path, tokenizer=tok)  # first touch: the read refuses
    with pytest.raises(ContractError, match="max_token_id"):
        ds.tokens(0, ds.n_tokens)
    _refused(path, tok, "max_token_id")


def test_resealed_parquet_ids_above_the_vocabulary_are_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = copy_of("parquet")
    name = "shard-00002.parquet"
    table = pq.read_table(path / name)
    lists = table.column("input_ids").combine_chunks()
    flat = lists.flatten().to_numpy().copy()
    flat[3] = tok.vocab_size + 1
    new = pa.ListArray.from_arrays(lists.offsets, pa.array(flat, type=pa.uint16()))
    table = table.set_column(1, "input_ids", new)
    pq.write_table(table, path / name)
    _reseal(path, name)
    ds = open_dataset(path, tokenizer=tok)
    with pytest.raises(ContractError, match="max_token_id"):
        ds.tokens(0, ds.n_tokens)


def test_megatron_idx_negative_sizes_are_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer
) -> None:
    path = copy_of("megatron")
    idx = bytearray((path / "shard-00000.idx").read_bytes())
    header = struct.calcsize("<9sQBQQ")
    first, second = struct.unpack_from("<ii", idx, header)
    struct.pack_into("<ii", idx, header, -1, second + first + 1)  # same total, one negative
    (path / "shard-00000.idx").write_bytes(bytes(idx))
    _reseal(path, "shard-00000.idx")
    _refused(path, tok, "negative")


def test_megatron_doc_list_not_utf8_is_typed(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer
) -> None:
    path = copy_of("megatron")
    (path / "shard-00000.docs.tsv").write_bytes(b"\xff\xfe\t0\n" * 10)
    _reseal(path, "shard-00000.docs.tsv")
    _refused(path, tok, "UTF-8")


def test_a_corpus_manifest_of_other_documents_is_refused_at_encode(
    tmp_path: Path, tok: tp.Tokenizer, real_docs: list[Document]
) -> None:
    from tokenpact.data import build_corpus_manifest

    corpus = build_corpus_manifest(real_docs[:5], revision="r")
    with pytest.raises(ConfigError, match="corpus manifest"):
        encode_dataset(real_docs[:6], tok, tmp_path / "ds", corpus=corpus)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_resealed_negative_int32_ids_are_refused(
    tmp_path: Path, tok: tp.Tokenizer, real_docs: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from tokenpact.data import encode as encode_module

    # Megatron stores int32 IDs for large vocabularies; a small one written wide here.
    monkeypatch.setattr(encode_module, "token_dtype", lambda _v, _f: np.dtype(np.int32))
    path = tmp_path / "wide"
    encode_dataset(real_docs[:12], tok, path, format="megatron", records_per_shard=6)
    assert open_dataset(path, tokenizer=tok, verify="open").dtype == np.int32
    data = bytearray((path / "shard-00000.bin").read_bytes())
    data[4:8] = struct.pack("<i", -5)
    (path / "shard-00000.bin").write_bytes(bytes(data))
    _reseal(path, "shard-00000.bin")
    _refused(path, tok, "negative")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_resealed_corpus_json_with_a_changed_record_is_refused(
    copy_of: Callable[[str], Path], tok: tp.Tokenizer, fmt: str
) -> None:
    """An attacker edits one document record of corpus.json and rewrites the corpus hash
    everywhere it is recorded: the hash check passes, the streamed IDs do not."""
    from tokenpact.contract import canonical_bytes
    from tokenpact.contract.hashing import CORPUS, framed_digest

    path = copy_of(fmt)
    corpus = json.loads((path / "corpus.json").read_text("utf-8"))
    corpus["documents"][7]["document_id"] += "-edited"
    body = canonical_bytes(corpus)
    (path / "corpus.json").write_bytes(body + b"\n")
    digest = "sha256:" + framed_digest(CORPUS, body).hex()

    def reseal(m: dict[str, Any]) -> None:
        m["corpus_hash"] = m["declaration"]["corpus_hash"] = digest
        _rehash_declaration(m)

    _edit(path, reseal)
    _refused(path, tok, "-edited' that the shards do not hold")
