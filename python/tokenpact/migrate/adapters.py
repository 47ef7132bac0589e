"""Resize a PEFT/LoRA adapter together with its base checkpoint, so it keeps loading.

After the base model grows from ``R`` to ``R'`` vocabulary rows, an adapter trained on
it fails to load ("size mismatch") wherever a tensor is indexed by the vocabulary:

- ``lora_embedding_A`` of an embedding: ``[r, R]``, the vocabulary is the *second* axis;
- ``lora_B`` of the output head: ``[R, r]``;
- full copies of the embedding or head (``modules_to_save``): ``[R, d]``.

New vocabulary entries get a zero adapter delta (zero columns of ``lora_embedding_A``,
zero rows of the head's ``lora_B``), so the adapted model's new rows are exactly the
base model's new rows; full copies get their new rows from the same policy as the base
(``init``). Old entries are copied byte for byte. Other tensors and files are copied.

Example::

    tp.migrate.resize_adapter("lora", "lora-272", old_tok, new_tok, rows=272)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ..contract.checkpoint_reader import TensorInfo, read_safetensors_header
from ..core import Tokenizer
from ..errors import ArtifactError, ConfigError, ContractError
from .decompose import decompositions, id_space, prefix_problems
from .files import staged_dir
from .row_init import check_policy, init_new_rows
from .safetensors_stream import (
    FLOAT_DTYPES,
    OutTensor,
    check_float,
    copy_segment,
    encode,
    row_bytes,
    write_safetensors,
)
from .vocab_tensors import file_metadata

ADAPTER_FILE = "adapter_model.safetensors"
VOCAB_MODULES = (
    "embed_tokens",
    "wte",
    "word_embeddings",
    "lm_head",
    "embed_in",
    "embed_out",
    "tok_embeddings",
    "output",
)


def _vocab_module(name: str) -> bool:
    return any(f".{m}." in f".{name}" for m in VOCAB_MODULES)


def _role(info: TensorInfo, old_rows: int) -> str | None:
    """How ``info`` is indexed by the vocabulary: "columns", "rows", "copy" or None."""
    if not _vocab_module(info.name) or len(info.shape) not in (1, 2):
        return None
    if "lora_embedding_A" in info.name and info.shape[-1] == old_rows:
        return "columns"
    if "lora_" not in info.name and info.shape[0] == old_rows:
        # A full copy of the layer (``modules_to_save``; PEFT saves it under the
        # layer's own name, e.g. ``base_model.model.lm_head.weight``).
        return "copy"
    if ("lora_B" in info.name or "lora_embedding_B" in info.name) and info.shape[0] == old_rows:
        return "rows"
    return None


def resize_adapter(
    src_dir: str | os.PathLike[str],
    dst_dir: str | os.PathLike[str],
    old_tok: Tokenizer,
    new_tok: Tokenizer,
    *,
    rows: int,
    init: str = "fvt",
    seed: int = 0,
) -> dict[str, tuple[list[int], list[int]]]:
    """Write a copy of the adapter in ``src_dir`` whose vocabulary axes have ``rows``
    entries (the resized base checkpoint's row count). Returns ``{name: (old, new shape)}``.
    """
    check_policy(init)
    problems = prefix_problems(old_tok, new_tok)
    if problems:
        raise ContractError("the new tokenizer is not append-only: " + "; ".join(problems[:3]))
    src, dst = Path(src_dir), Path(dst_dir)
    path = src / ADAPTER_FILE
    if not path.is_file():
        raise ArtifactError(f"{src} holds no {ADAPTER_FILE}")
    if dst.exists():
        raise ConfigError(f"{dst} already exists; resize into a new directory")
    header = read_safetensors_header(path)
    old_ids, new_ids = id_space(old_tok), id_space(new_tok)
    sizes = {i.shape[-1] for i in header.values() if "lora_embedding_A" in i.name}
    sizes |= {
        i.shape[0]
        for i in header.values()
        if _vocab_module(i.name) and ("lora_B" in i.name or "lora_" not in i.name)
    }
    candidates = sorted(s for s in sizes if old_ids <= s <= rows)
    if not candidates:
        raise ContractError(
            f"no vocabulary-indexed adapter tensor has between {old_ids} and {rows} entries; "
            "this adapter does not belong to the old checkpoint"
        )
    old_rows = candidates[0]
    if rows < max(old_rows, new_ids):
        raise ConfigError(
            f"rows={rows} would shrink the adapter or miss new IDs; use >= "
            f"{max(old_rows, new_ids)} (the base checkpoint's new row count)"
        )
    sources = decompositions(old_tok, new_tok) if init == "fvt" else {}
    shapes: dict[str, tuple[list[int], list[int]]] = {}
    outs: list[OutTensor] = []
    for info in sorted(header.values(), key=lambda i: (i.begin, i.name)):
        role = _role(info, old_rows)
        if role is None:
            outs.append(OutTensor([info.name], info.dtype, info.shape, [copy_segment(info)]))
            continue
        check_float(info)
        outs.append(_resized(info, role, old_rows, rows, old_ids, new_ids, sources, init, seed))
        shapes[info.name] = (list(info.shape), list(outs[-1].shape))
    with staged_dir(dst) as tmp:
        write_safetensors(tmp / ADAPTER_FILE, outs, file_metadata(path))
        for item in sorted(src.iterdir()):
            if item.is_file() and item.name != ADAPTER_FILE:
                shutil.copy2(item, tmp / item.name)
    return shapes


def _resized(
    info: TensorInfo,
    role: str,
    old_rows: int,
    rows: int,
    old_ids: int,
    new_ids: int,
    sources: dict[int, list[int]],
    init: str,
    seed: int,
) -> OutTensor:
    width = FLOAT_DTYPES[info.dtype].itemsize
    grow = rows - old_rows
    if role == "columns":
        # [r, V]: every row of the low-rank factor gains zero columns for the new IDs.
        r, v = info.shape
        segs: list[tuple[Any, ...]] = []
        for i in range(r):
            segs.append(("copy", info.file, info.begin + i * v * width, v * width))
            segs.append(("bytes", bytes(grow * width)))
        return OutTensor([info.name], info.dtype, (r, rows), segs)
    shape = (rows, *info.shape[1:])
    line = row_bytes(info)
    if role == "rows":  # lora_B of the head: zero delta for new IDs
        return OutTensor(
            [info.name], info.dtype, shape, [copy_segment(info), ("bytes", bytes(grow * line))]
        )
    # A full copy (modules_to_save): new IDs initialized like the base checkpoint.
    count = max(new_ids - old_ids, 0)
    values = init_new_rows(
        info,
        old_ids=old_ids,
        decompositions=[sources.get(i, []) for i in range(old_ids, new_ids)],
        init=init,
        seed=seed,
    )
    segs = [copy_segment(info, 0, old_ids), ("bytes", encode(values, info.dtype) if count else b"")]
    if new_ids < old_rows:
        segs.append(copy_segment(info, new_ids, old_rows))
    tail = rows - max(old_rows, new_ids)
    if tail > 0:
        segs.append(("bytes", bytes(tail * line)))
    return OutTensor([info.name], info.dtype, shape, segs)
