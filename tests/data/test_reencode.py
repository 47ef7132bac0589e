"""Re-encoding a dataset for a new tokenizer (a step of a vocabulary migration): the
same settings, the same corpus (checked by its hash), shards bound to the new
tokenizer, and a refusal when the source is not the dataset's corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.contract.dataset_files import read_dataset
from tokenpact.corpus import builtin_corpus
from tokenpact.data import Document, encode_dataset, open_dataset, reencode_dataset
from tokenpact.errors import ConfigError, ContractError


@pytest.fixture(scope="module")
def setup() -> tuple[tp.Tokenizer, tp.Tokenizer, list[Document]]:
    texts = [d.text for d in builtin_corpus(max_bytes=40_000)]
    old = tp.train_bpe(texts[::2], vocab_size=300)
    new = tp.train_bpe(texts[1::2], vocab_size=320)
    return old, new, [Document(f"d{i:02d}", t) for i, t in enumerate(texts[:16])]


def test_reencode_keeps_settings_and_binds_the_new_tokenizer(setup: tuple, tmp_path: Path) -> None:
    old, new, docs = setup
    before = encode_dataset(docs, old, tmp_path / "old", append_eod=True, max_length=200)
    report = reencode_dataset(tmp_path / "old", docs, new, tmp_path / "new")
    after = read_dataset(tmp_path / "new").manifest
    assert after is not None
    for key in ("append_eod", "max_length", "boundary_policy", "format", "records_per_shard"):
        assert after[key] == before[key]
    assert after["tokenizer_hash"] == new.semantic_hash != before["tokenizer_hash"]
    assert after["corpus_hash"] == before["corpus_hash"] == report["corpus_hash"]
    assert report["tokens"] == {"old": before["tokens"], "new": after["tokens"]}
    # The shards hold the new tokenizer's IDs for the same documents.
    ds = open_dataset(tmp_path / "new")
    assert ds.tokenizer_hash == new.semantic_hash
    position = ds.doc_ids.index("d00")
    ids = [int(i) for i in ds[position]]
    assert ids[-1] == new.eos_id or len(ids) == 200
    assert ids[: min(len(ids), 150)] == new.encode(docs[0].text)[: min(len(ids), 150)]


def test_reencode_refuses_another_corpus(setup: tuple, tmp_path: Path) -> None:
    old, new, docs = setup
    encode_dataset(docs, old, tmp_path / "old")
    with pytest.raises(ContractError, match="not the corpus"):
        reencode_dataset(tmp_path / "old", docs[:-1], new, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    bare = tp.train_bpe(["abc abc"], vocab_size=258, special_tokens=["<|x|>"])
    encode_dataset(docs, bare, tmp_path / "spec", allowed_special=["<|x|>"])
    with pytest.raises(ConfigError, match="lacks"):
        reencode_dataset(tmp_path / "spec", docs, new, tmp_path / "new2")
