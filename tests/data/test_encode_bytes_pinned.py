"""The bytes of small encode runs are pinned: every shard file, corpus.json and
dataset.json of each run hashes to a recorded value, so a change to how the encoder is
put together (chunk sources, the shard sink, the corpus side job) is proven to write
the same files. A deliberate format change updates the recorded values.

The native Parquet writer records ``tokenpact version X`` in the footer; that string is
replaced by zeros of the same length before hashing (and the shard digests inside
dataset.json follow), so a version bump does not move the pins.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from tokenpact import _native
from tokenpact.data import Document, encode_dataset
from tokenpact.data import encode as encode_module
from tokenpact.data.corpus_manifest import build_corpus_manifest


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    # The run digests pin the tokenizer too (dataset.json holds its semantic hash).
    return tp.train_bpe([d.text for d in real_docs[:200]], vocab_size=420)


def _run_digest(out: Path) -> str:
    """One SHA-256 over ``name NUL sha256(bytes)`` of every file, names sorted."""
    version = f"tokenpact version {_native.__version__}".encode()
    blank = b"tokenpact version " + b"0" * len(_native.__version__)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    renamed: dict[str, str] = {}
    for name, data in files.items():
        if name.endswith(".parquet") and version in data:
            files[name] = data.replace(version, blank)
            real = hashlib.sha256(data).hexdigest()
            renamed[real] = hashlib.sha256(files[name]).hexdigest()
    manifest = files["dataset.json"]
    for real, normalized in renamed.items():
        manifest = manifest.replace(real.encode(), normalized.encode())
    files["dataset.json"] = manifest
    outer = hashlib.sha256()
    for name, data in files.items():
        outer.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return outer.hexdigest()


def _docs(real_docs: list[Document]) -> list[Document]:
    docs = real_docs[:130] + [Document("zz-empty", "", source="edge")]
    return list(reversed(docs))  # any input order: the shards are in doc_id order


RUNS: dict[str, dict[str, Any]] = {
    # The encoder hashes the texts (the digest path): several shards and row groups.
    "parquet-digests": {
        "format": "parquet",
        "records_per_shard": 50,
        "max_length": 40,
        "threads": 2,
        "corpus_revision": "r1",
    },
    # Special tokens added: the corpus thread hashes the texts (the reference path).
    "megatron-specials": {
        "format": "megatron",
        "records_per_shard": 64,
        "add_special_tokens": True,
        "append_eod": True,
        "threads": 1,
    },
    # A given corpus manifest and every special spelling let through.
    "parquet-given-corpus": {
        "format": "parquet",
        "records_per_shard": 1000,
        "allowed_special": "all",
        "add_bos": True,
        "corpus": "build",
    },
    "megatron-empty": {"format": "megatron", "empty": True},
}

PINNED = {
    "parquet-digests": "f150005524530496721d7dccdf4e5ed26aec9a7ed96df691c9a533802aa30221",
    "megatron-specials": "706ac4a0bc45cb2d066f73a1462e07e6508e2717c59c3746d0b99220a391d235",
    "parquet-given-corpus": "ec573f7bd7e7cac807792c159a2c2b90cc015b1ad66b830c69e4d505cc438d8a",
    "megatron-empty": "fa0185ecc05c5a2c3a32b9b9c2abacdc9d15989b6d0d9968957b5c68083df069",
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_encoded_bytes_are_pinned(
    tmp_path: Path,
    tok: tp.Tokenizer,
    real_docs: list[Document],
    monkeypatch: pytest.MonkeyPatch,
    run: str,
) -> None:
    options = dict(RUNS[run])
    docs = [] if options.pop("empty", False) else _docs(real_docs)
    roles = {d.doc_id: ("fit", "valid", "test")[i % 3] for i, d in enumerate(docs) if i % 5}
    if options.get("corpus") == "build":
        options["corpus"] = build_corpus_manifest(docs, revision="given", roles=roles)
    monkeypatch.setattr(encode_module, "CHUNK_CHARS", 3000)  # several chunks per shard
    manifest = encode_dataset(docs, tok, tmp_path / run, roles=roles or None, **options)
    assert manifest["records"] == len(docs)
    assert _run_digest(tmp_path / run) == PINNED[run]
