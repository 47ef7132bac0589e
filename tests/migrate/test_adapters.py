"""Bug: after the base vocabulary grows, a LoRA adapter stops loading (size mismatch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import tokenpact as tp
from tokenpact import migrate
from tokenpact.errors import ConfigError, ContractError

OLD_MERGES = [(c, c) for c in b"abcdfghijklm"]
NEW_MERGES = [(101, 114), (114, 101), (61, 61), (49, 48)]
PREFIX = "base_model.model."
EMB_A = PREFIX + "model.embed_tokens.lora_embedding_A"
EMB_B = PREFIX + "model.embed_tokens.lora_embedding_B"
HEAD_A = PREFIX + "lm_head.lora_A.weight"
HEAD_B = PREFIX + "lm_head.lora_B.weight"
LAYER_A = PREFIX + "model.layers.0.mlp.lora_A.weight"
HEAD_COPY = PREFIX + "lm_head.weight"  # modules_to_save, saved under the layer's name


def _adapter(folder: Path, rows: int = 268, r: int = 4, d: int = 16) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    tensors = {
        EMB_A: rng.normal(size=(r, rows)).astype(np.float32),
        EMB_B: rng.normal(size=(d, r)).astype(np.float32),
        HEAD_A: rng.normal(size=(r, d)).astype(np.float32),
        HEAD_B: rng.normal(size=(rows, r)).astype(np.float32),
        LAYER_A: rng.normal(size=(r, d)).astype(np.float32),
        HEAD_COPY: rng.normal(size=(rows, d)).astype(np.float32),
    }
    folder.mkdir()
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text('{"r": 4, "peft_type": "LORA"}')
    return tensors


def test_adapter_follows_the_resized_base(tmp_path: Path) -> None:
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=())
    new = migrate.build_extended(old, NEW_MERGES)
    before = _adapter(tmp_path / "lora")
    shapes = migrate.resize_adapter(tmp_path / "lora", tmp_path / "lora2", old, new, rows=272)
    assert shapes == {
        EMB_A: ([4, 268], [4, 272]),
        HEAD_B: ([268, 4], [272, 4]),
        HEAD_COPY: ([268, 16], [272, 16]),
    }
    after = load_file(str(tmp_path / "lora2" / "adapter_model.safetensors"))
    # The adapter's delta on old IDs is unchanged, on new IDs it is zero.
    old_delta = before[EMB_B] @ before[EMB_A]
    new_delta = after[EMB_B] @ after[EMB_A]
    assert new_delta[:, :268].tobytes() == old_delta.tobytes()
    assert not new_delta[:, 268:].any()
    assert after[HEAD_B][:268].tobytes() == before[HEAD_B].tobytes()
    assert not after[HEAD_B][268:].any()
    copy = before[HEAD_COPY]
    np.testing.assert_allclose(after[HEAD_COPY][268], (copy[101] + copy[114]) / 2, rtol=1e-6)
    assert after[LAYER_A].tobytes() == before[LAYER_A].tobytes()
    assert (tmp_path / "lora2" / "adapter_config.json").is_file()


def test_adapter_errors(tmp_path: Path) -> None:
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=())
    new = migrate.build_extended(old, NEW_MERGES)
    _adapter(tmp_path / "lora", rows=260)
    with pytest.raises(ContractError, match="does not belong"):
        migrate.resize_adapter(tmp_path / "lora", tmp_path / "x", old, new, rows=272)
    _adapter(tmp_path / "ok")
    with pytest.raises(ConfigError, match="rows=270"):
        migrate.resize_adapter(tmp_path / "ok", tmp_path / "y", old, new, rows=270)


def test_cli_apply_resizes_the_adapter_too(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    import tiny_lm
    from tokenpact.cli.main import cli

    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=())
    new = migrate.build_extended(old, NEW_MERGES)
    old.save(tmp_path / "t1")
    new.save(tmp_path / "t2")
    tiny_lm.build(tmp_path / "ckpt", rows=268, tied=False)
    _adapter(tmp_path / "lora")
    args = [
        "migrate",
        "apply",
        "--old",
        tmp_path / "t1",
        "--new",
        tmp_path / "t2",
        "--checkpoint",
        tmp_path / "ckpt",
        "-o",
        tmp_path / "ckpt2",
        "--adapter",
        tmp_path / "lora",
        "--adapter-out",
        tmp_path / "lora2",
        "--json",
    ]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["adapter_shapes"][HEAD_B] == [[268, 4], [272, 4]]
