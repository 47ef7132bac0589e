"""Fill a checkpoint declaration from the tensors themselves (``*.safetensors``).

A safetensors file is an 8-byte little-endian header length, a JSON header mapping tensor
names to ``{dtype, shape, data_offsets}`` (offsets relative to the end of the header) and
the raw tensor bytes. We parse the header ourselves: row counts come from tensor shapes and
the tied-head check from offsets or bytes, so no tensor library is needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ArtifactError, ContractError
from .declarations import CheckpointDeclaration
from .safetensors_header import TensorInfo, read_safetensors_header, read_sharded

__all__ = [
    "TensorInfo",
    "checkpoint_from_safetensors",
    "load_tensor_index",
    "read_safetensors_header",
]

# Common names of the input embedding and output head across model families.
EMBEDDING_NAMES = (
    "model.embed_tokens.weight",
    "transformer.wte.weight",
    "tok_embeddings.weight",
    "embed_tokens.weight",
    "wte.weight",
    "gpt_neox.embed_in.weight",
    "transformer.word_embeddings.weight",
    "model.decoder.embed_tokens.weight",
    "embeddings.word_embeddings.weight",
    "bert.embeddings.word_embeddings.weight",
    "token_embedding.weight",
)
OUTPUT_NAMES = ("lm_head.weight", "output.weight", "embed_out.weight", "model.lm_head.weight")
_CHUNK = 1 << 20


def load_tensor_index(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Return every tensor of a checkpoint: a ``.safetensors`` file, a sharded
    ``*.safetensors.index.json``, or a directory holding either."""
    target = Path(path)
    if target.is_dir():
        index = target / "model.safetensors.index.json"
        target = index if index.exists() else target / "model.safetensors"
    if not target.exists():
        raise ArtifactError(f"no safetensors checkpoint at {path}")
    if target.suffix != ".json":
        return read_safetensors_header(target)
    return read_sharded(target)


def _same_bytes(a: TensorInfo, b: TensorInfo) -> bool:
    if a.end - a.begin != b.end - b.begin or a.dtype != b.dtype or a.shape != b.shape:
        return False
    with open(a.file, "rb") as fa, open(b.file, "rb") as fb:
        fa.seek(a.begin)
        fb.seek(b.begin)
        remaining = a.end - a.begin
        while remaining:
            step = min(_CHUNK, remaining)
            if fa.read(step) != fb.read(step):
                return False
            remaining -= step
    return True


def _pick(tensors: Mapping[str, TensorInfo], name: str | None, names: tuple[str, ...]) -> Any:
    if name is not None:
        if name not in tensors:
            raise ContractError(f"tensor {name!r} is not in the checkpoint")
        return tensors[name]
    return next((tensors[n] for n in names if n in tensors), None)


def _tie(
    emb: TensorInfo, out: TensorInfo | None, declared: Any
) -> tuple[bool, bool, int | None, str]:
    """Return (tied, verified, output rows, evidence)."""
    if out is None:
        if declared is False:
            return False, False, None, "no output head tensor; config says untied"
        return True, True, emb.shape[0], "output head absent from file: the loader ties it"
    if out.file == emb.file and (out.begin, out.end) == (emb.begin, emb.end):
        return True, True, out.shape[0], "output head and embedding share storage"
    if declared is False:
        return False, False, out.shape[0], "config says untied"
    identical = _same_bytes(emb, out)
    if identical:
        return True, True, out.shape[0], "output head bytes equal the embedding's"
    if declared is True:
        return True, False, out.shape[0], "config ties the head, but the tensors differ"
    return False, False, out.shape[0], "separate output head"


def _special_ids(config: Mapping[str, Any]) -> dict[str, Any]:
    eos = config.get("eos_token_id")
    eos_list = [eos] if isinstance(eos, int) else list(eos or [])
    return {
        "bos": config.get("bos_token_id"),
        "eos": eos_list[0] if eos_list else None,
        "pad": config.get("pad_token_id"),
        "stop": sorted(set(eos_list)),
    }


def _load_config(path: Path, config: Mapping[str, Any] | str | os.PathLike[str] | None) -> Any:
    if isinstance(config, Mapping):
        return config
    if config is None:
        folder = path if path.is_dir() else path.parent
        candidate = folder / "config.json"
        if not candidate.exists():
            return {}
        config = candidate
    try:
        return json.loads(Path(config).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"cannot read model config {config}: {exc}") from None


def checkpoint_from_safetensors(
    path: str | os.PathLike[str],
    config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    tokenizer_hash: str | None = None,
    template_hash: str | None = None,
    embedding_name: str | None = None,
    output_name: str | None = None,
    special_ids: Mapping[str, Any] | None = None,
) -> CheckpointDeclaration:
    """Declare a checkpoint from its tensors: row counts from shapes, the tied-head check
    from storage offsets or bytes, special IDs from the model config (``config.json``
    beside the weights by default; HF keys ``bos_token_id``/``eos_token_id``/``pad_token_id``).
    """
    target = Path(path)
    tensors = load_tensor_index(target)
    emb = _pick(tensors, embedding_name, EMBEDDING_NAMES)
    if emb is None:
        matrices = sorted(n for n, t in tensors.items() if len(t.shape) == 2)[:8]
        raise ContractError(
            f"cannot find the input embedding in {path}; pass embedding_name= "
            f"(2-D tensors include {matrices})"
        )
    if len(emb.shape) != 2:
        raise ContractError(f"embedding {emb.name!r} has shape {emb.shape}; expected 2-D")
    cfg = _load_config(target, config)
    out = _pick(tensors, output_name, OUTPUT_NAMES)
    tied, verified, out_rows, evidence = _tie(emb, out, cfg.get("tie_word_embeddings"))
    return CheckpointDeclaration(
        tokenizer_hash=tokenizer_hash,
        template_hash=template_hash,
        input_embedding_rows=emb.shape[0],
        output_vocab_rows=out_rows,
        special_ids=dict(special_ids) if special_ids is not None else _special_ids(cfg),
        tied_output_head=tied,
        tied_storage_verified=verified,
        evidence=evidence,
    )
