"""A batch file read into one shape the detectors share.

``.npz`` files hold arrays by name (``input_ids``, ``labels``, ``attention_mask``,
``position_ids``, ``cu_seqlens``, ``lengths``; 0-d string arrays such as
``tokenizer_hash`` are metadata). Parquet files hold one sequence per row in list
columns; schema metadata keys are metadata. A packed buffer (``[T]`` or ``[1, T]`` with
``cu_seqlens``) is one row with segments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import ArtifactError

FIELDS = ("input_ids", "labels", "attention_mask", "position_ids")
MAX_BATCH_ELEMENTS = 1 << 30  # bound what a file can make us allocate


@dataclass
class BatchView:
    """``[B, S]`` arrays; ``valid`` marks slots that exist (parquet rows are ragged)."""

    input_ids: NDArray[np.int64]
    valid: NDArray[np.bool_]
    labels: NDArray[np.int64] | None = None
    attention_mask: NDArray[np.int64] | None = None
    position_ids: NDArray[np.int64] | None = None
    cu_seqlens: list[NDArray[np.int64]] | None = None
    lengths: NDArray[np.int64] | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    # Other arrays of the file (seq_idx, sample_index, ...), by name.
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def packed(self) -> bool:
        return self.cu_seqlens is not None

    @property
    def real(self) -> NDArray[np.bool_]:
        """Slots holding real tokens: valid and not masked out."""
        if self.attention_mask is None:
            return self.valid
        return self.valid & (self.attention_mask != 0)

    def segments(self) -> list[tuple[int, int, int]]:
        """``(row, start, end)`` of every sequence: packed segments, else real spans."""
        out: list[tuple[int, int, int]] = []
        if self.cu_seqlens is not None:
            for row, cu in enumerate(self.cu_seqlens):
                out.extend((row, int(a), int(b)) for a, b in zip(cu[:-1], cu[1:], strict=True))
            return out
        for row in range(self.input_ids.shape[0]):
            where = np.flatnonzero(self.real[row])
            if where.size:
                out.append((row, int(where[0]), int(where[-1]) + 1))
        return out


def _two_d(name: str, value: np.ndarray) -> NDArray[np.int64]:
    if value.ndim == 1:
        value = value[None, :]
    if value.ndim != 2:
        raise ArtifactError(f"{name} has shape {value.shape}; expected [B, S] or [T]")
    if not np.issubdtype(value.dtype, np.integer) and value.dtype != np.bool_:
        raise ArtifactError(f"{name} has dtype {value.dtype}; expected integers")
    return value.astype(np.int64)


def _from_npz(path: Path) -> BatchView:
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path} is not a readable .npz file ({exc})") from None
    with archive:
        arrays = {name: archive[name] for name in archive.files}
    metadata = {k: str(v) for k, v in arrays.items() if v.ndim == 0 and v.dtype.kind in "US"}
    if "input_ids" not in arrays:
        raise ArtifactError(f"{path} has no input_ids array (found {sorted(arrays)})")
    if arrays["input_ids"].size > MAX_BATCH_ELEMENTS:
        raise ArtifactError(f"{path}: input_ids has more than {MAX_BATCH_ELEMENTS} elements")
    ids = _two_d("input_ids", arrays["input_ids"])
    view = BatchView(ids, np.ones(ids.shape, dtype=bool), metadata=metadata)
    for name in FIELDS[1:]:
        if name in arrays:
            value = _two_d(name, arrays[name])
            if value.shape != ids.shape:
                raise ArtifactError(f"{name} has shape {value.shape}, input_ids {ids.shape}")
            setattr(view, name, value)
    if "cu_seqlens" in arrays:
        cu = np.asarray(arrays["cu_seqlens"]).astype(np.int64)
        view.cu_seqlens = [cu.reshape(-1)] if ids.shape[0] == 1 else list(_two_d("cu", cu))
    if "lengths" in arrays:
        view.lengths = np.asarray(arrays["lengths"]).astype(np.int64).reshape(-1)
    known = {*FIELDS, "cu_seqlens", "lengths"}
    view.extras = {k: v for k, v in arrays.items() if k not in known and v.ndim > 0}
    return view


def _from_parquet(path: Path) -> BatchView:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - optional dependency
        raise ArtifactError("reading Parquet batches needs pyarrow: pip install pyarrow") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path} is not a readable Parquet file ({exc})") from None
    columns = table.to_pydict()
    meta = table.schema.metadata or {}
    metadata = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in meta.items()}
    if "input_ids" not in columns:
        raise ArtifactError(f"{path} has no input_ids column (found {sorted(columns)})")
    rows = columns["input_ids"]
    width = max((len(r) for r in rows), default=0)
    if len(rows) * width > MAX_BATCH_ELEMENTS:
        raise ArtifactError(f"{path}: more than {MAX_BATCH_ELEMENTS} token slots")

    def dense(values: list[list[int]]) -> NDArray[np.int64]:
        out = np.zeros((len(values), width), dtype=np.int64)
        for i, row in enumerate(values):
            out[i, : len(row)] = row
        return out

    valid = np.zeros((len(rows), width), dtype=bool)
    for i, row in enumerate(rows):
        valid[i, : len(row)] = True
    view = BatchView(dense(rows), valid, metadata=metadata)
    for name in FIELDS[1:]:
        if name in columns:
            setattr(view, name, dense(columns[name]))
    if "cu_seqlens" in columns:
        view.cu_seqlens = [np.asarray(c, dtype=np.int64) for c in columns["cu_seqlens"]]
    return view


def load_batch(path: Path) -> BatchView:
    if path.suffix == ".npz":
        return _from_npz(path)
    return _from_parquet(path)
