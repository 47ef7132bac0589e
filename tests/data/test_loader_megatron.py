"""megatron-core as the oracle for Megatron shards and packed samples.

tokenpact writes the shards; megatron-core's own ``IndexedDataset`` must read the same
documents, and its ``GPTDataset`` (sample index from its C++ helpers, its own sample
query, reset position IDs and EOD loss mask) must give the samples ``TokenLoader``
gives: the same tokens, targets, positions and masked labels.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tokenpact as tp
from tokenpact.data import Document, TokenLoader, encode_dataset, open_dataset

pytest.importorskip("torch")
indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
gpt = pytest.importorskip("megatron.core.datasets.gpt_dataset")
mutils = pytest.importorskip("megatron.core.datasets.utils")
mhelpers = pytest.importorskip("megatron.core.datasets.helpers")
logging.getLogger("megatron").setLevel(logging.WARNING)

SEQ = 16


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=400)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("megatron-oracle")


def test_indexed_dataset_reads_the_same_documents(
    root: Path, tok: tp.Tokenizer, real_docs: list[Document]
) -> None:
    docs = real_docs[:130] + [Document("zz-empty", "", "e")]  # an empty document too
    encode_dataset(docs, tok, root / "sharded", format="megatron", records_per_shard=50)
    ds = open_dataset(root / "sharded")
    prefixes = sorted(p.with_suffix("") for p in (root / "sharded").glob("*.idx"))
    assert len(prefixes) == 3
    first = 0
    for prefix in prefixes:
        theirs = indexed.IndexedDataset(str(prefix))
        n = len(theirs)
        ours = ds.lengths[first : first + n]
        assert theirs.sequence_lengths.astype(np.int64).tolist() == ours.tolist()
        assert theirs.document_indices.tolist() == list(range(n + 1))
        for i in range(n):
            got = theirs.get(i)
            assert got.dtype == ds.dtype
            assert np.array_equal(got, ds[first + i])
        first += n
    assert first == len(ds) == len(docs)


class _Tokenizer:
    """What GPTDatasetConfig reads from a Megatron tokenizer."""

    def __init__(self, tok: tp.Tokenizer) -> None:
        self.vocab_size = tok.vocab_size
        self.eod = tok.eos_id
        self.pad = -1
        self.unique_identifiers = {"class": "tokenpact", "hash": tok.semantic_hash}


def _gpt_dataset(prefix: Path, tok: tp.Tokenizer, cache: Path) -> Any:
    config = gpt.GPTDatasetConfig(
        random_seed=5,
        sequence_length=SEQ,
        tokenizer=_Tokenizer(tok),
        reset_position_ids=True,
        reset_attention_mask=False,
        eod_mask_loss=True,
        create_attention_mask=False,
        path_to_cache=str(cache),
        split="1,0,0",
    )
    low = indexed.IndexedDataset(str(prefix))
    docs = np.arange(len(low), dtype=np.int32)
    return gpt.GPTDataset(low, str(prefix), docs, None, mutils.Split.train, config)


def test_gpt_dataset_samples_match_the_loader(
    root: Path, tok: tp.Tokenizer, real_docs: list[Document]
) -> None:
    assert tok.eos_id is not None
    encode_dataset(real_docs[130:230], tok, root / "eod", format="megatron", append_eod=True)
    ds = open_dataset(root / "eod")
    stream = np.concatenate([ds[i] for i in range(len(ds))]).astype(np.int64)
    assert int((stream == tok.eos_id).sum()) == len(ds)  # EOD only at document ends
    theirs = _gpt_dataset(root / "eod" / "shard-00000", tok, root / "cache")
    loader = TokenLoader([root / "eod"], seq_len=SEQ, batch_size=4, shuffle=False)
    assert len(theirs) == loader.samples_per_epoch  # one epoch: the same sample count

    # Megatron's own (shuffled) document order: each sample is the window of that
    # order's stream that starts at i * seq_len, read from tokenpact's documents.
    order = np.concatenate([ds[int(d)] for d in theirs.document_index]).astype(np.int64)
    for i in range(len(theirs)):
        j = int(theirs.shuffle_index[i])
        got = theirs[i]
        window = order[j * SEQ : j * SEQ + SEQ + 1]
        assert got["tokens"].tolist() == window[:-1].tolist()
        assert got["labels"].tolist() == window[1:].tolist()

    # The documents in file order (TokenLoader's stream) through megatron-core's C++
    # sample index and its own sample query: every array of every batch agrees.
    theirs.document_index = np.arange(len(ds), dtype=np.int32)
    theirs.sample_index = mhelpers.build_sample_idx(
        theirs.dataset.sequence_lengths.copy(),
        theirs.document_index,
        SEQ,
        1,
        int(ds.n_tokens),
        True,
        1,
    )
    theirs.shuffle_index = np.arange(len(theirs), dtype=np.int64)
    checked = boundaries = 0
    for batch in loader:
        for row, sample in enumerate(batch.provenance.samples):
            got = theirs[sample]
            assert got["tokens"].tolist() == batch.input_ids[row].tolist()
            assert got["labels"].tolist() == batch.targets[row].tolist()
            assert got["position_ids"].tolist() == batch.position_ids[row].tolist()
            masked = (batch.labels[row] == -100).tolist()
            assert (got["loss_mask"] == 0).tolist() == masked
            checked += 1
            boundaries += sum(masked)
    assert checked == len(theirs) - len(theirs) % 4  # drop_last: the partial batch
    assert boundaries > len(ds) // 2  # document boundaries inside samples were compared
