"""Writing one shard chunk by chunk, so files are written while later text is encoded.

A shard's documents are encoded in chunks of about :data:`CHUNK_CHARS` characters
(:func:`chunk_bounds`, a function of the shard's texts only, so every engine and worker
count cuts the same chunks). :class:`ShardWriter` appends each
:class:`EncodedChunk` to the shard's files under temporary names: a Parquet row group
per chunk, or the chunk's IDs appended to Megatron's ``.bin`` (with the SHA-256 updated
as the bytes go out); :meth:`ShardWriter.finish` writes the small files (``.idx``,
``.docs.tsv``), digests, and moves everything into place with ``os.replace``.

Uncompressed Parquet shards (the default) are written by the native writer
(``tokenpact._native.ParquetShardWriter``, Rust, the GIL released), which hashes the file
as it writes it, like the ``.bin``, and dictionary-encodes the token column per row group
(bit-packed indices, ~1.9 bytes per token for a 16k vocabulary; PLAIN INT32 where that
does not pay; docs/DATA.md has the rule); a compressed shard (``compression="zstd"`` ...)
goes through pyarrow's ``ParquetWriter`` (PLAIN pages) and is hashed after closing. Both
write the same schema, so pyarrow reads either back as the same Arrow table.

The writer runs on its own thread in :func:`tokenpact.data.encode_dataset`: the native
and pyarrow writers, file writes and hashing release the GIL, so they overlap the
(GIL-free) encoder.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..errors import ContractError
from .shard_formats import MEGATRON_CODES, megatron_index_bytes

CHUNK_CHARS = 1 << 22
"""Characters of text per encoded chunk (one Parquet row group): about 1 M tokens,
enough that a batch call keeps every core busy (2 Mi cost ~5% more encoder CPU on
bench-mixed), small enough that writing overlaps encoding."""


@dataclass(frozen=True, eq=False)
class EncodedChunk:
    """Consecutive documents of a shard: IDs end to end in the dataset's dtype,
    ``offsets`` ``[n + 1]`` from 0, which documents were truncated, and the largest ID
    (None when there is none; computed here unless the encoder, which checks it against
    the dtype before narrowing, passes it)."""

    ids: NDArray[Any]
    offsets: NDArray[np.int64]
    truncated: NDArray[np.bool_]
    max_id: int | None = None
    # The SHA-256 of each document's UTF-8 ((n, 32) uint8) and its UTF-8 size, when the
    # encoder made them (for the corpus manifest; the shard writers ignore them).
    text_digests: NDArray[np.uint8] | None = None
    text_sizes: NDArray[np.int64] | None = None

    def __post_init__(self) -> None:
        if self.max_id is None and self.ids.size:
            object.__setattr__(self, "max_id", int(self.ids.max()))

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1


@dataclass(frozen=True, eq=False)
class ShardSummary:
    """A finished shard: its files (name -> ``sha256:`` digest) and per-record facts."""

    files: dict[str, str]
    doc_ids: list[str]
    lengths: NDArray[np.int64]
    truncated: int
    max_token_id: int | None


def chunk_bounds(texts: Sequence[str], chunk_chars: int = CHUNK_CHARS) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``texts``: each chunk is the shortest run of
    documents with at least ``chunk_chars`` characters (the last one may be shorter)."""
    n = len(texts)
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n))
    bounds = []
    a = 0
    while a < n:
        base = int(ends[a - 1]) if a else 0
        b = int(np.searchsorted(ends, base + chunk_chars, side="left")) + 1
        b = min(max(b, a + 1), n)
        bounds.append((a, b))
        a = b
    return bounds


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    block = bytearray(1 << 20)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as handle:
        while n := handle.readinto(block):
            digest.update(view[:n])  # releases the GIL (block > 2 KiB)
    return "sha256:" + digest.hexdigest()


class ShardWriter:
    """Writes one shard (``name``: ``shard-00000``) into ``out`` chunk by chunk.

    ``doc_ids`` are the shard's IDs in order; chunks must arrive in the same order and
    cover them exactly. Nothing appears under the final names before :meth:`finish`;
    :meth:`abort` removes the temporary files. ``native=False`` writes an uncompressed
    Parquet shard with pyarrow too (the reference the native writer is tested against).
    """

    def __init__(
        self,
        out: Path,
        name: str,
        doc_ids: list[str],
        *,
        format: str,
        dtype: np.dtype[Any],
        metadata: dict[str, str],
        compression: str = "none",
        native: bool = True,
    ) -> None:
        self.out = out
        self.name = name
        self.doc_ids = doc_ids
        self.format = format
        self.dtype = np.dtype(dtype)
        self._done = 0
        self._lengths: list[NDArray[np.int64]] = []
        self._truncated: list[NDArray[np.bool_]] = []
        self._max_id: int | None = None
        self._tmp: dict[str, Path] = {}
        self._parquet: Any = None
        self._native: _native.ParquetShardWriter | None = None
        self._bin: BinaryIO | None = None
        self._bin_sha: Any = None
        if format == "parquet":
            self._open_parquet(metadata, compression, native=native)
        else:
            if self.dtype not in MEGATRON_CODES:
                raise ContractError(f"Megatron shards store uint16 or int32 IDs, not {dtype}")
            self._bin = open(self._tmp_path(f"{name}.bin"), "wb")  # noqa: SIM115 (closed in finish/abort)
            self._bin_sha = hashlib.sha256()

    def _tmp_path(self, final: str) -> Path:
        path = self.out / f".{final}.tmp{os.getpid()}"
        self._tmp[final] = path
        return path

    def _open_parquet(self, metadata: dict[str, str], compression: str, *, native: bool) -> None:
        import pyarrow as pa

        # Every field is required (never null): a nullable list of nullable items costs
        # definition levels of 2 bits per token, a required one 1 bit (empty lists).
        item = pa.field("item", pa.from_numpy_dtype(self.dtype), nullable=False)
        self._schema = pa.schema(
            [
                pa.field("doc_id", pa.string(), nullable=False),
                pa.field("input_ids", pa.list_(item), nullable=False),
                pa.field("length", pa.uint32(), nullable=False),
                pa.field("truncated", pa.bool_(), nullable=False),
            ],
            metadata={k.encode(): v.encode() for k, v in metadata.items()},
        )
        path = self._tmp_path(f"{self.name}.parquet")
        if native and compression == "none" and self.dtype in (np.uint16, np.uint32):
            # The footer carries the same key-value metadata pyarrow writes: the Arrow
            # schema (base64 of its IPC form, as pyarrow stores it) first, then ours.
            arrow_schema = base64.b64encode(self._schema.serialize().to_pybytes()).decode()
            self._native = _native.ParquetShardWriter(
                str(path),
                id_bits=8 * self.dtype.itemsize,
                doc_ids=self.doc_ids,
                metadata=[("ARROW:schema", arrow_schema), *metadata.items()],
                created_by=f"tokenpact version {_native.__version__}",
            )
            return
        import pyarrow.parquet as pq

        # Compressed shards (and the reference writer of the tests): PLAIN pages, no
        # dictionary, the codec shrinks them. pyarrow's dictionary encoder hashes every
        # value; the native writer's (uncompressed shards) indexes a direct table.
        # DELTA_BINARY_PACKED cost 10-25% more writer CPU (measured in the pipeline).
        # Min/max statistics are kept for the per-document columns (doc_id ranges let
        # readers skip row groups) but not computed over every token.
        self._parquet = pq.ParquetWriter(
            str(path),
            self._schema,
            compression=None if compression == "none" else compression,
            use_dictionary=False,
            write_statistics=["doc_id", "length", "truncated"],
        )

    def add(self, chunk: EncodedChunk) -> None:
        """Append the next chunk (its documents follow the previous chunk's)."""
        n = len(chunk)
        if self._done + n > len(self.doc_ids):
            raise ContractError(f"{self.name}: more encoded records than documents")
        ids = chunk.ids
        if chunk.max_id is not None:
            top = chunk.max_id
            self._max_id = top if self._max_id is None else max(self._max_id, top)
        self._lengths.append(chunk.lengths)
        self._truncated.append(chunk.truncated)
        if self._native is not None:
            # Zero-copy views; the native writer reads them with the GIL released.
            self._native.write_chunk(
                np.ascontiguousarray(ids, dtype=self.dtype),
                np.ascontiguousarray(chunk.offsets, dtype=np.int64),
                np.ascontiguousarray(chunk.truncated, dtype=np.bool_),
            )
        elif self._parquet is not None:
            self._write_row_group(chunk, self.doc_ids[self._done : self._done + n])
        else:
            assert self._bin is not None
            data = np.ascontiguousarray(ids, dtype=self.dtype.newbyteorder("<")).data
            self._bin.write(data)
            self._bin_sha.update(data)
        self._done += n

    def _write_row_group(self, chunk: EncodedChunk, doc_ids: list[str]) -> None:
        import pyarrow as pa

        # Zero-copy views of the numpy IDs; only the offsets (one per document) narrow
        # to int32, as list<> offsets are (a chunk holds far fewer than 2^31 tokens).
        list_type = self._schema.field("input_ids").type
        values = pa.array(chunk.ids, type=list_type.value_type)
        table = pa.Table.from_arrays(
            [
                pa.array(doc_ids, type=pa.string()),
                pa.ListArray.from_arrays(
                    pa.array(chunk.offsets.astype(np.int32)), values, type=list_type
                ),
                pa.array(chunk.lengths.astype(np.uint32)),
                pa.array(chunk.truncated),
            ],
            schema=self._schema,
        )
        self._parquet.write_table(table, row_group_size=max(1, len(chunk)))

    def finish(self) -> ShardSummary:
        """Close, digest and move the shard's files into place."""
        if self._done != len(self.doc_ids):
            raise ContractError(f"{self.name}: {self._done} of {len(self.doc_ids)} encoded")
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        truncated = np.concatenate(self._truncated) if self._truncated else np.zeros(0, bool)
        digests: dict[str, str] = {}
        if self._native is not None:
            native, self._native = self._native, None
            digests[f"{self.name}.parquet"] = "sha256:" + native.finish()
        elif self._parquet is not None:
            self._parquet.close()
            self._parquet = None
            name = f"{self.name}.parquet"
            digests[name] = _sha256_file(self._tmp[name])
        else:
            assert self._bin is not None
            self._bin.close()
            self._bin = None
            digests[f"{self.name}.bin"] = "sha256:" + self._bin_sha.hexdigest()
            flags = truncated.tolist()
            if any(flags):
                docs = "".join(f"{d}\t{int(t)}\n" for d, t in zip(self.doc_ids, flags, strict=True))
            else:
                docs = "\t0\n".join(self.doc_ids) + "\t0\n"
            small = {
                f"{self.name}.idx": megatron_index_bytes(lengths, self.dtype),
                f"{self.name}.docs.tsv": docs.encode("utf-8"),
            }
            for final, data in small.items():
                self._tmp_path(final).write_bytes(data)
                digests[final] = "sha256:" + hashlib.sha256(data).hexdigest()
        for final, tmp in self._tmp.items():
            os.replace(tmp, self.out / final)
        self._tmp.clear()
        return ShardSummary(
            files=digests,
            doc_ids=self.doc_ids,
            lengths=lengths,
            truncated=int(truncated.sum()),
            max_token_id=self._max_id,
        )

    def abort(self) -> None:
        """Close and remove whatever was written (after an error)."""
        try:
            if self._native is not None:
                self._native.abort()
            if self._parquet is not None:
                self._parquet.close()
            if self._bin is not None:
                self._bin.close()
        finally:
            self._parquet = self._bin = self._native = None
            for tmp in self._tmp.values():
                tmp.unlink(missing_ok=True)
            self._tmp.clear()
