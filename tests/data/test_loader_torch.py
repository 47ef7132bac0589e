"""TokenLoader under PyTorch: DataLoader workers, StatefulDataLoader, gloo ranks.

Skipped cleanly where torch is not installed (the library never needs it).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.data import Document, TokenLoader, encode_dataset

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory, real_docs: list[Document]) -> Path:
    root = tmp_path_factory.mktemp("torch-loader")
    tok = tp.train_bpe([d.text for d in real_docs], vocab_size=400)
    encode_dataset(real_docs[:200], tok, root / "ds", format="megatron", records_per_shard=50)
    return root / "ds"


def _loader(path: Path, **kw: object) -> TokenLoader:
    args: dict = {"seq_len": 16, "batch_size": 2, "seed": 3}
    args.update(kw)
    return TokenLoader([path], **args)


def _key(batch: dict) -> tuple:
    return tuple(batch["provenance"]["samples"]), batch["input_ids"].numpy().tobytes()


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_dataloader_workers_give_the_in_process_stream(path: Path, workers: int) -> None:
    from torch.utils.data import DataLoader

    expected = [
        (b.provenance.samples, b.input_ids.astype("int64").tobytes()) for b in _loader(path)
    ]
    ds = _loader(path).torch_dataset()
    got = [_key(b) for b in DataLoader(ds, batch_size=None, num_workers=workers)]
    assert got == expected
    first = next(iter(DataLoader(_loader(path).torch_dataset(), batch_size=None)))
    assert first["labels"].dtype == torch.int64 and first["cu_seqlens"].dtype == torch.int32


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes(path: Path, workers: int) -> None:
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    expected = [
        _key(b)
        for b in tdl.StatefulDataLoader(
            _loader(path).torch_dataset(), batch_size=None, num_workers=workers
        )
    ]
    dl = tdl.StatefulDataLoader(_loader(path).torch_dataset(), batch_size=None, num_workers=workers)
    it = iter(dl)
    head = [_key(next(it)) for _ in range(5)]
    state = dl.state_dict()
    del it, dl
    again = tdl.StatefulDataLoader(
        _loader(path).torch_dataset(), batch_size=None, num_workers=workers
    )
    again.load_state_dict(state)
    assert head + [_key(b) for b in again] == expected


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, world: int, port: int, path: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        loader = TokenLoader([path], seq_len=16, batch_size=2, seed=3, rank=rank, world_size=world)
        seen, state = [], None
        for step, batch in enumerate(loader.iter_batches()):
            seen += list(range(*batch.provenance.positions))
            if step == 3:
                state = loader.state_dict()
                break
        resumed = TokenLoader([path], seq_len=16, batch_size=2, seed=3, rank=rank, world_size=world)
        resumed.load_state_dict(state)
        seen += [p for b in resumed for p in range(*b.provenance.positions)]
        gathered: list = [None] * world
        dist.all_gather_object(gathered, seen)
        if rank == 0:
            Path(out).write_text(json.dumps(gathered))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 4])
def test_gloo_ranks_are_disjoint_cover_and_resume(path: Path, tmp_path: Path, world: int) -> None:
    import torch.multiprocessing as mp

    out = tmp_path / "seen.json"
    mp.spawn(_rank_main, args=(world, _free_port(), str(path), str(out)), nprocs=world)
    gathered = json.loads(out.read_text())
    flat = sorted(p for rank in gathered for p in rank)
    n = _loader(path).samples_per_epoch
    assert flat == list(range(n - n % (2 * world)))
