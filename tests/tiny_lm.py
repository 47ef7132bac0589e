"""A tiny causal LM in numpy, saved as safetensors: embedding -> one layer -> head.

h_t = tanh(W @ mean(E[x_0..x_t]) + c);  logits_t = h_t @ H.T + b, with H = E when tied.
Small enough to build in a test, real enough that a wrong row, a swapped head or a
shrunk matrix changes the logits.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

EMB = "model.embed_tokens.weight"
HEAD = "lm_head.weight"
BIAS = "lm_head.bias"
LAYER_W = "model.layers.0.mlp.weight"
LAYER_B = "model.layers.0.mlp.bias"


def build(
    folder: Path,
    *,
    rows: int,
    dim: int = 16,
    tied: bool = True,
    bias: bool = True,
    seed: int = 0,
    dtype: str = "float32",
    optimizer: bool = False,
    shards: int = 1,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tensors = {
        EMB: rng.normal(0, 0.5, (rows, dim)).astype(dtype),
        LAYER_W: rng.normal(0, 0.3, (dim, dim)).astype(dtype),
        LAYER_B: rng.normal(0, 0.1, (dim,)).astype(dtype),
    }
    if not tied:
        tensors[HEAD] = rng.normal(0, 0.5, (rows, dim)).astype(dtype)
    if bias:
        tensors[BIAS] = rng.normal(0, 0.1, (rows,)).astype(dtype)
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(tensors)
    if shards == 1:
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "np"})
    else:
        weight_map = {}
        for k in range(shards):
            part = {n: tensors[n] for n in names[k::shards]}
            shard = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            save_file(part, str(folder / shard))
            weight_map.update(dict.fromkeys(part, shard))
        index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    if optimizer:
        state = {}
        for name in (EMB, HEAD, BIAS):
            if name in tensors:
                state[f"exp_avg.{name}"] = rng.normal(0, 1e-3, tensors[name].shape).astype(
                    "float32"
                )
                state[f"exp_avg_sq.{name}"] = rng.random(tensors[name].shape).astype("float32")
        state["exp_avg." + LAYER_W] = np.zeros((dim, dim), dtype="float32")
        save_file(state, str(folder / "optimizer.safetensors"))
    config = {"vocab_size": rows, "hidden_size": dim, "tie_word_embeddings": tied}
    (folder / "config.json").write_text(json.dumps(config))
    return tensors


def load(folder: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for path in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(path)))
    return out


def logits(tensors: dict[str, np.ndarray], ids: list[int], *, tied: bool) -> np.ndarray:
    emb = tensors[EMB].astype(np.float64)
    x = emb[ids]
    prefix = np.cumsum(x, axis=0) / np.arange(1, len(ids) + 1)[:, None]
    h = np.tanh(prefix @ tensors[LAYER_W].astype(np.float64).T + tensors[LAYER_B])
    head = emb if tied else tensors[HEAD].astype(np.float64)
    out = h @ head.T
    if BIAS in tensors:
        out = out + tensors[BIAS].astype(np.float64)
    return out
