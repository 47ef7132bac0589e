"""TokenLoader under PyTorch: DataLoader workers, StatefulDataLoader, gloo ranks.

torch and torchdata are pinned in the ``test`` extra, so these run in CI; they skip only
where torch is not installed (the library itself never needs it).
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


@pytest.mark.parametrize("workers", [0, 3])
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


@pytest.mark.parametrize("world", [3])
def test_dataloader_workers_shard_by_rank(path: Path, world: int) -> None:
    # Each rank's DataLoader with two workers gives that rank's in-process stream; the
    # ranks' batches are disjoint and together are the epoch (less the dropped tail).
    from torch.utils.data import DataLoader

    seen: list[int] = []
    for rank in range(world):
        expected = [
            (b.provenance.samples, b.input_ids.astype("int64").tobytes())
            for b in _loader(path, rank=rank, world_size=world)
        ]
        ds = _loader(path, rank=rank, world_size=world).torch_dataset()
        got = list(DataLoader(ds, batch_size=None, num_workers=2))
        assert [_key(b) for b in got] == expected
        assert {b["provenance"]["rank"] for b in got} == {rank}
        seen += [p for b in got for p in range(*b["provenance"]["positions"])]
    n = _loader(path).samples_per_epoch
    assert sorted(seen) == list(range(n - n % (2 * world)))


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


@pytest.mark.parametrize(("before", "after"), [(2, 0), (0, 3)])
def test_stateful_dataloader_state_resumes_under_another_worker_count(
    path: Path, before: int, after: int
) -> None:
    # torchdata refuses a state from another worker count; the TokenLoader takes it.
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    expected = [_key(b) for b in _loader(path, rank=1, world_size=2).torch_dataset()]
    dl = tdl.StatefulDataLoader(
        _loader(path, rank=1, world_size=2).torch_dataset(), batch_size=None, num_workers=before
    )
    it = iter(dl)
    head = [_key(next(it)) for _ in range(7)]
    state = json.loads(json.dumps(dl.state_dict()))  # as a checkpoint would store it
    del it, dl
    fresh = _loader(path, rank=1, world_size=2)
    fresh.load_state_dict(state)
    again = tdl.StatefulDataLoader(fresh.torch_dataset(), batch_size=None, num_workers=after)
    assert head + [_key(b) for b in again] == expected
    # The same state into a loader of another order is refused, not silently resumed.
    with pytest.raises(tp.ContractError):
        _loader(path, seed=4).load_state_dict(state)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, world: int, port: int, path: str, out: str) -> None:
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        # The IterableDataset checks its rank against torch.distributed's.
        wrong = _loader(Path(path), rank=(rank + 1) % world, world_size=world).torch_dataset()
        try:
            next(iter(wrong))
            refused = False
        except tp.ConfigError:
            refused = True
        loader = _loader(Path(path), rank=rank, world_size=world)
        seen, state = [], None
        for step, batch in enumerate(DataLoader(loader.torch_dataset(), batch_size=None)):
            seen += list(range(*batch["provenance"]["positions"]))
            if step == 3:
                state = loader.state_after(batch)
                break
        # Every rank checkpoints after step 3; rank 0's state resumes all of them.
        states: list = [None] * world
        dist.all_gather_object(states, state)
        resumed = _loader(Path(path), rank=rank, world_size=world)
        resumed.load_state_dict(states[0])
        seen += [
            p
            for b in DataLoader(resumed.torch_dataset(), batch_size=None)
            for p in range(*b["provenance"]["positions"])
        ]
        gathered: list = [None] * world
        dist.all_gather_object(gathered, {"seen": seen, "refused": refused, "state": state})
        if rank == 0:
            Path(out).write_text(json.dumps(gathered))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 4])
def test_gloo_ranks_are_disjoint_cover_and_resume(path: Path, tmp_path: Path, world: int) -> None:
    import torch.multiprocessing as mp

    out = tmp_path / "seen.json"
    # fork: the ranks start in well under a second (spawn re-imports torch per rank).
    mp.start_processes(
        _rank_main,
        args=(world, _free_port(), str(path), str(out)),
        nprocs=world,
        start_method="fork",
    )
    gathered = json.loads(out.read_text())
    assert all(g["refused"] for g in gathered)
    # Each rank's state after step 3 is the same cursor: 4 steps of every rank.
    assert {g["state"]["cursor"] for g in gathered} == {4 * 2 * world}
    flat = sorted(p for g in gathered for p in g["seen"])
    n = _loader(path).samples_per_epoch
    assert flat == list(range(n - n % (2 * world)))
