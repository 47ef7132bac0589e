"""Fill a checkpoint declaration from the tensors themselves (``*.safetensors``).

A safetensors file is an 8-byte little-endian header length, a JSON header mapping tensor
names to ``{dtype, shape, data_offsets}`` (offsets relative to the end of the header) and
the raw tensor bytes. We parse the header ourselves: row counts come from tensor shapes and
the tied-head check from offsets or bytes, so no tensor library is needed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ArtifactError, ContractError
from .declarations import CheckpointDeclaration

# Real headers are kilobytes to a few megabytes; the cap stops a corrupt length field from
# asking for gigabytes of memory.
MAX_HEADER_BYTES = 100 * 1024 * 1024
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}  # fmt: skip
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


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor's bytes live: file and absolute byte range."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path
    begin: int
    end: int


def _bad(path: Path, problem: str) -> ArtifactError:
    return ArtifactError(f"{path} is not a valid safetensors file: {problem}")


def _tensor(path: Path, name: str, entry: Any, base: int, size: int) -> TensorInfo:
    if not isinstance(entry, dict):
        raise _bad(path, f"entry {name!r} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str):
        raise _bad(path, f"tensor {name!r} has no dtype")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise _bad(path, f"tensor {name!r} has shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
        or base + offsets[1] > size
    ):
        raise _bad(path, f"tensor {name!r} has data_offsets {offsets!r} outside the file")
    width = DTYPE_BYTES.get(dtype)
    if width is not None and offsets[1] - offsets[0] != width * math.prod(shape):
        raise _bad(path, f"tensor {name!r} ({dtype} {shape}) has the wrong byte length")
    return TensorInfo(name, dtype, tuple(shape), path, base + offsets[0], base + offsets[1])


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Return ``{name: TensorInfo}`` from a safetensors file without loading tensors."""
    file = Path(path)
    with open(file, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(8)
        if len(head) < 8:
            raise _bad(file, "shorter than the 8-byte header length")
        length = int.from_bytes(head, "little")
        if length > MAX_HEADER_BYTES or 8 + length > size:
            raise _bad(file, f"header length {length} does not fit the file ({size} bytes)")
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(file, f"header is not UTF-8 JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad(file, "header is not a JSON object")
    header.pop("__metadata__", None)
    base = 8 + length
    return {name: _tensor(file, name, entry, base, size) for name, entry in header.items()}


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
    try:
        weight_map = json.loads(target.read_text(encoding="utf-8"))["weight_map"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{target} is not a safetensors index ({exc})") from None
    tensors: dict[str, TensorInfo] = {}
    for shard in sorted(set(weight_map.values())):
        tensors.update(read_safetensors_header(target.parent / shard))
    return tensors


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
