"""A batch file read into one shape the detectors share.

``.npz`` files hold arrays by name (``input_ids``, ``labels``, ``attention_mask``,
``position_ids``, ``cu_seqlens``, ``lengths``; 0-d string arrays such as
``tokenizer_hash`` are metadata). Parquet files hold one sequence per row in list
columns; schema metadata keys are metadata. A packed buffer (``[T]`` or ``[1, T]`` with
``cu_seqlens``) is one row with segments.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ArtifactError

FIELDS = ("input_ids", "labels", "attention_mask", "position_ids")
MAX_BATCH_ELEMENTS = 1 << 30  # bound what a file can make us allocate
# Bound what an archive can make us inflate, checked on the zip headers and each .npy
# header before a byte is decompressed (a 0.5 MB zip bomb declares gigabytes).
MAX_NPZ_BYTES = 1 << 31  # .npz members and Parquet row groups alike
_INT64_MAX = np.iinfo(np.int64).max
# Errors reading a damaged archive raises (zipfile, zlib, numpy's .npy reader).
_ARCHIVE_ERRORS = (
    OSError,
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
)


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


def _as_int64(name: str, value: np.ndarray) -> NDArray[np.int64]:
    """Integers as int64; a uint64 above int64's range saturates (it is out of every
    vocabulary, and the range detectors report it) instead of wrapping to negative.
    Token IDs, labels and positions must be integers: a float, string or bool array
    is an error (``attention_mask`` may be bool)."""
    if value.dtype == np.bool_ and name in ("attention_mask", "cu"):
        return value.astype(np.int64)
    if not np.issubdtype(value.dtype, np.integer):
        raise ArtifactError(f"{name} has dtype {value.dtype}; expected integers")
    if value.dtype == np.uint64:
        return np.minimum(value, np.uint64(_INT64_MAX)).astype(np.int64)
    return value.astype(np.int64)


def _two_d(name: str, value: np.ndarray) -> NDArray[np.int64]:
    if value.ndim == 1:
        value = value[None, :]
    if value.ndim != 2:
        raise ArtifactError(f"{name} has shape {value.shape}; expected [B, S] or [T]")
    return _as_int64(name, value)


def _check_npz_sizes(path: Path) -> None:
    """Refuse an archive whose members would inflate past :data:`MAX_NPZ_BYTES`, by the
    zip headers' sizes and each ``.npy`` header's shape (numpy allocates the whole array
    from the header before it reads the data)."""
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        total = sum(m.file_size for m in members)
        if total > MAX_NPZ_BYTES:
            raise ArtifactError(
                f"{path} would inflate to {total} bytes (more than {MAX_NPZ_BYTES}); not "
                "a batch file the doctor reads"
            )
        for member in members:
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
                else:
                    raise ArtifactError(f"{path}: {member.filename} has .npy version {version}")
            need = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if need > member.file_size:
                raise ArtifactError(
                    f"{path}: {member.filename} declares {need} bytes of array data in "
                    f"{member.file_size}; the archive is damaged"
                )


def _from_npz(path: Path) -> BatchView:
    try:
        _check_npz_sizes(path)
        archive = np.load(path, allow_pickle=False)
        with archive:
            arrays = {name: archive[name] for name in archive.files}
    except ArtifactError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise ArtifactError(f"{path} is not a readable .npz file ({exc})") from None
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
        cu = _as_int64("cu_seqlens", np.asarray(arrays["cu_seqlens"]))
        view.cu_seqlens = [cu.reshape(-1)] if ids.shape[0] == 1 else list(_two_d("cu", cu))
    if "lengths" in arrays:
        view.lengths = _as_int64("lengths", np.asarray(arrays["lengths"])).reshape(-1)
    known = {*FIELDS, "cu_seqlens", "lengths"}
    view.extras = {k: v for k, v in arrays.items() if k not in known and v.ndim > 0}
    return view


def _list_column(path: Path, table: Any, name: str) -> tuple[NDArray[np.int64], Any]:
    """A list-of-integers column as its flat int64 values and per-row lists offsets."""
    import pyarrow as pa

    column = table.column(name).combine_chunks()
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        raise ArtifactError(f"{path}: column {name} is {column.type}, expected lists of integers")
    values = column.flatten()
    if not pa.types.is_integer(values.type) and not (
        name == "attention_mask" and pa.types.is_boolean(values.type)
    ):
        raise ArtifactError(f"{path}: column {name} holds {values.type}; expected integers")
    if column.null_count or values.null_count:
        raise ArtifactError(f"{path}: column {name} has null entries")
    flat = _as_int64(name, values.to_numpy(zero_copy_only=False))
    offsets = column.offsets.to_numpy().astype(np.int64)
    return flat, offsets - offsets[0]


def _from_parquet(path: Path) -> BatchView:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - optional dependency
        raise ArtifactError("reading Parquet batches needs pyarrow: pip install pyarrow") from None
    try:
        info = pq.ParquetFile(path).metadata
        inflated = sum(info.row_group(g).total_byte_size for g in range(info.num_row_groups))
        if inflated > MAX_NPZ_BYTES:
            raise ArtifactError(
                f"{path} would decode to {inflated} bytes (more than {MAX_NPZ_BYTES}); not "
                "a batch file the doctor reads"
            )
        table = pq.read_table(path)
        if "input_ids" not in table.column_names:
            raise ArtifactError(
                f"{path} has no input_ids column (found {sorted(table.column_names)})"
            )
        meta = table.schema.metadata or {}
        metadata = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in meta.items()}
        lists = {
            name: _list_column(path, table, name)
            for name in (*FIELDS, "cu_seqlens")
            if name in table.column_names
        }
    except ArtifactError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid and friends
        raise ArtifactError(f"{path} is not a readable Parquet batch ({exc})") from None
    flat, offsets = lists["input_ids"]
    sizes = np.diff(offsets)
    width = int(sizes.max()) if sizes.size else 0
    if sizes.shape[0] * width > MAX_BATCH_ELEMENTS:
        raise ArtifactError(f"{path}: more than {MAX_BATCH_ELEMENTS} token slots")
    valid = np.arange(width)[None, :] < sizes[:, None]

    def dense(name: str) -> NDArray[np.int64]:
        values, where = lists[name]
        if not np.array_equal(np.diff(where), sizes):
            raise ArtifactError(f"{path}: {name} rows differ in length from input_ids rows")
        out = np.zeros((sizes.shape[0], width), dtype=np.int64)
        out[valid] = values
        return out

    view = BatchView(dense("input_ids"), valid, metadata=metadata)
    for name in FIELDS[1:]:
        if name in lists:
            setattr(view, name, dense(name))
    if "cu_seqlens" in lists:
        values, where = lists["cu_seqlens"]
        view.cu_seqlens = [values[a:b] for a, b in zip(where[:-1], where[1:], strict=True)]
    return view


def load_batch(path: Path) -> BatchView:
    if path.suffix == ".npz":
        return _from_npz(path)
    return _from_parquet(path)
