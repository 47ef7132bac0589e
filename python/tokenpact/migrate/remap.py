"""Migration beyond append-only: remapping existing IDs, vocabulary-axis shards, sharded
and factorized optimizer state.

When a replacement tokenizer gives a surviving piece a different ID, every tensor keyed
by the vocabulary must move that piece's row *exactly* (no re-initialization, no
rounding): the input embedding, an untied output head, the output bias, each optimizer
slot and master copy, and the row factor of a factorized (Adafactor-like) second
moment. Rows of pieces the old vocabulary lacks are initialized; rows of dropped pieces
disappear.

* :func:`id_remap` maps each new ID to the old ID of the same piece (bytes of a model
  piece, spelling of a special or added token), or to None.
* :meth:`IdRemap.apply` is the in-memory reference (numpy): ``out[new] = old[remap[new]]``.
* :func:`remap_checkpoint` rewrites a safetensors checkpoint directory with byte-exact
  row copies (runs of consecutive rows are copied file-to-file).
* :func:`vocab_shards` / :func:`shard_moves`: which tensor-parallel rank owns which rows
  before and after (Megatron-style contiguous row blocks), and which rows cross ranks.
* :func:`reshard_flat_state`: ZeRO / FSDP flat state (one 1-D buffer split in equal
  padded partitions across ranks): unflatten, remap the vocabulary parameter's rows,
  re-flatten and re-partition.

Example::

    remap = tp.migrate.id_remap(old_tok, new_tok)
    tp.migrate.remap_checkpoint("ckpt", "ckpt-new", old_tok, new_tok)
    tp.migrate.shard_moves(remap, old_rows=268, new_rows=272, tp=4)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.checkpoint_reader import TensorInfo
from ..core import Tokenizer
from ..errors import ArtifactError, ConfigError, ContractError
from .decompose import id_space
from .files import staged_dir
from .resize import pad_rows, write_side_files
from .row_init import mean_row
from .safetensors_stream import (
    OutTensor,
    check_float,
    copy_segment,
    encode,
    fill_segment,
    write_safetensors,
)
from .vocab_tensors import (
    find_bias,
    find_embedding,
    find_output,
    find_slots,
    load_checkpoint,
)

REMAP_INITS = ("mean", "zero")
# Second-moment row factors of a factorized optimizer (Adafactor: v ~ outer(row, col)).
FACTOR_ROW_SUFFIXES = ("exp_avg_sq_row", "v_row", "factored_row")


def _keys(tok: Tokenizer) -> list[tuple[str, Any] | None]:
    """Each ID's identity: a model piece by its bytes, a special or added token by its
    spelling (a control and a piece with the same bytes are different tokens)."""
    keys: list[tuple[str, Any] | None] = [("piece", p) for p in tok.vocab()]
    keys += [None] * (id_space(tok) - len(keys))
    for content, i in tok.special_tokens.items():
        keys[i] = ("special", content)
    for content, i in tok.added_tokens.items():
        keys[i] = ("added", content)
    return keys


@dataclass(frozen=True)
class IdRemap:
    """``sources[new_id]``: the old ID whose row the new ID takes, or None (a new piece)."""

    sources: tuple[int | None, ...]
    old_ids: int

    @property
    def new_ids(self) -> int:
        return len(self.sources)

    @property
    def unmapped(self) -> list[int]:
        """New IDs without an old row (initialized)."""
        return [i for i, s in enumerate(self.sources) if s is None]

    @property
    def dropped(self) -> list[int]:
        """Old IDs no new ID takes (their rows are dropped)."""
        kept = {s for s in self.sources if s is not None}
        return [i for i in range(self.old_ids) if i not in kept]

    @property
    def is_identity_prefix(self) -> bool:
        """True for an append-only change: every old ID keeps its number."""
        return all(self.sources[i] == i for i in range(min(self.old_ids, self.new_ids)))

    def rows(self, new_rows: int) -> list[int | None]:
        """Sources of ``new_rows`` rows (padding rows past the IDs have none)."""
        if new_rows < self.new_ids:
            raise ConfigError(f"{new_rows} rows cannot hold the {self.new_ids} new IDs")
        return [*self.sources, *([None] * (new_rows - self.new_ids))]

    def apply(
        self, old: np.ndarray, *, new_rows: int | None = None, fill: np.ndarray | float = 0.0
    ) -> np.ndarray:
        """The reference remap of a tensor whose first axis is the vocabulary:
        ``out[new] = old[sources[new]]``, ``fill`` in rows without a source."""
        if old.shape[0] < self.old_ids:
            raise ConfigError(f"the tensor has {old.shape[0]} rows, fewer than {self.old_ids} IDs")
        rows = self.rows(new_rows if new_rows is not None else self.new_ids)
        out = np.empty((len(rows), *old.shape[1:]), dtype=old.dtype)
        out[...] = fill
        mapped = [(n, s) for n, s in enumerate(rows) if s is not None]
        if mapped:
            new_idx, old_idx = zip(*mapped, strict=True)
            out[list(new_idx)] = old[list(old_idx)]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_ids": self.old_ids,
            "new_ids": self.new_ids,
            "moved": sum(1 for n, s in enumerate(self.sources) if s is not None and s != n),
            "unmapped": self.unmapped,
            "dropped": self.dropped,
            "identity_prefix": self.is_identity_prefix,
        }


def id_remap(old: Tokenizer, new: Tokenizer) -> IdRemap:
    """Map every new ID to the old ID of the same token (None for a new token)."""
    old_index: dict[tuple[str, Any], int] = {}
    for i, key in enumerate(_keys(old)):
        if key is not None:
            old_index.setdefault(key, i)
    sources = tuple(None if k is None else old_index.get(k) for k in _keys(new))
    return IdRemap(sources, id_space(old))


def vocab_shards(rows: int, tp: int) -> list[tuple[int, int]]:
    """Row range ``[start, stop)`` each of ``tp`` tensor-parallel ranks owns: contiguous
    equal blocks (Megatron's vocab-parallel embedding; rows are padded to a multiple of
    ``tp`` first, so the table must already be)."""
    if tp < 1:
        raise ConfigError(f"tp must be >= 1, got {tp}")
    if rows % tp:
        raise ConfigError(
            f"{rows} rows do not split evenly over tp={tp}; pad the table to a multiple of "
            f"{tp} (pad_to_multiple_of)"
        )
    per = rows // tp
    return [(r * per, (r + 1) * per) for r in range(tp)]


def shard_moves(remap: IdRemap | None, *, old_rows: int, new_rows: int, tp: int) -> dict:
    """Per new rank: its row range, how many rows it receives from each old rank, how many
    it initializes, and how many rows change rank overall. ``remap=None`` is append-only
    (row ``i`` stays row ``i``)."""
    old_shards, new_shards = vocab_shards(old_rows, tp), vocab_shards(new_rows, tp)
    old_per = old_rows // tp
    if remap is None:
        sources: list[int | None] = [i if i < old_rows else None for i in range(new_rows)]
    else:
        sources = remap.rows(new_rows)
    ranks = []
    crossing = 0
    for rank, (start, stop) in enumerate(new_shards):
        received = [0] * tp
        initialized = 0
        for row in range(start, stop):
            src = sources[row]
            if src is None or src >= old_rows:
                initialized += 1
                continue
            owner = src // old_per
            received[owner] += 1
            crossing += owner != rank
        ranks.append(
            {
                "rank": rank,
                "old_rows": list(old_shards[rank]),
                "new_rows": [start, stop],
                "received_from": received,
                "initialized": initialized,
            }
        )
    return {"tp": tp, "old_rows": old_rows, "new_rows": new_rows, "ranks": ranks,
            "rows_crossing_ranks": crossing}  # fmt: skip


def reshard_flat_state(
    shards: Sequence[np.ndarray],
    layout: Sequence[tuple[str, tuple[int, ...]]],
    param: str,
    remap: IdRemap,
    *,
    new_rows: int | None = None,
    fill: float = 0.0,
) -> tuple[list[np.ndarray], list[tuple[str, tuple[int, ...]]]]:
    """ZeRO / FSDP flat state remapped: ``shards`` are the ranks' equal partitions of one
    1-D buffer holding the ``layout`` tensors in order (zero-padded at the end); the
    vocabulary parameter ``param``'s rows move by ``remap`` and the buffer is
    re-partitioned over as many ranks. Returns the new shards and layout."""
    world = len(shards)
    if world < 1:
        raise ConfigError("give at least one shard")
    if len({s.shape[0] for s in shards}) != 1 or any(s.ndim != 1 for s in shards):
        raise ContractError("flat state shards must be 1-D and of equal size (ZeRO padding)")
    flat = np.concatenate(list(shards))
    total = sum(math.prod(shape) for _, shape in layout)
    if total > flat.size:
        raise ContractError(f"the layout needs {total} values but the shards hold {flat.size}")
    if param not in [name for name, _ in layout]:
        raise ConfigError(f"{param!r} is not in the flat layout")
    pieces: list[np.ndarray] = []
    new_layout: list[tuple[str, tuple[int, ...]]] = []
    offset = 0
    for name, shape in layout:
        size = math.prod(shape)
        tensor = flat[offset : offset + size].reshape(shape)
        offset += size
        if name == param:
            tensor = remap.apply(tensor, new_rows=new_rows, fill=fill)
        pieces.append(tensor.reshape(-1))
        new_layout.append((name, tuple(tensor.shape)))
    body = np.concatenate(pieces)
    per = -(-body.size // world)
    padded = np.zeros(per * world, dtype=flat.dtype)
    padded[: body.size] = body
    return [padded[r * per : (r + 1) * per].copy() for r in range(world)], new_layout


# --------------------------------------------------------------------------- checkpoints


def _runs(sources: list[int | None]) -> list[tuple[int, int, int | None]]:
    """``(new_start, length, old_start)`` runs: consecutive rows from consecutive sources
    (old_start None: a run of rows to initialize)."""
    runs: list[tuple[int, int, int | None]] = []
    for n, s in enumerate(sources):
        if runs:
            start, length, old = runs[-1]
            contiguous = (old is None and s is None) or (
                old is not None and s is not None and s == old + length
            )
            if contiguous and start + length == n:
                runs[-1] = (start, length + 1, old)
                continue
        runs.append((n, 1, s))
    return runs


def _factor_rows(tensors: dict[str, TensorInfo], params: list[TensorInfo], rows: int) -> dict:
    """1-D row factors of a factorized second moment of ``params`` (``<param>.<suffix>``
    or ``<suffix>.<param>``) with one value per vocabulary row."""
    found = {}
    for name, info in tensors.items():
        if len(info.shape) != 1 or info.shape[0] != rows:
            continue
        for p in params:
            if any(name in (f"{p.name}.{s}", f"{s}.{p.name}") for s in FACTOR_ROW_SUFFIXES):
                found[name] = p.name
    return found


def remap_checkpoint(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    old_tok: Tokenizer,
    new_tok: Tokenizer,
    *,
    init: str = "mean",
    pad_to_multiple_of: int | None = None,
    embedding_name: str | None = None,
    output_name: str | None = None,
) -> dict[str, Any]:
    """Rewrite checkpoint ``src`` for ``new_tok`` into the new directory ``dst``.

    Every vocabulary tensor (embedding, untied head, bias, optimizer slots and master
    copies, factorized row factors) takes row ``remap[new]`` of the old tensor, byte for
    byte. New pieces' rows: parameters and master copies get the old rows' ``mean``
    (or ``zero``), the bias zero, moment slots zero, row factors the old factors' mean
    (a zero second moment would make the first update divide by ~0). Other tensors and
    files are copied; ``config.json`` gets the new ``vocab_size``. The directory is
    written beside ``dst`` and renamed into place. Returns a report (the remap summary,
    tensors and shapes).
    """
    if init not in REMAP_INITS:
        raise ConfigError(f"unknown init {init!r}; use one of {REMAP_INITS}")
    source, target = Path(src), Path(dst)
    if target.exists():
        raise ArtifactError(f"{target} exists; pass a new directory")
    ckpt = load_checkpoint(source)
    remap = id_remap(old_tok, new_tok)
    emb = find_embedding(ckpt, embedding_name)
    old_rows = emb.shape[0]
    if old_rows < remap.old_ids:
        raise ContractError(
            f"{emb.name!r} has {old_rows} rows but the old tokenizer uses {remap.old_ids} IDs; "
            "this checkpoint does not belong to the old tokenizer"
        )
    new_rows = pad_rows(remap.new_ids, pad_to_multiple_of)
    sources = remap.rows(new_rows)
    params = [emb]
    out = find_output(ckpt, output_name)
    if out is not None and out.name != emb.name:
        params.append(out)
    roles: dict[str, tuple[str, str]] = {p.name: ("param", p.name) for p in params}
    bias = find_bias(ckpt, output_name)
    if bias is not None and bias.shape[0] == old_rows:
        roles[bias.name] = ("bias", bias.name)
    for t in find_slots(ckpt, params):
        roles[t.name] = ("slot" if t.role == "slot" else "param", t.param)
    for name, param in _factor_rows(ckpt.tensors, params, old_rows).items():
        roles[name] = ("factor", param)
    for name in roles:
        info = ckpt.tensors[name]
        check_float(info)
        if info.shape[0] != old_rows:
            raise ContractError(f"{name!r} has {info.shape[0]} rows, not {old_rows}")
    shapes: dict[str, tuple[list[int], list[int]]] = {}
    sizes: dict[str, int] = {}
    with staged_dir(target) as tmp:
        for path in ckpt.files:
            tensors = sorted(
                (i for i in ckpt.tensors.values() if Path(i.file) == path), key=lambda i: i.begin
            )
            outs = []
            for info in tensors:
                if info.name not in roles:
                    outs.append(
                        OutTensor([info.name], info.dtype, tuple(info.shape), [copy_segment(info)])
                    )
                    continue
                role = roles[info.name][0]
                new_shape = (new_rows, *info.shape[1:])
                shapes[info.name] = (list(info.shape), list(new_shape))
                fill = _fill_row(info, role, init, old_rows)
                segments = []
                for _start, length, old in _runs(sources):
                    if old is not None and old < old_rows:
                        segments.append(copy_segment(info, old, old + length))
                    else:
                        data = encode(np.tile(fill, (length, 1)), info.dtype)
                        segments.append(fill_segment(_constant(data), len(data)))
                outs.append(OutTensor([info.name], info.dtype, new_shape, segments))
            sizes[path.name] = write_safetensors(tmp / path.name, outs, ckpt.metadata.get(path))
        write_side_files(source, tmp, ckpt, sizes, {**ckpt.config, "vocab_size": new_rows})
    return {
        "remap": remap.to_dict(),
        "old_rows": old_rows,
        "new_rows": new_rows,
        "init": init,
        "tensors": {
            name: {"role": roles[name][0], "param": roles[name][1]} for name in sorted(roles)
        },
        "shapes": shapes,
    }


def _constant(data: bytes) -> Callable[[], bytes]:
    return lambda: data


def _fill_row(info: TensorInfo, role: str, init: str, rows: int) -> np.ndarray:
    width = math.prod(info.shape[1:])
    if role == "factor" or (role == "param" and init == "mean"):
        return mean_row(info, rows).astype(np.float32).reshape(1, width)
    return np.zeros((1, width), dtype=np.float32)
