"""Shard file formats: Parquet and Megatron-LM ``.bin``/``.idx``, as bytes in and out.

The writers (:mod:`tokenpact.data.shard_writer`) stream a shard's IDs into these
files chunk by chunk; the readers here check every count and size. The same input
always gives the same bytes.

Megatron's ``.idx`` (``IndexedDatasetBuilder.finalize``): the magic ``MMIDIDX\\0\\0``,
``<Q`` version 1, ``<B`` dtype code (uint16 = 8, int32 = 4), ``<Q`` sequence count,
``<Q`` document count (sequences + 1), then int32 sizes, int64 byte pointers and int64
document indices ``[0, 1, ..., n]`` (one sequence per document). ``.bin`` is the IDs
back to back in that dtype.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ContractError

MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_VERSION = 1
MEGATRON_CODES: dict[np.dtype[Any], int] = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
_MEGATRON_DTYPES: dict[int, np.dtype[Any]] = {code: dt for dt, code in MEGATRON_CODES.items()}
_HEADER = struct.Struct("<9sQBQQ")
PARQUET_COLUMNS = ("doc_id", "input_ids", "length", "truncated")


MEGATRON_UINT16_BELOW = 65_500


def token_dtype(vocab_size: int, fmt: str) -> np.dtype[Any]:
    """Parquet: uint16 when every ID fits (``vocab_size <= 65536``), else uint32.
    Megatron: its own rule (``DType.optimal_dtype``: uint16 below 65,500 IDs, else
    int32; its dtype codes have no uint32), so shards match what its preprocessing
    writes for the same vocabulary."""
    if fmt == "megatron":
        return np.dtype(np.uint16 if vocab_size < MEGATRON_UINT16_BELOW else np.int32)
    if vocab_size <= 1 << 16:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32)


@dataclass(frozen=True, eq=False)
class ShardData:
    """One shard in memory: IDs end to end, ``offsets`` ``[n + 1]``, per-record flags."""

    doc_ids: list[str]
    ids: NDArray[Any]
    offsets: NDArray[np.int64]
    truncated: NDArray[np.bool_]

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.offsets)


# ---------------------------------------------------------------- Parquet
PARQUET_COMPRESSIONS = ("none", "snappy", "zstd", "lz4", "gzip")


def read_parquet_shard(data: bytes, dtype: np.dtype[Any]) -> ShardData:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # pyarrow raises ArrowInvalid and friends
        raise ContractError(f"shard is not a readable Parquet file: {exc}") from None
    if tuple(table.column_names) != PARQUET_COLUMNS:
        raise ContractError(f"shard columns are {table.column_names}, expected {PARQUET_COLUMNS}")
    lists = table.column("input_ids").combine_chunks()
    ids = lists.flatten().to_numpy(zero_copy_only=False)
    if ids.dtype != dtype:
        raise ContractError(f"shard IDs are {ids.dtype}, the manifest says {dtype}")
    offsets = lists.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    lengths = table.column("length").to_numpy()
    if not np.array_equal(np.diff(offsets), lengths):
        raise ContractError("shard lengths disagree with its ID lists")
    return ShardData(
        doc_ids=table.column("doc_id").to_pylist(),
        ids=ids,
        offsets=offsets,
        truncated=table.column("truncated").to_numpy(zero_copy_only=False).astype(bool),
    )


# ---------------------------------------------------------------- Megatron
def megatron_index_bytes(lengths: NDArray[np.int64], dtype: np.dtype[Any]) -> bytes:
    """The ``.idx`` for one sequence per document of ``lengths`` IDs each, byte-compatible
    with ``IndexedDatasetBuilder.finalize`` (the ``.bin`` is the IDs back to back)."""
    dtype = np.dtype(dtype)
    code = MEGATRON_CODES.get(dtype)
    if code is None:
        raise ContractError(f"Megatron shards store uint16 or int32 IDs, not {dtype}")
    n = int(lengths.shape[0])
    pointers = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    header = _HEADER.pack(MEGATRON_MAGIC, MEGATRON_VERSION, code, n, n + 1)
    return b"".join(
        (
            header,
            lengths.astype("<i4").tobytes(),
            pointers.astype("<i8").tobytes(),
            np.arange(n + 1, dtype="<i8").tobytes(),
        )
    )


def read_megatron_index(idx: bytes) -> tuple[np.dtype[Any], NDArray[np.int32], NDArray[np.int64]]:
    """``(dtype, sizes, pointers)`` of an ``.idx``; every count is checked against its size."""
    if len(idx) < _HEADER.size:
        raise ContractError("the .idx file is shorter than its header")
    magic, version, code, n_seq, n_doc = _HEADER.unpack_from(idx)
    if magic != MEGATRON_MAGIC or version != MEGATRON_VERSION:
        raise ContractError("not a Megatron .idx file (bad magic or version)")
    dtype = _MEGATRON_DTYPES.get(code)
    if dtype is None:
        raise ContractError(f"unsupported Megatron dtype code {code}")
    expected = _HEADER.size + n_seq * 12 + n_doc * 8
    if len(idx) not in (expected, expected + n_seq):  # + int8 modes when multimodal
        raise ContractError(
            f".idx size {len(idx)} does not match {n_seq} sequences and {n_doc} documents"
        )
    if n_doc != n_seq + 1:
        raise ContractError(f".idx lists {n_doc} documents for {n_seq} sequences, not one each")
    at = _HEADER.size
    sizes = np.frombuffer(idx, dtype="<i4", count=n_seq, offset=at)
    pointers = np.frombuffer(idx, dtype="<i8", count=n_seq, offset=at + 4 * n_seq)
    docs = np.frombuffer(idx, dtype="<i8", count=n_doc, offset=at + 12 * n_seq)
    if n_seq and (int(sizes.min()) < 0 or int(pointers.min()) < 0):
        raise ContractError(".idx holds a negative size or pointer; not a shard we wrote")
    if not np.array_equal(docs, np.arange(n_doc, dtype=np.int64)):
        raise ContractError(".idx document indices are not one sequence per document")
    return dtype, sizes, pointers


def read_megatron_shard(
    bin_data: bytes, idx: bytes, doc_ids: list[str], truncated: list[bool]
) -> ShardData:
    dtype, sizes, pointers = read_megatron_index(idx)
    if len(doc_ids) != sizes.shape[0] or len(truncated) != sizes.shape[0]:
        raise ContractError("the shard's document list and its .idx disagree on the count")
    offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if not np.array_equal(pointers, offsets[:-1] * dtype.itemsize):
        raise ContractError("the .idx pointers are not contiguous; the shard was not written by us")
    if len(bin_data) != int(offsets[-1]) * dtype.itemsize:
        raise ContractError(".bin size does not match the .idx sizes")
    ids = np.frombuffer(bin_data, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False)
    return ShardData(doc_ids, ids, offsets, np.asarray(truncated, dtype=bool))
