"""TokenLoader: packed samples, the global order, rank/worker slicing, resume, blending."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tokenpact as tp
from tokenpact.batch.records import IGNORE_INDEX
from tokenpact.data import Document, TokenLoader, encode_dataset, open_dataset
from tokenpact.data.loader import BatchProvenance, PackedBatch, exact_counts
from tokenpact.errors import ConfigError, ContractError, ReplayError

SEQ = 24
BATCH = 3


@pytest.fixture(scope="module")
def tok(real_docs: list[Document]) -> tp.Tokenizer:
    return tp.train_bpe([d.text for d in real_docs], vocab_size=420)


@pytest.fixture(scope="module")
def datasets(
    tmp_path_factory: pytest.TempPathFactory, tok: tp.Tokenizer, real_docs: list[Document]
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("loader")
    docs = real_docs[:220] + [Document("zz-empty-1", "", "e"), Document("zz-empty-2", "", "e")]
    out = {}
    for fmt in ("megatron", "parquet"):
        encode_dataset(docs, tok, root / fmt, format=fmt, records_per_shard=50)
        out[fmt] = root / fmt
    encode_dataset(real_docs[220:300], tok, root / "small", format="megatron")
    # One shard, empty documents included: the native single-mapping path.
    encode_dataset(docs[:90] + docs[-2:], tok, root / "single", format="megatron")
    out["single"] = root / "single"
    out["small"] = root / "small"
    encode_dataset(real_docs[300:360], tok, root / "eod", format="megatron", append_eod=True)
    out["eod"] = root / "eod"
    return out


def _loader(path: Path | list[Path], **kw: object) -> TokenLoader:
    paths = path if isinstance(path, list) else [path]
    args: dict = {"seq_len": SEQ, "batch_size": BATCH, "seed": 7}
    args.update(kw)
    return TokenLoader(paths, **args)


def _positions(batch: PackedBatch) -> list[int]:
    first, stop = batch.provenance.positions
    return list(range(first, stop))


def _check_rows(batch: PackedBatch, loader: TokenLoader) -> None:
    """Every array of ``batch`` against a brute-force reading of the datasets."""
    n = loader.seq_len
    expect_cu = [0]
    for row, (k, sample) in enumerate(
        zip(batch.provenance.sources, batch.provenance.samples, strict=True)
    ):
        ds = loader.sources[k].ds
        a = sample * n
        window = ds.tokens(a, a + n + 1).astype(np.int64)
        docs = np.searchsorted(ds.offsets, np.arange(a, a + n + 1), side="right") - 1
        np.testing.assert_array_equal(batch.tokens[row], window)
        crosses = docs[1:] != docs[:-1]
        np.testing.assert_array_equal(
            batch.labels[row], np.where(crosses, IGNORE_INDEX, window[1:])
        )
        np.testing.assert_array_equal(batch.document_ids[row], docs[:-1])
        starts = np.r_[0, np.flatnonzero(docs[1:-1] != docs[:-2]) + 1]
        pos = np.arange(n) - starts[np.searchsorted(starts, np.arange(n), "right") - 1]
        np.testing.assert_array_equal(batch.position_ids[row], pos)
        expect_cu += [row * n + int(s) for s in starts[1:]] + [(row + 1) * n]
    assert batch.cu_seqlens.tolist() == expect_cu and batch.cu_seqlens.dtype == np.int32


@pytest.mark.parametrize("fmt", ["megatron", "parquet", "small"])
def test_packed_rows_are_the_stream_with_exact_boundaries(
    datasets: dict[str, Path], tok: tp.Tokenizer, fmt: str
) -> None:
    loader = _loader(datasets[fmt], tokenizer=tok)
    ds = open_dataset(datasets[fmt])
    seen = 0
    for batch in loader:
        assert batch.tokens.dtype == np.uint16
        _check_rows(batch, loader)
        seen += len(batch)
    assert seen == loader.samples_per_epoch - loader.samples_per_epoch % BATCH
    assert loader.samples_per_epoch == (ds.n_tokens - 1) // SEQ
    assert loader.epoch == 1 and loader.cursor == 0


@pytest.mark.parametrize("seq_len", [1, 5, SEQ, 97])
@pytest.mark.parametrize("fmt", ["single", "eod"])
def test_native_rows_equal_the_numpy_reference(
    datasets: dict[str, Path], fmt: str, seq_len: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tokenpact.data.loader as loader_module

    rows = 64 if seq_len == 1 else 4
    native = _loader(datasets[fmt], seq_len=seq_len, batch_size=rows)
    reference = _loader(datasets[fmt], seq_len=seq_len, batch_size=rows)
    assert native.sources[0].stream_bytes() is not None  # one mapping: the native path
    fields = ("tokens", "cu_seqlens", "first_documents", "cuts", "cut_rows")
    fields += ("labels", "position_ids", "document_ids")
    steps = 0
    wanted = iter(reference)
    for got in native:
        monkeypatch.setattr(loader_module, "NATIVE_ROWS", False)
        want = next(wanted)
        monkeypatch.setattr(loader_module, "NATIVE_ROWS", True)
        assert got.provenance == want.provenance
        for name in fields:
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and a.shape == b.shape, name
            np.testing.assert_array_equal(a, b, err_msg=name)
        if seq_len == SEQ:
            _check_rows(got, native)
        steps += 1
    assert steps == native.samples_per_epoch // rows > 0
    bad = np.array([native.samples_per_epoch + 1], dtype=np.int64)
    out = np.empty(seq_len + 1, dtype=np.uint16).view(np.uint8)
    with pytest.raises(tp.InvalidInputError, match="outside the stream"):
        tp._native.packed_rows(
            native.sources[0].stream_bytes(), native.sources[0].starts, bad, seq_len, 2, out
        )


def test_blended_rows_have_exact_boundaries(datasets: dict[str, Path]) -> None:
    loader = _loader(
        [datasets["megatron"], datasets["small"], datasets["parquet"]],
        weights=[1, 2, 1],
        batch_size=7,
    )
    for batch in loader:
        _check_rows(batch, loader)


def _run(loader_args: dict, world: int, workers: int, path: Path) -> list[list[int]]:
    """Positions each (rank, worker) receives, rank-major; ``workers=0``: in-process."""
    out = []
    for rank in range(world):
        if workers == 0:
            loader = _loader(path, rank=rank, world_size=world, **loader_args)
            out.append([p for b in loader for p in _positions(b)])
            continue
        # DataLoader round robin: worker w builds steps w, w + k, ...; merge them back.
        per_worker = []
        for w in range(workers):
            loader = _loader(path, rank=rank, world_size=world, **loader_args)
            per_worker.append(list(loader.iter_batches(worker=w, num_workers=workers)))
        merged = sorted((b for bs in per_worker for b in bs), key=lambda b: b.provenance.step)
        out.append([p for b in merged for p in _positions(b)])
    return out


@pytest.mark.parametrize("world", [1, 2, 3, 8])
@pytest.mark.parametrize("workers", [0, 1, 3])
def test_ranks_and_workers_partition_the_epoch(
    datasets: dict[str, Path], world: int, workers: int
) -> None:
    path = datasets["megatron"]
    n = _loader(path).samples_per_epoch
    every = _run({"drop_last": False}, world, workers, path)
    flat = [p for rank in every for p in rank]
    assert sorted(flat) == list(range(n))  # disjoint and covering
    kept = _run({"drop_last": True}, world, workers, path)
    flat = sorted(p for rank in kept for p in rank)
    per_step = BATCH * world
    assert flat == list(range(n - n % per_step))
    assert len({len(rank) for rank in kept}) == 1  # every rank takes as many steps


def test_order_is_a_function_of_seed_epoch_and_manifests(datasets: dict[str, Path]) -> None:
    path = datasets["megatron"]
    a, b = _loader(path), _loader(path, world_size=8, rank=5, batch_size=1)
    for epoch in (0, 3):
        np.testing.assert_array_equal(a.plan(epoch)[1], b.plan(epoch)[1])
    assert a.fingerprint == b.fingerprint
    assert not np.array_equal(a.plan(0)[1], a.plan(1)[1])
    assert not np.array_equal(a.plan(0)[1], _loader(path, seed=8).plan(0)[1])
    assert sorted(a.plan(0)[1].tolist()) == list(range(a.samples_per_epoch))
    plain = _loader(path, shuffle=False)
    assert plain.plan(0)[1].tolist() == list(range(a.samples_per_epoch))


def _digests(batches: list[PackedBatch]) -> list[tuple[bytes, tuple[int, ...]]]:
    return [(b.tokens.tobytes(), b.provenance.samples) for b in batches]


def test_resume_is_bit_identical_and_elastic(datasets: dict[str, Path]) -> None:
    path = datasets["parquet"]
    whole = list(_loader(path))
    first = _loader(path)
    it = iter(first)
    taken = [next(it) for _ in range(5)]
    state = json.loads(json.dumps(first.state_dict()))
    assert state["cursor"] == 5 * BATCH
    resumed = _loader(path)
    resumed.load_state_dict(state)
    assert _digests(taken + list(resumed)) == _digests(whole)
    # Another world size and batch size from the same state: the rest of the epoch,
    # each position once, across the new ranks.
    rest = []
    for rank in range(3):
        other = _loader(path, rank=rank, world_size=3, batch_size=2, drop_last=False)
        other.load_state_dict(state)
        rest += [p for b in other for p in _positions(b)]
    assert sorted(rest) == list(range(5 * BATCH, first.samples_per_epoch))
    # The state taken from a batch's provenance (what a DataLoader with workers hands
    # back) equals the loader's own.
    assert first.state_after(taken[-1]) == first.state_dict()
    as_torch = {"provenance": taken[-1].provenance.as_json()}  # what torch_dataset() yields
    assert first.state_after(as_torch) == first.state_after(taken[-1].provenance)
    with pytest.raises(ContractError, match="another loader"):
        _loader(path, seed=99).state_after(taken[-1])


def test_state_from_another_configuration_is_refused(datasets: dict[str, Path]) -> None:
    path = datasets["megatron"]
    state = _loader(path).state_dict()
    with pytest.raises(ContractError, match="seed"):
        _loader(path, seed=8).load_state_dict(state)
    with pytest.raises(ContractError, match="seq_len"):
        _loader(path, seq_len=SEQ + 1).load_state_dict(state)
    with pytest.raises(ContractError, match="datasets"):
        _loader(datasets["parquet"]).load_state_dict(state)
    edited = dict(state, cursor=10**9)
    with pytest.raises(ContractError, match="outside the epoch"):
        _loader(path).load_state_dict(edited)
    forged = dict(state, order=dict(state["order"], seed=8))
    with pytest.raises(ContractError, match="fingerprint"):
        _loader(path, seed=8).load_state_dict(forged)
    with pytest.raises(ContractError, match="not a tokenpact loader state"):
        _loader(path).load_state_dict({"epoch": 0})


@pytest.mark.parametrize("fmt", ["megatron", "parquet", "small"])
def test_a_pickled_loader_continues_identically(datasets: dict[str, Path], fmt: str) -> None:
    """What a DataLoader worker started with "spawn" receives."""
    import pickle

    loader = _loader(datasets[fmt])
    it = iter(loader)
    next(it)  # opened, mapped and partly verified before pickling
    copy = pickle.loads(pickle.dumps(loader))
    assert copy.cursor == loader.cursor
    a, b = list(it), list(copy)
    assert [x.tokens.tobytes() for x in a] == [y.tokens.tobytes() for y in b]


def test_exact_counts_have_no_drift() -> None:
    assert exact_counts([0.7, 0.3], 101) == [71, 30]
    assert exact_counts([1, 1, 1], 10) == [4, 3, 3]
    assert exact_counts([0.1] * 10, 10**9) == [10**8] * 10
    assert sum(exact_counts([0.123, 0.456, 0.421], 999_983)) == 999_983
    with pytest.raises(ConfigError):
        exact_counts([0, 0], 5)
    with pytest.raises(ConfigError, match="finite"):
        exact_counts([float("nan"), 1.0], 5)
    assert exact_counts(["0.1", "0.2", "0.7"], 10) == [1, 2, 7]  # decimal, not binary


def test_blend_draws_exact_counts_and_reports_the_mixture(
    datasets: dict[str, Path],
) -> None:
    paths = [datasets["megatron"], datasets["small"]]
    loader = _loader(paths, weights=[0.25, 0.75], samples_per_epoch=1000)
    src, samples = loader.plan(0)
    assert np.bincount(src, minlength=2).tolist() == loader.counts == [250, 750]
    small = loader.sources[1].n_samples
    assert 750 > small  # the small source is drawn more than once: each sample evenly
    per_sample = np.bincount(samples[src == 1], minlength=small)
    assert per_sample.max() - per_sample.min() <= 1
    # Evenly interleaved: every prefix holds each source's share up to one sample.
    running = np.cumsum(src == 1) / np.arange(1, src.shape[0] + 1)
    assert np.all(np.abs(running[20:] - 0.75) < 0.05)
    mix = loader.mixture()
    assert [s["samples"] for s in mix["sources"]] == [250, 750]
    assert [s["share"] for s in mix["sources"]] == [0.25, 0.75]
    assert mix["sources"][1]["dataset_hash"] == open_dataset(paths[1]).hash
    for batch in loader:
        for row, (k, j) in enumerate(
            zip(batch.provenance.sources, batch.provenance.samples, strict=True)
        ):
            ds = loader.sources[k].ds
            np.testing.assert_array_equal(batch.tokens[row], ds.tokens(j * SEQ, j * SEQ + SEQ + 1))
        break


def test_replay_rebuilds_a_batch_and_refuses_an_edited_one(datasets: dict[str, Path]) -> None:
    paths = [datasets["megatron"], datasets["small"]]
    loader = _loader(paths, weights=[1, 1], rank=1, world_size=2)
    batches = list(loader)
    target = batches[len(batches) // 2]
    record = json.loads(json.dumps(target.provenance.as_json()))
    again = _loader(paths, weights=[1, 1]).replay(record)
    np.testing.assert_array_equal(again.tokens, target.tokens)
    np.testing.assert_array_equal(again.labels, target.labels)
    np.testing.assert_array_equal(again.cu_seqlens, target.cu_seqlens)
    assert again.provenance == BatchProvenance.from_json(record)
    with pytest.raises(ReplayError, match="edited"):
        loader.replay(dict(record, samples=[0] * len(record["samples"])))
    with pytest.raises(ReplayError, match="another loader"):
        _loader(paths, weights=[1, 2]).replay(record)


def test_binding_is_checked_at_open_and_digests_on_first_touch(
    datasets: dict[str, Path], tok: tp.Tokenizer, tmp_path: Path, real_docs: list[Document]
) -> None:
    other = tp.train_bpe([d.text for d in real_docs], vocab_size=410, special_tokens=())
    with pytest.raises(ContractError, match="encoded with tokenizer"):
        _loader(datasets["megatron"], tokenizer=other)
    with pytest.raises(ContractError, match="template"):
        _loader(datasets["megatron"], template_hash="sha256:" + "0" * 64)
    with pytest.raises(ContractError, match="--append-eod"):
        _loader(datasets["megatron"], require_eod=True)
    eod = _loader(datasets["eod"], require_eod=True, tokenizer=tok)
    n_eod = 0
    for batch in eod:
        ends = batch.input_ids == tok.eos_id
        n_eod += int(ends.sum())
        assert np.all(batch.labels[ends] == IGNORE_INDEX)  # EOD never predicts across
    assert n_eod > 10
    clean = open_dataset(datasets["small"], verify="background")
    clean.verify_in_background().join()
    assert clean.verified and clean.background_error is None
    # A changed shard: opening succeeds (indexes only), the first read of it fails.
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in datasets["megatron"].iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    victim = copy / "shard-00002.bin"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    loader = _loader(copy, shuffle=False)
    with pytest.raises(ContractError, match="shard-00002.bin has digest"):
        for _ in loader:
            pass
    assert loader.cursor > 0  # the shards before it were read and verified
    with pytest.raises(ConfigError, match="seq_len"):
        _loader(datasets["megatron"], seq_len=0)
    with pytest.raises(ConfigError, match="rank"):
        _loader(datasets["megatron"], rank=2, world_size=2)


def test_doctor_checks_a_loader_state_against_its_datasets(
    datasets: dict[str, Path], tmp_path: Path, tok: tp.Tokenizer
) -> None:
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    def doctor(*args: object) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["doctor", *(str(a) for a in args)])
        return result.exit_code, result.output

    copy = tmp_path / "ds"
    copy.mkdir()
    for f in datasets["small"].iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    loader = _loader([datasets["megatron"], copy], weights=[1, 3], samples_per_epoch=50)
    it = iter(loader)
    next(it)
    state_path = tmp_path / "loader.json"
    state_path.write_text(json.dumps(loader.state_dict()))
    code, text = doctor(state_path)
    assert code == 0 and "loader state" in text and "loader-state-mismatch" not in text, text
    tok.save(tmp_path / "t")
    code, text = doctor(state_path, tmp_path / "t")
    assert code == 0, text
    # The dataset re-encoded (its manifest changed) under the saved state: refused.
    manifest = json.loads((copy / "dataset.json").read_text())
    manifest["records_per_shard"] = 1
    (copy / "dataset.json").write_text(json.dumps(manifest))
    code, text = doctor(state_path)
    assert code == 1 and "loader-state-mismatch" in text and "the run trained on" in text, text
    edited = dict(loader.state_dict(), cursor=10**6)
    state_path.write_text(json.dumps(edited))
    code, text = doctor(state_path)
    assert code == 1 and "outside the epoch" in text, text
