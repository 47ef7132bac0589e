"""Migration beyond append-only: exact row remaps for a replacement tokenizer, vocabulary
shard ownership for tensor parallelism, ZeRO-flat and factorized optimizer state.

Invariants: every surviving token's row moves byte for byte in every vocabulary tensor
(embedding, untied head, bias, Adam slots, master copy, Adafactor row factor); tensor-
parallel ranks own contiguous equal blocks that tile the table, for the seed's 268 -> 272
growth and the reverse shrink, at TP=2 and TP=4; flat optimizer shards move the same
rows as the parameter.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tokenpact as tp
from tokenpact import migrate
from tokenpact.errors import ArtifactError, ConfigError

safetensors_numpy = pytest.importorskip("safetensors.numpy")

EMB, HEAD, BIAS = "model.embed_tokens.weight", "lm_head.weight", "lm_head.bias"


@pytest.fixture(scope="module")
def toks() -> tuple[tp.Tokenizer, tp.Tokenizer]:
    from tokenpact.corpus import builtin_corpus

    texts = [d.text for d in builtin_corpus(max_bytes=60_000)]
    old = tp.train_bpe(texts[::2], vocab_size=300, special_tokens=["<|a|>", "<|b|>"])
    # A replacement: other merges (another half of the corpus), specials in another order.
    new = tp.train_bpe(texts[1::2], vocab_size=310, special_tokens=["<|b|>", "<|c|>", "<|a|>"])
    return old, new


def test_id_remap_matches_tokens_by_bytes_and_spelling(toks: tuple) -> None:
    old, new = toks
    remap = migrate.id_remap(old, new)
    assert remap.new_ids == 310 and remap.old_ids == 300
    for n, o in enumerate(remap.sources):
        if o is not None:
            assert new.token_bytes(n) == old.token_bytes(o)
    assert remap.sources[:256] == tuple(range(256))  # the byte alphabet stays put
    sp_new, sp_old = new.special_tokens, old.special_tokens
    assert remap.sources[sp_new["<|a|>"]] == sp_old["<|a|>"]
    assert remap.sources[sp_new["<|c|>"]] is None
    assert not remap.is_identity_prefix and remap.unmapped and remap.dropped
    # The in-memory reference: out[new] = old[sources[new]].
    table = np.arange(300 * 3, dtype=np.float32).reshape(300, 3)
    moved = remap.apply(table, fill=-1.0)
    for n, o in enumerate(remap.sources):
        expected = table[o] if o is not None else np.full(3, -1.0, np.float32)
        np.testing.assert_array_equal(moved[n], expected)


def _checkpoint(path: Path, rows: int, d: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    tensors = {
        EMB: rng.standard_normal((rows, d)).astype(np.float32),
        HEAD: rng.standard_normal((rows, d)).astype(np.float32),
        BIAS: rng.standard_normal(rows).astype(np.float32),
        f"exp_avg.{EMB}": rng.standard_normal((rows, d)).astype(np.float32),
        f"exp_avg_sq.{HEAD}": rng.random((rows, d)).astype(np.float32),
        f"master.{EMB}": rng.standard_normal((rows, d)).astype(np.float32),
        f"{HEAD}.exp_avg_sq_row": rng.random(rows).astype(np.float32) + 0.5,
        f"{HEAD}.exp_avg_sq_col": rng.random(d).astype(np.float32),
        "model.norm.weight": rng.standard_normal(d).astype(np.float32),
    }
    path.mkdir()
    safetensors_numpy.save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"vocab_size": rows}), encoding="utf-8")
    return tensors


def test_checkpoint_rows_move_exactly(toks: tuple, tmp_path: Path) -> None:
    old, new = toks
    before = _checkpoint(tmp_path / "ckpt", 300)
    report = migrate.remap_checkpoint(tmp_path / "ckpt", tmp_path / "new", old, new)
    after = safetensors_numpy.load_file(str(tmp_path / "new" / "model.safetensors"))
    remap = migrate.id_remap(old, new)
    assert report["new_rows"] == 310 and report["remap"]["unmapped"] == remap.unmapped
    vocab_tensors = [n for n in before if n not in ("model.norm.weight", f"{HEAD}.exp_avg_sq_col")]
    assert sorted(report["tensors"]) == sorted(vocab_tensors)
    for name in vocab_tensors:
        assert after[name].shape[0] == 310
        for n, o in enumerate(remap.sources):
            if o is not None:
                assert after[name][n].tobytes() == before[name][o].tobytes(), (name, n)
    new_rows = remap.unmapped
    np.testing.assert_array_equal(after[f"exp_avg.{EMB}"][new_rows], 0.0)
    np.testing.assert_array_equal(after[BIAS][new_rows], 0.0)
    mean = before[EMB].astype(np.float64).mean(axis=0).astype(np.float32)
    np.testing.assert_allclose(after[EMB][new_rows], np.tile(mean, (len(new_rows), 1)), rtol=1e-6)
    # Adafactor: the row factor of a new row is the old factors' mean (never 0); the
    # column factor is not on the vocabulary axis and is copied.
    row = before[f"{HEAD}.exp_avg_sq_row"]
    np.testing.assert_allclose(after[f"{HEAD}.exp_avg_sq_row"][new_rows], row.mean(), rtol=1e-6)
    assert after[f"{HEAD}.exp_avg_sq_col"].tobytes() == before[f"{HEAD}.exp_avg_sq_col"].tobytes()
    assert after["model.norm.weight"].tobytes() == before["model.norm.weight"].tobytes()
    config = json.loads((tmp_path / "new" / "config.json").read_text(encoding="utf-8"))
    assert config["vocab_size"] == 310
    with pytest.raises(ArtifactError, match="exists"):
        migrate.remap_checkpoint(tmp_path / "ckpt", tmp_path / "new", old, new)


def test_padded_rows_and_append_only_is_identity(toks: tuple, tmp_path: Path) -> None:
    old, new = toks
    _checkpoint(tmp_path / "ckpt", 300)
    report = migrate.remap_checkpoint(
        tmp_path / "ckpt", tmp_path / "pad", old, new, pad_to_multiple_of=64, init="zero"
    )
    assert report["new_rows"] == 320
    same = migrate.id_remap(old, old)
    assert same.is_identity_prefix and not same.unmapped and not same.dropped


@pytest.mark.parametrize("tp_size", [2, 4])
@pytest.mark.parametrize(("old_rows", "new_rows"), [(268, 272), (272, 268)])
def test_tensor_parallel_ownership_when_v_changes(
    tp_size: int, old_rows: int, new_rows: int
) -> None:
    shards = migrate.vocab_shards(new_rows, tp_size)
    assert shards[0][0] == 0 and shards[-1][1] == new_rows
    assert all(a[1] == b[0] for a, b in zip(shards, shards[1:], strict=False))
    assert {b - a for a, b in shards} == {new_rows // tp_size}
    moves = migrate.shard_moves(None, old_rows=old_rows, new_rows=new_rows, tp=tp_size)
    kept = min(old_rows, new_rows)
    # Every kept row arrives exactly once; the rest are initialized.
    assert sum(sum(r["received_from"]) for r in moves["ranks"]) == kept
    assert sum(r["initialized"] for r in moves["ranks"]) == max(0, new_rows - old_rows)
    # Row i changes rank when its block index changes: count it directly.
    old_per, new_per = old_rows // tp_size, new_rows // tp_size
    crossing = sum(1 for i in range(kept) if i // old_per != i // new_per)
    assert moves["rows_crossing_ranks"] == crossing > 0
    if tp_size == 2 and old_rows == 268:
        # The seed's 268 -> 272: rank 0 owned 0..133 and owns 0..135; rows 134, 135
        # come from rank 1.
        assert moves["ranks"][0]["new_rows"] == [0, 136]
        assert moves["ranks"][0]["received_from"] == [134, 2]
        assert moves["ranks"][1]["received_from"] == [0, 132]
        assert moves["ranks"][1]["initialized"] == 4
    with pytest.raises(ConfigError, match="pad the table"):
        migrate.vocab_shards(270, 4)


def test_zero_flat_state_moves_the_same_rows(toks: tuple) -> None:
    old, new = toks
    remap = migrate.id_remap(old, new)
    d, world = 4, 4
    layout = [("norm", (d,)), ("embed", (300, d)), ("head_bias", (7,))]
    rng = np.random.default_rng(1)
    parts = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in layout}
    flat = np.concatenate([parts[n].reshape(-1) for n, _ in layout])
    per = -(-flat.size // world)
    padded = np.zeros(per * world, np.float32)
    padded[: flat.size] = flat
    shards = [padded[r * per : (r + 1) * per] for r in range(world)]
    new_shards, new_layout = migrate.reshard_flat_state(shards, layout, "embed", remap)
    assert new_layout == [("norm", (d,)), ("embed", (310, d)), ("head_bias", (7,))]
    assert len(new_shards) == world and len({s.size for s in new_shards}) == 1
    body = np.concatenate(new_shards)
    embed = body[d : d + 310 * d].reshape(310, d)
    np.testing.assert_array_equal(embed, remap.apply(parts["embed"]))
    np.testing.assert_array_equal(body[:d], parts["norm"])
    np.testing.assert_array_equal(body[d + 310 * d : d + 310 * d + 7], parts["head_bias"])
    assert not body[d + 310 * d + 7 :].any()  # ZeRO padding stays zero


def test_sharded_checkpoint_with_index(toks: tuple, tmp_path: Path) -> None:
    old, new = toks
    rng = np.random.default_rng(2)
    src = tmp_path / "ckpt"
    src.mkdir()
    emb = rng.standard_normal((300, 4)).astype(np.float32)
    head = rng.standard_normal((300, 4)).astype(np.float32)
    safetensors_numpy.save_file({EMB: emb}, str(src / "model-00001-of-00002.safetensors"))
    safetensors_numpy.save_file({HEAD: head}, str(src / "model-00002-of-00002.safetensors"))
    index = {"metadata": {}, "weight_map": {EMB: "model-00001-of-00002.safetensors",
                                           HEAD: "model-00002-of-00002.safetensors"}}  # fmt: skip
    (src / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    migrate.remap_checkpoint(src, tmp_path / "out", old, new, init="zero")
    out = tmp_path / "out"
    remap = migrate.id_remap(old, new)
    got = safetensors_numpy.load_file(str(out / "model-00002-of-00002.safetensors"))[HEAD]
    np.testing.assert_array_equal(got, remap.apply(head))
    written = json.loads((out / "model.safetensors.index.json").read_text(encoding="utf-8"))
    assert written["weight_map"] == index["weight_map"]
    assert written["metadata"]["total_size"] == 2 * 310 * 4 * 4
