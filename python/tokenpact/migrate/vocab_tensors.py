"""Find the vocabulary-indexed tensors of a safetensors checkpoint directory.

Input embedding, output head (tied or not), output bias, and every optimizer slot or
master copy of those parameters, matched by *parameter name* (identity), never by
position: ``exp_avg.<param>``, ``<param>.exp_avg_sq``, ``state.<param>.exp_avg``, ...
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.checkpoint_reader import EMBEDDING_NAMES, OUTPUT_NAMES
from ..contract.safetensors_header import TensorInfo, read_safetensors, read_shard_index
from ..errors import ArtifactError, ContractError

INDEX_FILE = "model.safetensors.index.json"
BIAS_NAMES = ("final_logits_bias",)
ZERO_SLOTS = ("exp_avg", "exp_avg_sq", "momentum_buffer", "momentum", "variance", "grad")
COPY_SLOTS = ("master", "fp32", "master_weight", "master_weights")


@dataclass(frozen=True)
class VocabTensor:
    """A tensor whose first axis is the vocabulary.

    ``role``: "embedding", "output", "bias", "slot" (zero new rows: Adam moments,
    momenta, gradients) or "copy" (master weights: new rows equal the parameter's).
    ``param`` names the parameter a slot or copy belongs to.
    """

    name: str
    role: str
    param: str
    info: TensorInfo


@dataclass(frozen=True)
class CheckpointTensors:
    files: list[Path]
    tensors: dict[str, TensorInfo]
    metadata: dict[Path, dict[str, str] | None]
    config: dict[str, Any]
    index: dict[str, Any] | None


def file_metadata(path: Path) -> dict[str, str] | None:
    """The ``__metadata__`` strings of a safetensors file (validated with its header)."""
    return read_safetensors(path).metadata


def load_checkpoint(src: str | os.PathLike[str]) -> CheckpointTensors:
    """Every ``*.safetensors`` file of a checkpoint directory (model shards and optimizer
    files), its ``config.json`` and its shard index."""
    root = Path(src)
    if not root.is_dir():
        raise ArtifactError(f"{root} is not a checkpoint directory; pass the folder")
    files = sorted(root.glob("*.safetensors"))
    if not files:
        raise ArtifactError(f"{root} holds no *.safetensors file")
    index = None
    weight_map: dict[str, str] = {}
    if (root / INDEX_FILE).is_file():
        weight_map = read_shard_index(root / INDEX_FILE)
        index = json.loads((root / INDEX_FILE).read_text(encoding="utf-8"))
        missing = sorted(s for s in set(weight_map.values()) if not (root / s).is_file())
        if missing:
            raise ArtifactError(f"the shard index names missing files {missing}")
    tensors: dict[str, TensorInfo] = {}
    metadata: dict[Path, dict[str, str] | None] = {}
    for path in files:
        header = read_safetensors(path)
        metadata[path] = header.metadata
        for name, info in header.tensors.items():
            if name in tensors:
                raise ArtifactError(f"tensor {name!r} is stored in two files; keep one copy")
            tensors[name] = info
    for name, shard in weight_map.items():
        if name not in tensors or tensors[name].file.name != shard:
            raise ArtifactError(
                f"{root / INDEX_FILE} puts tensor {name!r} in {shard}, which does not hold it"
            )
    config: dict[str, Any] = {}
    if (root / "config.json").is_file():
        try:
            config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ArtifactError(f"{root / 'config.json'} is not JSON ({exc})") from None
    return CheckpointTensors(files, tensors, metadata, config, index)


def _pick(tensors: Mapping[str, TensorInfo], name: str | None, names: tuple[str, ...]) -> Any:
    if name is not None:
        if name not in tensors:
            raise ContractError(f"tensor {name!r} is not in the checkpoint")
        return tensors[name]
    return next((tensors[n] for n in names if n in tensors), None)


def find_embedding(ckpt: CheckpointTensors, name: str | None) -> TensorInfo:
    emb = _pick(ckpt.tensors, name, EMBEDDING_NAMES)
    if emb is None or len(emb.shape) != 2:
        matrices = sorted(n for n, t in ckpt.tensors.items() if len(t.shape) == 2)[:8]
        raise ContractError(
            f"cannot find a 2-D input embedding; pass embedding_name= (2-D tensors: {matrices})"
        )
    return emb


def find_output(ckpt: CheckpointTensors, name: str | None) -> TensorInfo | None:
    return _pick(ckpt.tensors, name, OUTPUT_NAMES)  # type: ignore[no-any-return]


def find_bias(ckpt: CheckpointTensors, output_name: str | None) -> TensorInfo | None:
    candidates = [n.removesuffix(".weight") + ".bias" for n in (output_name, *OUTPUT_NAMES) if n]
    for name in (*candidates, *BIAS_NAMES):
        info = ckpt.tensors.get(name)
        if info is not None and len(info.shape) == 1:
            return info
    return None


def _slot_role(name: str, param: str) -> str | None:
    if name == param:
        return None
    if name.startswith(param + "."):
        rest = name[len(param) + 1 :]
    elif name.endswith("." + param):
        rest = name[: -len(param) - 1]
    elif f".{param}." in name:
        head, _, tail = name.partition(f".{param}.")
        rest = head + "." + tail
    else:
        return None
    words = set(rest.split("."))
    if words & set(ZERO_SLOTS):
        return "slot"
    if words & set(COPY_SLOTS):
        return "copy"
    return None


def find_slots(ckpt: CheckpointTensors, params: list[TensorInfo]) -> list[VocabTensor]:
    """Optimizer slots and master copies of ``params``, checked to have their shape."""
    found: list[VocabTensor] = []
    for name, info in sorted(ckpt.tensors.items()):
        for param in params:
            role = _slot_role(name, param.name)
            if role is None:
                continue
            if info.shape != param.shape:
                raise ContractError(
                    f"optimizer tensor {name!r} has shape {list(info.shape)} but parameter "
                    f"{param.name!r} has {list(param.shape)}; the optimizer state does not "
                    "belong to this checkpoint"
                )
            found.append(VocabTensor(name, role, param.name, info))
            break
    return found
