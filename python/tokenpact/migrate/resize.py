"""Resize a safetensors checkpoint for an append-only tokenizer change.

Example::

    report = tp.migrate.resize_checkpoint("ckpt", "ckpt-272", old_tok, new_tok, init="fvt")
    report.shapes["model.embed_tokens.weight"]  # ([268, 64], [272, 64])

What it guarantees, each one a public failure of naive resizing:

- old rows (IDs ``0..V_old-1``) are copied byte for byte, never re-encoded;
- a padded matrix is never shrunk: rows = max(old rows, new vocab size);
- new IDs that fall inside existing padding rows are initialized too;
- an untied output head is resized with its own rows, never overwritten by the
  embedding; a tied one (shared storage, identical bytes, or absent with
  ``tie_word_embeddings``) stays tied;
- the output bias and every optimizer slot of these parameters are expanded by
  parameter name (new moments are zero, master copies get the new rows);
- ``config.json`` ``vocab_size`` names the new row count;
- untouched tensors are copied file-to-file, so memory stays near the size of the
  new rows plus a block of old rows being averaged, whatever the checkpoint size.

The destination directory is assembled beside it and renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.checkpoint_reader import TensorInfo
from ..core import Tokenizer
from ..errors import ConfigError, ContractError
from .decompose import decompositions, id_space, prefix_problems
from .files import atomic_write_text, staged_dir
from .row_init import check_policy, init_new_rows, init_rows
from .safetensors_stream import (
    OutTensor,
    check_float,
    commit,
    copy_segment,
    encode,
    fill_segment,
    row_bytes,
    write_unsynced,
)
from .vocab_tensors import (
    INDEX_FILE,
    CheckpointTensors,
    VocabTensor,
    find_bias,
    find_embedding,
    find_output,
    find_slots,
    load_checkpoint,
)

BIAS_INITS = ("zero", "mean")
# More threads than this only contend for memory bandwidth in the kernel copy.
MAX_FILE_WORKERS = 4


@dataclass
class ResizePlan:
    """What a resize will do; ``resize_checkpoint`` executes it (``migrate plan`` prints it)."""

    old_ids: int
    new_ids: int
    old_rows: int
    new_rows: int
    init: str
    seed: int
    tied: bool
    tie_evidence: str
    tensors: list[VocabTensor]
    sources: dict[int, list[int]]
    old_semantic_hash: str = ""
    new_semantic_hash: str = ""
    shapes: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)

    @property
    def added_parameters(self) -> int:
        """New trainable scalars (a tied head is counted once): Delta P."""
        return sum(
            _grown(t.info, self.new_rows)
            for t in self.tensors
            if t.role in ("embedding", "output", "bias")
        )

    @property
    def adam_slot_values(self) -> int:
        """Values two Adam moments gain for ``added_parameters`` (2 x Delta P)."""
        return 2 * self.added_parameters

    @property
    def optimizer_slot_values(self) -> int:
        """Values the optimizer tensors found in the checkpoint actually gain."""
        return sum(
            _grown(t.info, self.new_rows) for t in self.tensors if t.role in ("slot", "copy")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_ids": self.old_ids,
            "new_ids": self.new_ids,
            "old_rows": self.old_rows,
            "new_rows": self.new_rows,
            "init": self.init,
            "seed": self.seed,
            "tied_output_head": self.tied,
            "tie_evidence": self.tie_evidence,
            "tensors": [
                {
                    "name": t.name,
                    "role": t.role,
                    "param": t.param,
                    "old_shape": self.shapes[t.name][0],
                    "new_shape": self.shapes[t.name][1],
                }
                for t in self.tensors
            ],
            "added_parameters": self.added_parameters,
            "adam_slot_values": self.adam_slot_values,
            "optimizer_slot_values": self.optimizer_slot_values,
            "new_row_sources": {str(k): v for k, v in sorted(self.sources.items())},
        }


def _grown(info: TensorInfo, new_rows: int) -> int:
    width = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
    return (new_rows - info.shape[0]) * width


def _same_bytes(a: TensorInfo, b: TensorInfo) -> bool:
    if (a.dtype, a.shape) != (b.dtype, b.shape):
        return False
    step = 8 << 20
    with open(a.file, "rb") as fa, open(b.file, "rb") as fb:
        for offset in range(0, a.end - a.begin, step):
            size = min(step, a.end - a.begin - offset)
            if os.pread(fa.fileno(), size, a.begin + offset) != os.pread(
                fb.fileno(), size, b.begin + offset
            ):
                return False
    return True


def _tie(
    ckpt: CheckpointTensors, emb: TensorInfo, out: TensorInfo | None, tied: bool | None
) -> tuple[bool, str]:
    declared = ckpt.config.get("tie_word_embeddings")
    if out is None:
        if tied is False or declared is False:
            return False, "no output head tensor (the model has none or keeps it elsewhere)"
        return True, "output head absent from the files: the loader ties it to the embedding"
    if out.file == emb.file and (out.begin, out.end) == (emb.begin, emb.end):
        if tied is False:
            raise ContractError(
                "the output head shares storage with the embedding; it cannot be resized "
                "untied (drop tied=False)"
            )
        return True, "output head and embedding share storage"
    if tied is not None:
        return tied, f"tied={tied} given by the caller"
    if declared is False:
        return False, "config.json says tie_word_embeddings=false"
    if _same_bytes(emb, out):
        return True, "output head bytes equal the embedding's"
    if declared is True:
        raise ContractError(
            "config.json ties the head (tie_word_embeddings=true) but the head differs from "
            "the embedding; pass tied=False to resize them separately, or fix the config"
        )
    return False, "separate output head"


def _rows(ckpt_rows: int, new_ids: int, pad_to_multiple_of: int | None) -> int:
    return pad_rows(max(ckpt_rows, new_ids), pad_to_multiple_of)


def pad_rows(rows: int, pad_to_multiple_of: int | None) -> int:
    """``rows`` rounded up to a multiple of ``pad_to_multiple_of`` (None: unchanged)."""
    if pad_to_multiple_of is not None:
        if (
            isinstance(pad_to_multiple_of, bool)
            or not isinstance(pad_to_multiple_of, int)
            or (pad_to_multiple_of < 1)
        ):
            raise ConfigError(
                f"pad_to_multiple_of must be a positive int, got {pad_to_multiple_of!r}"
            )
        rows = -(-rows // pad_to_multiple_of) * pad_to_multiple_of
    return rows


def plan_resize(
    src_dir: str | os.PathLike[str],
    old_tok: Tokenizer,
    new_tok: Tokenizer,
    *,
    init: str = "fvt",
    seed: int = 0,
    pad_to_multiple_of: int | None = None,
    embedding_name: str | None = None,
    output_name: str | None = None,
    tied: bool | None = None,
) -> ResizePlan:
    """Check that the change is append-only and the checkpoint covers the old tokenizer,
    then list every tensor to resize and where each new row comes from."""
    plan, _ = _build_plan(
        src_dir,
        old_tok,
        new_tok,
        init=init,
        seed=seed,
        pad_to_multiple_of=pad_to_multiple_of,
        embedding_name=embedding_name,
        output_name=output_name,
        tied=tied,
    )
    _finish_plan(plan, old_tok, new_tok)
    return plan


def _finish_plan(plan: ResizePlan, old_tok: Tokenizer, new_tok: Tokenizer) -> None:
    """The Python-heavy parts of a plan: FVT decompositions and both semantic hashes."""
    _plan_sources(plan, old_tok, new_tok)
    _plan_hashes(plan, old_tok, new_tok)


def _plan_sources(plan: ResizePlan, old_tok: Tokenizer, new_tok: Tokenizer) -> None:
    """FVT decompositions of the new IDs (what the new rows need)."""
    plan.sources = decompositions(old_tok, new_tok) if plan.init == "fvt" else {}


def _plan_hashes(plan: ResizePlan, old_tok: Tokenizer, new_tok: Tokenizer) -> None:
    """Both semantic hashes (only config.json needs them, and it is written last)."""
    plan.old_semantic_hash = old_tok.semantic_hash
    plan.new_semantic_hash = new_tok.semantic_hash


def _build_plan(
    src_dir: str | os.PathLike[str],
    old_tok: Tokenizer,
    new_tok: Tokenizer,
    *,
    init: str,
    seed: int,
    pad_to_multiple_of: int | None,
    embedding_name: str | None,
    output_name: str | None,
    tied: bool | None,
) -> tuple[ResizePlan, CheckpointTensors]:
    check_policy(init)
    problems = prefix_problems(old_tok, new_tok)
    if problems:
        raise ContractError(
            "the new tokenizer is not an append-only extension of the old one ("
            + "; ".join(problems[:3])
            + "); resizing keeps rows by ID, so re-train or write an explicit row remap"
        )
    ckpt = load_checkpoint(src_dir)
    emb = find_embedding(ckpt, embedding_name)
    out = find_output(ckpt, output_name)
    is_tied, evidence = _tie(ckpt, emb, out, tied)
    old_ids, new_ids = id_space(old_tok), id_space(new_tok)
    old_rows = emb.shape[0]
    if old_rows < old_ids:
        raise ContractError(
            f"the embedding has {old_rows} rows but the old tokenizer has {old_ids} IDs; this "
            "checkpoint was not trained with the old tokenizer"
        )
    new_rows = _rows(old_rows, new_ids, pad_to_multiple_of)
    params = [VocabTensor(emb.name, "embedding", emb.name, emb)]
    if out is not None and not (out.file == emb.file and out.begin == emb.begin):
        params.append(VocabTensor(out.name, "output", out.name, out))
    bias = find_bias(ckpt, output_name)
    if bias is not None:
        params.append(VocabTensor(bias.name, "bias", bias.name, bias))
    for p in params:
        check_float(p.info)
        if p.info.shape[0] != old_rows:
            raise ContractError(
                f"{p.name!r} has {p.info.shape[0]} rows but the embedding has {old_rows}; "
                "vocabulary tensors must agree before they can be resized together"
            )
    slots = find_slots(ckpt, [p.info for p in params])
    for s in slots:
        check_float(s.info)
    plan = ResizePlan(
        old_ids=old_ids,
        new_ids=new_ids,
        old_rows=old_rows,
        new_rows=new_rows,
        init=init,
        seed=seed,
        tied=is_tied,
        tie_evidence=evidence,
        tensors=[*params, *slots],
        sources={},
    )
    for t in plan.tensors:
        plan.shapes[t.name] = (list(t.info.shape), [new_rows, *t.info.shape[1:]])
    if out is not None and out.name not in plan.shapes:  # shared storage: same new shape
        plan.shapes[out.name] = plan.shapes[emb.name]
    return plan, ckpt


def _new_values(plan: ResizePlan, t: VocabTensor, bias_init: str) -> np.ndarray:
    """Rows for IDs ``old_ids..new_ids-1`` of one parameter, in float."""
    count = plan.new_ids - plan.old_ids
    if t.role == "bias":
        if bias_init == "zero" or count == 0:
            return np.zeros((count, 1), dtype=np.float32)
        return init_rows(
            t.info, old_ids=plan.old_ids, decompositions=[[]] * count, init="mean", seed=0
        )
    return init_new_rows(
        t.info,
        old_ids=plan.old_ids,
        decompositions=[plan.sources.get(i, []) for i in range(plan.old_ids, plan.new_ids)],
        init=plan.init,
        seed=plan.seed,
    )


def _segments(
    plan: ResizePlan, info: TensorInfo, new_bytes: Future[dict[str, bytes]]
) -> list[tuple[Any, ...]]:
    """Old-ID rows copied, new-ID rows computed, old padding kept, new padding zero."""
    width = row_bytes(info)
    segs: list[tuple[Any, ...]] = [copy_segment(info, 0, plan.old_ids)]
    count = max(plan.new_ids - plan.old_ids, 0)
    segs.append(fill_segment(lambda: new_bytes.result()[info.name], count * width))
    if plan.new_ids < plan.old_rows:
        segs.append(copy_segment(info, plan.new_ids, plan.old_rows))
    grow = plan.new_rows - max(plan.old_rows, plan.new_ids)
    if grow > 0:
        segs.append(("bytes", bytes(grow * width)))
    return segs


def resize_checkpoint(
    src_dir: str | os.PathLike[str],
    dst_dir: str | os.PathLike[str],
    old_tok: Tokenizer,
    new_tok: Tokenizer,
    *,
    init: str = "fvt",
    seed: int = 0,
    bias_init: str = "zero",
    pad_to_multiple_of: int | None = None,
    embedding_name: str | None = None,
    output_name: str | None = None,
    tied: bool | None = None,
    progress: bool = False,
    durable: bool = True,
) -> ResizePlan:
    """Write a resized copy of the checkpoint in ``src_dir`` to ``dst_dir`` (which must
    not exist yet) and return the executed plan. See the module docstring.

    ``durable=True`` fsyncs every file before it is renamed into place, so a crash never
    leaves a renamed file whose bytes are not on disk. ``durable=False`` keeps the atomic
    renames but leaves the flush to the kernel, as ``cp`` does (faster on a slow disk;
    run ``sync`` before relying on the files surviving a power loss)."""
    if bias_init not in BIAS_INITS:
        raise ConfigError(f"bias_init must be one of {BIAS_INITS}, not {bias_init!r}")
    dst = Path(dst_dir)
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise ConfigError(f"{dst} already exists; resize into a new directory")
    plan, ckpt = _build_plan(
        src_dir,
        old_tok,
        new_tok,
        init=init,
        seed=seed,
        pad_to_multiple_of=pad_to_multiple_of,
        embedding_name=embedding_name,
        output_name=output_name,
        tied=tied,
    )
    by_name = {t.name: t for t in plan.tensors}

    def compute() -> dict[str, bytes]:
        _plan_sources(plan, old_tok, new_tok)
        return _new_row_bytes(plan, bias_init)

    # The new rows, then the hashes the config binds, are computed in a thread while the
    # kernel copies the old bytes (copy_file_range releases the GIL); a file's new rows
    # are written after the rest of it, so the copy rarely waits for them.
    with staged_dir(dst) as tmp:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(compute)
            hashes = pool.submit(_plan_hashes, plan, old_tok, new_tok)
            sizes = _write_files(plan, ckpt, by_name, future, tmp, progress, durable)
            future.result()
            hashes.result()
        _write_side_files(Path(src_dir), tmp, ckpt, plan, sizes, durable)
    return plan


def _new_row_bytes(plan: ResizePlan, bias_init: str) -> dict[str, bytes]:
    """Encoded bytes of rows ``old_ids..new_ids-1`` of every resized tensor."""
    values: dict[str, np.ndarray] = {}
    emb_name = next(t.name for t in plan.tensors if t.role == "embedding")
    for t in plan.tensors:
        if t.role in ("embedding", "output", "bias"):
            if t.role == "output" and plan.tied:
                continue  # a tied head gets exactly the embedding's new rows
            values[t.name] = _new_values(plan, t, bias_init)
    for t in plan.tensors:
        if t.role == "output" and plan.tied:
            values[t.name] = values[emb_name]
    count = plan.new_ids - plan.old_ids
    new_bytes: dict[str, bytes] = {}
    for t in plan.tensors:
        if t.role == "slot":
            new_bytes[t.name] = bytes(max(count, 0) * row_bytes(t.info))
        elif count <= 0:
            new_bytes[t.name] = b""
        else:
            source = values[t.param if t.role == "copy" else t.name]
            new_bytes[t.name] = encode(source.reshape(count, -1), t.info.dtype)
    return new_bytes


def _write_files(
    plan: ResizePlan,
    ckpt: CheckpointTensors,
    by_name: dict[str, VocabTensor],
    new_bytes: Future[dict[str, bytes]],
    out_dir: Path,
    progress: bool,
    durable: bool,
) -> dict[str, int]:
    files = ckpt.files
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(files), desc="files", unit="file", leave=False)
    sizes: dict[str, int] = {}

    def finish(tmp: Path, final: Path) -> None:
        if durable:
            commit(tmp, final)
        else:
            os.replace(tmp, final)

    def write(path: Path) -> Future[None]:
        tmp, final = _write_one(plan, ckpt, by_name, new_bytes, out_dir, path, sizes, bar, durable)
        return syncer.submit(finish, tmp, final)

    # Shards are written in parallel (one kernel copy per CPU, up to MAX_FILE_WORKERS);
    # each finished shard is fsynced in another thread while the others are written.
    workers = max(1, min(len(files), MAX_FILE_WORKERS, _usable_cpus()))
    with ThreadPoolExecutor(max_workers=1) as syncer:
        writers = ThreadPoolExecutor(max_workers=workers)
        try:
            commits = [job.result() for job in [writers.submit(write, p) for p in files]]
            for job in commits:
                job.result()
        finally:
            writers.shutdown(wait=True, cancel_futures=True)
    if bar is not None:
        bar.close()
    return sizes


def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, so ``taskset`` limits it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _write_one(
    plan: ResizePlan,
    ckpt: CheckpointTensors,
    by_name: dict[str, VocabTensor],
    new_bytes: Future[dict[str, bytes]],
    out_dir: Path,
    path: Path,
    sizes: dict[str, int],
    bar: Any,
    durable: bool,
) -> tuple[Path, Path]:
    """Write one output file unsynced; returns (temp path, final path)."""
    infos = sorted(
        (i for i in ckpt.tensors.values() if i.file == path), key=lambda i: (i.begin, i.name)
    )
    # The header reader refused shared or overlapping storage (as the safetensors
    # library does), so every tensor is its own byte range.
    outs: list[OutTensor] = []
    for info in infos:
        if info.name not in by_name:
            out = OutTensor([info.name], info.dtype, info.shape, [copy_segment(info)])
        else:
            shape = (plan.new_rows, *info.shape[1:])
            out = OutTensor([info.name], info.dtype, shape, _segments(plan, info, new_bytes))
        outs.append(out)
    tmp, sizes[path.name] = write_unsynced(
        out_dir / path.name, outs, ckpt.metadata[path], durable=durable
    )
    if bar is not None:
        bar.update(1)
    return tmp, out_dir / path.name


def _write_side_files(
    src: Path,
    out_dir: Path,
    ckpt: CheckpointTensors,
    plan: ResizePlan,
    sizes: dict[str, int],
    durable: bool,
) -> None:
    config = dict(ckpt.config)
    config["vocab_size"] = plan.new_rows
    # The checkpoint names the tokenizer it now expects (release check binds them).
    config["tokenpact"] = {
        **(config.get("tokenpact") or {}),
        "tokenizer_semantic_hash": plan.new_semantic_hash,
        "migrated_from": plan.old_semantic_hash,
    }
    write_side_files(src, out_dir, ckpt, sizes, config, durable=durable)


def write_side_files(
    src: Path,
    out_dir: Path,
    ckpt: CheckpointTensors,
    sizes: dict[str, int],
    config: dict[str, Any],
    *,
    durable: bool = True,
) -> None:
    """Beside the rewritten safetensors files (``sizes``: bytes per file name): the
    checkpoint's other files copied, the shard index with its new ``total_size``, and
    ``config``."""
    for item in sorted(src.iterdir()):
        if item.suffix == ".safetensors" or item.name in (INDEX_FILE, "config.json"):
            continue
        if item.is_file():
            shutil.copy2(item, out_dir / item.name)
    if ckpt.index is not None:
        index = json.loads(json.dumps(ckpt.index))
        shards = set(index["weight_map"].values())
        index.setdefault("metadata", {})["total_size"] = sum(sizes[s] for s in shards)
        atomic_write_text(out_dir / INDEX_FILE, json.dumps(index, indent=2) + "\n", durable=durable)
    # config.json is always written: it carries vocab_size (and the tokenizer binding).
    atomic_write_text(out_dir / "config.json", json.dumps(config, indent=2) + "\n", durable=durable)
