"""Checkpoint resizing on a tiny numpy causal LM: every public failure class of naive
vocabulary resizing has a regression test here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiny_lm
import tokenpact as tp
from tokenpact import migrate
from tokenpact.contract.checkpoint_reader import read_safetensors_header
from tokenpact.errors import ArtifactError, ConfigError, ContractError
from tokenpact.migrate.safetensors_stream import OutTensor, decode, encode, write_safetensors

OLD_MERGES = [(c, c) for c in b"abcdfghijklm"]
NEW_MERGES = [(101, 114), (114, 101), (61, 61), (49, 48)]
PROBE = [[1, 2, 3, 267], [101, 114, 61, 49, 48], [5]]


def _toks(specials: tuple[str, ...] = ()) -> tuple[tp.Tokenizer, tp.Tokenizer]:
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=specials)
    return old, migrate.build_extended(old, NEW_MERGES)


def _assert_old_logits(before: dict, after: dict, *, tied: bool, old_ids: int) -> None:
    for ids in PROBE:
        a = tiny_lm.logits(before, ids, tied=tied)
        b = tiny_lm.logits(after, ids, tied=tied)
        assert b.shape[1] >= a.shape[1]
        np.testing.assert_array_equal(a[:, :old_ids], b[:, :old_ids])


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("shards", [1, 3])
def test_logits_on_old_ids_unchanged(tmp_path: Path, tied: bool, shards: int) -> None:
    old, new = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=268, tied=tied, shards=shards, optimizer=True)
    plan = migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    after = tiny_lm.load(tmp_path / "b")
    assert after[tiny_lm.EMB].shape == (272, 16)
    _assert_old_logits(before, after, tied=tied, old_ids=268)
    assert plan.tied is tied
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["vocab_size"] == 272 and config["hidden_size"] == 16
    if shards > 1:
        index = json.loads((tmp_path / "b" / "model.safetensors.index.json").read_text())
        shard_files = set(index["weight_map"].values())
        data = sum(
            sum(i.end - i.begin for i in read_safetensors_header(tmp_path / "b" / s).values())
            for s in shard_files
        )
        assert index["metadata"]["total_size"] == data


def test_padded_matrix_is_never_shrunk_and_padding_ids_are_initialized(tmp_path: Path) -> None:
    """Bug: resize_token_embeddings(len(tokenizer)) shrinks a matrix padded to 280 rows,
    and new IDs that already have a (padding) row are left uninitialized."""
    old, new = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=280, tied=False)
    plan = migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    after = tiny_lm.load(tmp_path / "b")
    assert plan.new_rows == 280 and after[tiny_lm.EMB].shape == (280, 16)
    assert plan.added_parameters == 0
    emb = before[tiny_lm.EMB]
    np.testing.assert_allclose(after[tiny_lm.EMB][268], (emb[101] + emb[114]) / 2, rtol=1e-6)
    assert not np.array_equal(after[tiny_lm.EMB][268:272], emb[268:272])
    assert after[tiny_lm.EMB][272:].tobytes() == emb[272:].tobytes()  # padding kept
    _assert_old_logits(before, after, tied=False, old_ids=268)


def test_untied_head_keeps_its_own_rows(tmp_path: Path) -> None:
    """Bug: resizing overwrites an untied output head with the embedding."""
    old, new = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=268, tied=False)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    after = tiny_lm.load(tmp_path / "b")
    head = before[tiny_lm.HEAD]
    assert after[tiny_lm.HEAD][:268].tobytes() == head.tobytes()
    np.testing.assert_allclose(after[tiny_lm.HEAD][271], (head[49] + head[48]) / 2, rtol=1e-6)
    assert not np.allclose(after[tiny_lm.HEAD][271], after[tiny_lm.EMB][271])


def test_shared_storage_is_refused_as_the_safetensors_library_does(tmp_path: Path) -> None:
    """Issue 43: an embedding and head over one byte range is overlapping storage, which
    the safetensors library refuses to load; resizing must not launder it into a clean
    file (nor can the writer produce one)."""
    from safetensors.numpy import load_file

    old, new = _toks()
    src = tmp_path / "a"
    src.mkdir()
    emb = np.random.default_rng(1).normal(size=(268, 8)).astype(np.float32)
    header = {
        name: {"dtype": "F32", "shape": [268, 8], "data_offsets": [0, emb.nbytes]}
        for name in (tiny_lm.EMB, tiny_lm.HEAD)
    }
    raw = json.dumps(header).encode()
    (src / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + emb.tobytes())
    with pytest.raises(Exception, match="offset"):
        load_file(str(src / "model.safetensors"))
    with pytest.raises(ArtifactError, match="without gap or overlap"):
        migrate.resize_checkpoint(src, tmp_path / "b", old, new)
    assert not (tmp_path / "b").exists()
    with pytest.raises(ArtifactError, match="share storage"):
        write_safetensors(
            tmp_path / "x.safetensors",
            [OutTensor([tiny_lm.EMB, tiny_lm.HEAD], "F32", (268, 8), [("bytes", emb.tobytes())])],
        )


def test_config_tie_contradicting_tensors_is_an_error(tmp_path: Path) -> None:
    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=268, tied=False)
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    config["tie_word_embeddings"] = True
    (tmp_path / "a" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ContractError, match="tied=False"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new, tied=False)
    assert not (tmp_path / ".b.tmp").exists()


def test_control_ids_that_move_are_refused(tmp_path: Path) -> None:
    """Bug: re-training the tokenizer moves control IDs (specials after the merges)."""
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=(tp.SpecialToken("<|eos|>", "eos"),))
    moved = tp.Tokenizer.from_merges(
        OLD_MERGES + NEW_MERGES, special_tokens=(tp.SpecialToken("<|eos|>", "eos"),)
    )
    tiny_lm.build(tmp_path / "a", rows=269)
    with pytest.raises(ContractError, match="append-only"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, moved)
    kept = migrate.build_extended(old, NEW_MERGES)
    assert kept.special_tokens == {"<|eos|>": 268}
    plan = migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, kept)
    assert plan.new_rows == 273


def test_optimizer_state_is_matched_by_name_not_position(tmp_path: Path) -> None:
    old, new = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=268, tied=False, optimizer=True)
    plan = migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    after = tiny_lm.load(tmp_path / "b")
    roles = {t.name: (t.role, t.param) for t in plan.tensors}
    assert roles[f"exp_avg_sq.{tiny_lm.HEAD}"] == ("slot", tiny_lm.HEAD)
    for name in (tiny_lm.EMB, tiny_lm.HEAD, tiny_lm.BIAS):
        for slot in ("exp_avg", "exp_avg_sq"):
            key = f"{slot}.{name}"
            assert after[key][:268].tobytes() == before_opt(tmp_path / "a")[key].tobytes()
            assert not after[key][268:].any()
    # A layer's moment is not vocabulary-indexed and is copied untouched.
    assert after["exp_avg." + tiny_lm.LAYER_W].shape == (16, 16)
    assert plan.optimizer_slot_values == 2 * (4 * 16 + 4 * 16 + 4)
    del before


def before_opt(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(folder / "optimizer.safetensors"))


def test_mismatched_optimizer_shape_is_an_error(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=268)
    save_file(
        {f"exp_avg.{tiny_lm.EMB}": np.zeros((200, 16), np.float32)},
        str(tmp_path / "a" / "optimizer.safetensors"),
    )
    with pytest.raises(ContractError, match="does not belong"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)


def test_checkpoint_smaller_than_old_tokenizer_is_an_error(tmp_path: Path) -> None:
    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=260)
    with pytest.raises(ContractError, match="not trained with the old tokenizer"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)


def test_destination_must_be_new_and_options_are_checked(tmp_path: Path) -> None:
    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=268)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("keep")
    with pytest.raises(ConfigError, match="already exists"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    with pytest.raises(ConfigError, match="unknown init"):
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "c", old, new, init="zeros")
    plan = migrate.resize_checkpoint(
        tmp_path / "a", tmp_path / "c", old, new, pad_to_multiple_of=64
    )
    assert plan.new_rows == 320


@pytest.mark.parametrize("init", migrate.INIT_POLICIES)
def test_policies_are_deterministic_and_sane(tmp_path: Path, init: str) -> None:
    old, new = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=268, dim=8)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new, init=init, seed=7)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "c", old, new, init=init, seed=7)
    b, c = tiny_lm.load(tmp_path / "b"), tiny_lm.load(tmp_path / "c")
    assert b[tiny_lm.EMB].tobytes() == c[tiny_lm.EMB].tobytes()
    rows = b[tiny_lm.EMB][268:]
    emb = before[tiny_lm.EMB].astype(np.float64)
    if init in ("mean", "mean_cov"):
        np.testing.assert_allclose(rows, np.tile(emb.mean(axis=0), (4, 1)), atol=1e-3)
    if init == "normal":
        assert 0.3 < rows.std() / emb.std() < 3
        migrate.resize_checkpoint(tmp_path / "a", tmp_path / "d", old, new, init=init, seed=8)
        assert tiny_lm.load(tmp_path / "d")[tiny_lm.EMB][268:].tobytes() != rows.tobytes()


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    return np.frombuffer(encode(values, "BF16"), dtype="<u2").reshape(values.shape)


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32"])
def test_half_precision_rows_are_bit_identical(tmp_path: Path, dtype: str) -> None:
    old, new = _toks()
    src = tmp_path / "a"
    src.mkdir()
    values = np.random.default_rng(3).normal(size=(268, 8)).astype(np.float32)
    raw = encode(values, dtype)
    write_safetensors(
        src / "model.safetensors", [OutTensor([tiny_lm.EMB], dtype, (268, 8), [("bytes", raw)])]
    )
    migrate.resize_checkpoint(src, tmp_path / "b", old, new)
    info = read_safetensors_header(tmp_path / "b" / "model.safetensors")[tiny_lm.EMB]
    data = (tmp_path / "b" / "model.safetensors").read_bytes()[info.begin : info.end]
    assert data[: len(raw)] == raw
    width = len(raw) // 268
    got = decode(data[268 * width : 269 * width], dtype)
    old_rows = decode(raw, dtype).reshape(268, 8)
    want = (old_rows[101].astype(np.float64) + old_rows[114]) / 2
    np.testing.assert_allclose(got, want, rtol=1e-2 if dtype != "F32" else 1e-6)


def test_bf16_codec_rounds_to_nearest_even() -> None:
    x = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf, 0.0], dtype=np.float32)
    bits = _bf16_bits(x)
    assert bits.tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F80, 0x0000]
    assert np.isnan(decode(encode(np.array([np.nan], np.float32), "BF16"), "BF16")[0])


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows_extra=st.integers(0, 6),
    dim=st.integers(1, 9),
    dtype=st.sampled_from(["BF16", "F16", "F32"]),
    init=st.sampled_from(list(migrate.INIT_POLICIES)),
    tied=st.booleans(),
    seed=st.integers(0, 3),
)
def test_resize_round_trip_keeps_old_rows(
    tmp_path_factory: pytest.TempPathFactory,
    rows_extra: int,
    dim: int,
    dtype: str,
    init: str,
    tied: bool,
    seed: int,
) -> None:
    old, new = _toks()
    base = tmp_path_factory.mktemp("rt")
    rows = 268 + rows_extra
    rng = np.random.default_rng(seed)
    tensors = [
        (tiny_lm.EMB, rng.normal(size=(rows, dim))),
        (tiny_lm.BIAS, rng.normal(size=(rows,))),
    ]
    if not tied:
        tensors.append((tiny_lm.HEAD, rng.normal(size=(rows, dim))))
    src = base / "a"
    src.mkdir()
    outs = [
        OutTensor([n], dtype, v.shape, [("bytes", encode(v.astype(np.float32), dtype))])
        for n, v in tensors
    ]
    write_safetensors(src / "model.safetensors", outs)
    (src / "config.json").write_text(json.dumps({"tie_word_embeddings": tied}))
    migrate.resize_checkpoint(src, base / "b", old, new, init=init, seed=seed)
    a = read_safetensors_header(src / "model.safetensors")
    b = read_safetensors_header(base / "b" / "model.safetensors")
    src_bytes = (src / "model.safetensors").read_bytes()
    dst_bytes = (base / "b" / "model.safetensors").read_bytes()
    for name, _ in tensors:
        width = (a[name].end - a[name].begin) // rows
        assert b[name].shape[0] == max(rows, 272)
        old_part = src_bytes[a[name].begin : a[name].begin + 268 * width]
        assert dst_bytes[b[name].begin : b[name].begin + 268 * width] == old_part


def test_padding_only_resize_adds_no_ids(tmp_path: Path) -> None:
    """Same tokenizer, rows rounded up for tensor-core friendly shapes: nothing to init."""
    old, _ = _toks()
    before = tiny_lm.build(tmp_path / "a", rows=268, tied=False)
    plan = migrate.resize_checkpoint(
        tmp_path / "a", tmp_path / "b", old, old, pad_to_multiple_of=16
    )
    after = tiny_lm.load(tmp_path / "b")
    assert plan.new_rows == 272 and after[tiny_lm.EMB].shape == (272, 16)
    assert not after[tiny_lm.EMB][268:].any()
    _assert_old_logits(before, after, tied=False, old_ids=268)
