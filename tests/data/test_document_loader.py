"""DocumentLoader: whole documents under a token budget, bucketed, exactly resumable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tokenpact as tp
from tokenpact.batch.records import IGNORE_INDEX
from tokenpact.data import Document, DocumentBatch, DocumentLoader, encode_dataset, open_dataset
from tokenpact.errors import ConfigError, ContractError, ReplayError

BUDGET = 512


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory, real_docs: list[Document]) -> Path:
    root = tmp_path_factory.mktemp("docs")
    tok = tp.train_bpe([d.text for d in real_docs], vocab_size=420)
    docs = real_docs[:300] + [Document("zz-empty", "", "e")]
    encode_dataset(docs, tok, root / "ds", format="megatron", records_per_shard=70, max_length=400)
    return root / "ds"


def _loader(path: Path, **kw: object) -> DocumentLoader:
    args: dict = {"max_tokens": BUDGET, "seed": 5, "bucket_docs": 64}
    args.update(kw)
    return DocumentLoader([path], **args)


def _docs(batches: list[DocumentBatch]) -> list[int]:
    return [d for b in batches for d in b.provenance.samples]


def test_each_document_once_whole_within_the_budget(path: Path) -> None:
    ds = open_dataset(path)
    loader = _loader(path, drop_last=False)
    batches = list(loader)
    nonempty = np.flatnonzero(ds.lengths > 0).tolist()
    assert sorted(_docs(batches)) == nonempty
    for batch in batches:
        assert batch.padded_tokens <= BUDGET
        lens = batch.lengths
        assert np.all(lens[:-1] >= lens[1:])  # bucketed: longest first within a batch
        for j, doc in enumerate(batch.provenance.samples):
            a, z = int(batch.cu_seqlens[j]), int(batch.cu_seqlens[j + 1])
            np.testing.assert_array_equal(batch.input_ids[a:z], ds[doc])
            want = np.r_[ds[doc][1:].astype(np.int64), IGNORE_INDEX]
            np.testing.assert_array_equal(batch.labels[a:z], want)
            np.testing.assert_array_equal(batch.position_ids[a:z], np.arange(z - a))
    # Bucketing packs tightly: most batches use most of the budget.
    used = np.array([b.padded_tokens for b in batches]) / BUDGET
    assert np.median(used) > 0.7


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("workers", [1, 3])
def test_ranks_and_workers_partition_the_documents(path: Path, world: int, workers: int) -> None:
    every = []
    for rank in range(world):
        for w in range(workers):
            loader = _loader(path, rank=rank, world_size=world, drop_last=False)
            every += _docs(list(loader.iter_batches(worker=w, num_workers=workers)))
    assert sorted(every) == sorted(_docs(list(_loader(path, drop_last=False))))


def test_resume_replay_and_refusals(path: Path) -> None:
    whole = list(_loader(path))
    first = _loader(path)
    it = iter(first)
    head = [next(it) for _ in range(4)]
    state = json.loads(json.dumps(first.state_dict()))
    again = _loader(path)
    again.load_state_dict(state)
    keys = [(b.input_ids.tobytes(), b.cu_seqlens.tobytes()) for b in head + list(again)]
    assert keys == [(b.input_ids.tobytes(), b.cu_seqlens.tobytes()) for b in whole]
    record = json.loads(json.dumps(whole[3].provenance.as_json()))
    np.testing.assert_array_equal(_loader(path).replay(record).input_ids, whole[3].input_ids)
    with pytest.raises(ReplayError, match="edited"):
        _loader(path).replay(dict(record, samples=[0]))
    with pytest.raises(ContractError, match="max_tokens"):
        _loader(path, max_tokens=BUDGET * 2).load_state_dict(state)
    assert not np.array_equal(_loader(path).plan(0)[1], _loader(path).plan(1)[1])


def test_long_documents_need_max_len(path: Path) -> None:
    with pytest.raises(ConfigError, match="max_len"):
        _loader(path, max_tokens=64)
    cut = _loader(path, max_tokens=64, max_len=64)
    for batch in cut:
        assert batch.lengths.max() <= 64 and batch.padded_tokens <= 64
