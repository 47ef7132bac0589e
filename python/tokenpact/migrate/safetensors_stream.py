"""Streaming safetensors I/O: read a few rows, copy byte ranges, write a file atomically.

A safetensors file is ``u64 little-endian header length | JSON header | raw bytes``.
We write it ourselves so untouched tensors never enter Python memory: their bytes are
copied file-to-file by the kernel (``copy_file_range``, falling back to ``sendfile`` and
then to bounded chunks). Only the rows we compute are ever materialized. bf16 is handled
as raw ``uint16`` bits (numpy has no bfloat16): widening is a 16-bit shift, narrowing
rounds to nearest-even like PyTorch.

A kernel copy is cheapest when it looks like ``cp``'s: source and destination offsets
equal modulo the page size, and the kernel's 16-page pipe steps (counted from where
each call starts) on 64 KiB boundaries of the destination. Breaking either cost
1.4-1.5x the system time in our measurements (Linux 6.18, ext4: 0.19 s against
0.125 s per 500 MB). So the header is padded with spaces (JSON allows them;
safetensors' own writer pads to 8 bytes the same way) until the largest copied runs
land at their source offsets modulo ``PAGE_ALIGN``, and each copy's first call only
reaches the next ``SPLICE_ALIGN`` boundary. Tensor order and tensor bytes are
unchanged; only the data start moves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.checkpoint_reader import TensorInfo
from ..errors import ArtifactError
from .writeback import Writeback

FLOAT_DTYPES: dict[str, np.dtype[Any]] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "F64": np.dtype("<f8"),
}
CHUNK_BYTES = 8 << 20
WRITEBACK_BYTES = 64 << 20
PAGE_ALIGN = 4096  # copies keep their source offset modulo this (see the module docstring)
SPLICE_ALIGN = 64 << 10  # the kernel copies in 16-page steps from where each call starts
ALIGN_MIN_BYTES = 1 << 20  # below this much copied data, padding the header buys nothing


def row_bytes(info: TensorInfo) -> int:
    width = FLOAT_DTYPES[info.dtype].itemsize
    return width * int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else width


def check_float(info: TensorInfo) -> None:
    if info.dtype not in FLOAT_DTYPES:
        raise ArtifactError(
            f"tensor {info.name!r} has dtype {info.dtype}; vocabulary tensors must be "
            f"F32, F16 or BF16 to be resized (quantized tables need their own migration)"
        )


def decode(raw: bytes | np.ndarray, dtype: str) -> np.ndarray:
    """Raw little-endian bytes of ``dtype`` -> float32 (float64 stays float64)."""
    arr = np.frombuffer(raw, dtype=FLOAT_DTYPES[dtype]) if isinstance(raw, bytes) else raw
    if dtype == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    if dtype == "F64":
        return arr.astype(np.float64)
    return arr.astype(np.float32)


def encode(values: np.ndarray, dtype: str) -> bytes:
    """float array -> raw little-endian bytes of ``dtype`` (bf16: round to nearest even)."""
    if dtype == "BF16":
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16
        # NaN must stay NaN (rounding could carry it into infinity): keep a quiet NaN.
        nan = np.isnan(values.astype(np.float32))
        out = np.where(nan, (bits >> 16) | 0x40, rounded).astype("<u2")
        return out.tobytes()
    return np.ascontiguousarray(values, dtype=FLOAT_DTYPES[dtype]).tobytes()


def read_rows(info: TensorInfo, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a tensor as float32 ``[n, row]``, read with one pread."""
    width = row_bytes(info)
    count = max(0, stop - start)
    with open(info.file, "rb") as handle:
        raw = os.pread(handle.fileno(), count * width, info.begin + start * width)
    if len(raw) != count * width:
        raise ArtifactError(f"{info.file}: tensor {info.name!r} is truncated")
    return decode(raw, info.dtype).reshape(count, -1)


def read_row_set(info: TensorInfo, ids: list[int]) -> np.ndarray:
    """Rows ``ids`` of a tensor as float32 ``[len(ids), row]`` (one open, one pread per
    run of consecutive IDs)."""
    width = row_bytes(info)
    if not ids:
        return np.zeros((0, width // FLOAT_DTYPES[info.dtype].itemsize), dtype=np.float32)
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([i, i + 1])
    parts: list[bytes] = []
    with open(info.file, "rb") as handle:
        for start, stop in runs:
            raw = os.pread(handle.fileno(), (stop - start) * width, info.begin + start * width)
            if len(raw) != (stop - start) * width:
                raise ArtifactError(f"{info.file}: tensor {info.name!r} is truncated")
            parts.append(raw)
    return decode(b"".join(parts), info.dtype).reshape(len(ids), -1)


def iter_row_blocks(info: TensorInfo, stop: int) -> Iterator[np.ndarray]:
    """Rows ``0:stop`` in float blocks of about CHUNK_BYTES (bounded memory)."""
    per = max(1, CHUNK_BYTES // max(1, row_bytes(info)))
    for start in range(0, stop, per):
        yield read_rows(info, start, min(stop, start + per))


def copy_range(
    src: int, dst: int, offset: int, length: int, writeback: Writeback | None = None
) -> None:
    """Append ``length`` bytes of ``src`` from ``offset`` to ``dst`` (kernel-side copy).

    Copies in WRITEBACK_BYTES steps and, with ``writeback``, asks the kernel to start
    writing each step to disk at once, so the final fsync finds little left to flush.
    The first step ends on a SPLICE_ALIGN boundary of ``dst`` (see the module docstring)."""
    remaining = length
    step = WRITEBACK_BYTES if writeback is not None else 1 << 30
    first = -os.lseek(dst, 0, os.SEEK_CUR) % SPLICE_ALIGN
    try:
        while remaining:
            size = min(remaining, first or step)
            first = 0
            done = os.copy_file_range(src, dst, size, offset)
            if done <= 0:
                break
            offset += done
            remaining -= done
            if writeback is not None:
                writeback.written(done)
    except OSError:
        pass
    try:
        while remaining:
            done = os.sendfile(dst, src, offset, min(remaining, step))
            if done <= 0:
                break
            offset += done
            remaining -= done
            if writeback is not None:
                writeback.written(done)
    except OSError:
        pass
    while remaining:
        chunk = os.pread(src, min(remaining, CHUNK_BYTES), offset)
        if not chunk:
            raise ArtifactError("source checkpoint ended early while copying; is it truncated?")
        os.write(dst, chunk)
        offset += len(chunk)
        remaining -= len(chunk)
        if writeback is not None:
            writeback.written(len(chunk))


# A piece of a tensor's output bytes: ("copy", file, offset, length) or ("bytes", data)
# or ("fill", producer returning bytes, length) so large computed parts are made lazily.
Segment = tuple[Any, ...]


@dataclass
class OutTensor:
    """One output storage range; ``names`` > 1 keeps shared storage (a tied head)."""

    names: list[str]
    dtype: str
    shape: tuple[int, ...]
    segments: list[Segment] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        total = 0
        for seg in self.segments:
            total += seg[3] if seg[0] == "copy" else seg[2] if seg[0] == "fill" else len(seg[1])
        return total


def copy_segment(info: TensorInfo, start: int | None = None, stop: int | None = None) -> Segment:
    """Bytes of rows ``start:stop`` (whole tensor by default) copied from the source."""
    if start is None:
        return ("copy", info.file, info.begin, info.end - info.begin)
    width = row_bytes(info)
    return ("copy", info.file, info.begin + start * width, (stop - start) * width)  # type: ignore[operator]


def fill_segment(produce: Callable[[], bytes], length: int) -> Segment:
    return ("fill", produce, length)


def write_safetensors(
    path: Path, tensors: list[OutTensor], metadata: dict[str, str] | None = None
) -> int:
    """Write ``path`` atomically (temp file, fsync, rename); returns the data size."""
    tmp, size = write_unsynced(path, tensors, metadata)
    commit(tmp, path)
    return size


def commit(tmp: Path, path: Path) -> None:
    """fsync a file written by ``write_unsynced`` and rename it into place. Separate so
    a caller can flush one file while it writes the next (fsync releases the GIL)."""
    try:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_all(fd: int, data: bytes, writeback: Writeback | None) -> None:
    view = memoryview(data)
    while view:
        done = os.write(fd, view)
        view = view[done:]
        if writeback is not None:
            writeback.written(done)


def _header_padding(data_start: int, tensors: list[OutTensor]) -> int:
    """Spaces after the header JSON: the data start stays 8-byte aligned (as safetensors
    writes it) and, when that aligns more copied bytes, moves so that the copied runs
    holding the most bytes keep their source offsets modulo PAGE_ALIGN."""
    weight: dict[int, int] = {}
    position = 0  # offset within the data section
    for t in tensors:
        for seg in t.segments:
            length = seg[3] if seg[0] == "copy" else seg[2] if seg[0] == "fill" else len(seg[1])
            if seg[0] == "copy":
                phase = (seg[2] - position) % PAGE_ALIGN  # data start that aligns this run
                weight[phase] = weight.get(phase, 0) + length
            position += length
    plain = -data_start % 8
    # A phase that is not a multiple of 8 would break the 8-byte data alignment.
    usable = {phase: n for phase, n in weight.items() if phase % 8 == 0}
    if not usable or sum(usable.values()) < ALIGN_MIN_BYTES:
        return plain
    best = max(usable, key=lambda phase: (usable[phase], -phase))
    return (best - data_start) % PAGE_ALIGN


def write_unsynced(
    path: Path,
    tensors: list[OutTensor],
    metadata: dict[str, str] | None = None,
    *,
    durable: bool = True,
) -> tuple[Path, int]:
    """Write the file to a temp name beside ``path``; returns (temp path, data size).

    ``durable``: the caller will fsync it (``commit``), so disk writes start early."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for t in tensors:
        end = offset + t.nbytes
        if len(t.names) > 1 and end > offset:
            # The safetensors library refuses aliased storage (see safetensors_header).
            raise ArtifactError(f"internal: tensors {t.names} cannot share storage")
        for name in t.names:
            header[name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, end]}
        offset = end
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * _header_padding(8 + len(raw), tensors)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sources: dict[Path, int] = {}
    # The file is fsynced before its rename (commit); starting the disk writes while
    # later bytes are still being copied overlaps them with the copy instead.
    writeback = Writeback(fd) if durable else None
    try:
        head = len(raw).to_bytes(8, "little") + raw
        os.write(fd, head)
        if writeback is not None:
            writeback.written(len(head))
        # Computed parts ("fill") are written last, into the gaps left for them: their
        # producer may still be running in another thread (the new rows of a resize),
        # and the kernel can copy every other byte meanwhile. Same bytes, same offsets.
        deferred: list[tuple[int, Segment]] = []
        for t in tensors:
            for seg in t.segments:
                if seg[0] == "copy":
                    if seg[1] not in sources:
                        sources[seg[1]] = os.open(seg[1], os.O_RDONLY)
                    copy_range(sources[seg[1]], fd, seg[2], seg[3], writeback)
                elif seg[0] == "fill":
                    deferred.append((os.lseek(fd, 0, os.SEEK_CUR), seg))
                    os.lseek(fd, seg[2], os.SEEK_CUR)
                    if writeback is not None:
                        writeback.written(seg[2])
                else:
                    _write_all(fd, seg[1], writeback)
        for position, seg in deferred:
            data = seg[1]()
            if len(data) != seg[2]:
                raise ArtifactError("internal: computed rows have the wrong size")
            os.lseek(fd, position, os.SEEK_SET)
            _write_all(fd, data, None)  # the final fsync flushes these
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    finally:
        for src in sources.values():
            os.close(src)
    os.close(fd)
    return tmp, offset
