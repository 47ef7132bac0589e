"""Reading encoded datasets back, memory-mapped, with the binding checks (fail closed).

:func:`open_dataset` refuses a tokenizer whose semantic hash is not the one the shards
were encoded with and a template hash that differs. It reads only the small per-shard
indexes: Megatron ``.bin`` files are memory-mapped, Parquet shards are read a row group
at a time, and a shard's SHA-256 is checked (streamed, in bounded chunks) the first time
its tokens or document IDs are touched; :meth:`EncodedDataset.verify` is the offline
pass over every file. A shard whose digest is not the manifest's is refused then.

>>> ds = open_dataset("out/", tokenizer=tok)  # doctest: +SKIP
>>> plan = first_fit_decreasing(ds.lengths, capacity=2048)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import mmap
import operator
import os
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..batch import RecordTable
from ..contract import DatasetDeclaration
from ..contract.hashing import HASH_PREFIX, file_sha256
from ..errors import ConfigError, ContractError
from .chat_shards import CONTROL_BIT, MASK_SUFFIX, SUPERVISED_BIT
from .corpus_manifest import read_json
from .dataset_manifest import CheckedManifest, ShardEntry, check_corpus_file, checked_manifest
from .encode import MANIFEST_NAME
from .shard_formats import PARQUET_COLUMNS, read_megatron_index

if TYPE_CHECKING:
    from ..core import Tokenizer

_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")
_ROW_GROUP_CACHE = 2  # decoded Parquet row groups kept per shard
_MAX_INDEX_BYTES = 1 << 32  # an .idx or .docs.tsv beyond this is not one we wrote


def _checked_name(root: Path, name: str) -> Path:
    if not name or set(name) - _NAME_OK or name.startswith("."):
        raise ContractError(f"manifest names a shard file {name!r} outside the dataset directory")
    path = root / name
    if not path.is_file():
        raise ContractError(f"shard file {name} is missing from {root}; restore it or re-encode")
    return path


def _check_digest(path: Path, digest: str, data: bytes | None = None) -> None:
    actual = file_sha256(path) if data is None else HASH_PREFIX + hashlib.sha256(data).hexdigest()
    if actual != digest:
        raise ContractError(
            f"shard file {path.name} has digest {actual}, the manifest says {digest}; the file "
            "changed after encoding: re-encode the dataset or restore the file"
        )


def _check_range(ids: NDArray[Any], top: int | None, name: str) -> int | None:
    """The largest ID in ``ids`` (``None`` when empty); one above the manifest's
    ``max_token_id`` (itself below the vocabulary size) is refused: one bulk pass."""
    if not ids.shape[0]:
        return None
    got = int(ids.max())
    if top is None or got > top:
        raise ContractError(
            f"shard file {name} holds token ID {got}, above the manifest's max_token_id "
            f"{top}; the shard was altered: re-encode the dataset or restore the file"
        )
    if ids.dtype.kind == "i" and int(ids.min()) < 0:  # Megatron's int32 IDs
        raise ContractError(
            f"shard file {name} holds a negative token ID; the shard was altered: re-encode "
            "the dataset or restore the file"
        )
    return got


def _read_small(path: Path, what: str) -> bytes:
    size = path.stat().st_size
    if size > _MAX_INDEX_BYTES:
        raise ContractError(f"{path.name} is {size} bytes, too large for a shard {what}")
    return path.read_bytes()


class _Shard:
    """One shard's files: the small index read at open, the tokens on demand."""

    def __init__(
        self,
        root: Path,
        files: dict[str, str],
        dtype: np.dtype[Any],
        entry: ShardEntry,
        top: int | None,
    ) -> None:
        self.paths = {name: _checked_name(root, name) for name in sorted(files)}
        self.digests = dict(files)
        self.dtype = dtype
        self.entry = entry
        self.top = top  # the manifest's max_token_id: every ID read is checked against it
        self.max_seen: int | None = None  # the largest ID found by the range checks
        self._verified: set[str] = set()
        self._lock = threading.Lock()
        self.lengths: NDArray[np.int64] = np.zeros(0, np.int64)
        self._open()

    def _open(self) -> None:
        """Read and check the format's small index (the subclass's part of opening)."""
        raise NotImplementedError

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    def _set_lengths(self, lengths: NDArray[Any], name: str) -> None:
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.lengths.ndim != 1 or (self.lengths.shape[0] and int(self.lengths.min()) < 0):
            raise ContractError(f"shard file {name} holds negative record lengths; re-encode")
        self.offsets = np.zeros(self.lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        if self.lengths.shape[0] != self.entry.records or self.n_tokens != self.entry.tokens:
            raise ContractError(
                f"shard file {name} holds {self.lengths.shape[0]} records and {self.n_tokens} "
                f"tokens, its manifest entry says {self.entry.records} and {self.entry.tokens}; "
                "re-encode the dataset or restore the files"
            )

    def _seen(self, ids: NDArray[Any], name: str) -> None:
        got = _check_range(ids, self.top, name)
        if got is not None and (self.max_seen is None or got > self.max_seen):
            self.max_seen = got

    def _touch(self, name: str) -> None:
        """Check ``name``'s digest once, the first time its contents are used."""
        if name in self._verified:
            return
        with self._lock:
            if name not in self._verified:
                _check_digest(self.paths[name], self.digests[name])
                self._verified.add(name)

    def verify(self) -> None:
        for name in self.paths:
            self._touch(name)
        self.check_ids()

    def check_ids(self) -> None:
        """Range-check every ID of the shard (the offline pass)."""
        raise NotImplementedError

    @property
    def verified(self) -> bool:
        return len(self._verified) == len(self.paths)

    # Data-loader workers started with "spawn" receive a pickled copy: open handles and
    # mappings are reopened there on first use; the digests already checked stay checked.
    _HANDLES: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        for name in self._HANDLES:
            state[name] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def read(self, start: int, stop: int) -> NDArray[Any]:
        raise NotImplementedError

    def doc_ids_and_truncated(self) -> tuple[list[str], NDArray[np.bool_]]:
        raise NotImplementedError


class _MegatronShard(_Shard):
    _HANDLES = ("_ids",)

    def _open(self) -> None:
        dtype = self.dtype
        by_kind: dict[str, str] = {}
        for name in self.paths:
            kind = "docs" if name.endswith(".docs.tsv") else name.rsplit(".", 1)[-1]
            by_kind[kind] = name
        if set(by_kind) != {"bin", "idx", "docs"}:
            raise ContractError(
                f"a Megatron shard lists {sorted(self.paths)}, expected .bin, .idx and "
                ".docs.tsv; re-encode the dataset"
            )
        self.bin, self.idx, self.docs = by_kind["bin"], by_kind["idx"], by_kind["docs"]
        idx = _read_small(self.paths[self.idx], "index")
        _check_digest(self.paths[self.idx], self.digests[self.idx], idx)  # read whole anyway
        self._verified.add(self.idx)
        file_dtype, sizes, pointers = read_megatron_index(idx)
        if file_dtype != dtype:
            raise ContractError(f"shard IDs are {file_dtype}, the manifest says {dtype}")
        self._set_lengths(sizes, self.idx)
        if not np.array_equal(pointers, self.offsets[:-1] * dtype.itemsize):
            raise ContractError(
                "the .idx pointers are not contiguous; the shard was not written by us"
            )
        if self.paths[self.bin].stat().st_size != self.n_tokens * dtype.itemsize:
            raise ContractError(f"{self.bin} size does not match the .idx sizes; re-encode")
        self._ids: NDArray[Any] | None = None
        self._ranged = False

    def read(self, start: int, stop: int) -> NDArray[Any]:
        self._touch(self.bin)
        if self._ids is None:
            self._ids = self._map()
        if not self._ranged:  # on first touch, with the digest: one pass over the mapping
            self._seen(self._ids, self.bin)
            self._ranged = True
        return self._ids[start:stop]

    def check_ids(self) -> None:
        self.read(0, 0)

    def _map(self) -> NDArray[Any]:
        le = self.dtype.newbyteorder("<")
        if not self.n_tokens:
            return np.zeros(0, le)
        # A plain ndarray over the mapping: np.memmap's subclass costs microseconds per
        # slice, which the per-row reads of a training batch would pay every time.
        with open(self.paths[self.bin], "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        size = self.n_tokens * self.dtype.itemsize
        if len(mapped) != size:
            raise ContractError(f"{self.bin} changed size after open; restore it or re-encode")
        return np.frombuffer(mapped, dtype=le, count=self.n_tokens)

    def doc_ids_and_truncated(self) -> tuple[list[str], NDArray[np.bool_]]:
        path = self.paths[self.docs]
        data = _read_small(path, "document list")
        with self._lock:  # hashed once: here, or by verify()'s pass over every file
            if self.docs not in self._verified:
                _check_digest(path, self.digests[self.docs], data)
                self._verified.add(self.docs)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ContractError(f"{self.docs} is not UTF-8; re-encode the dataset") from None
        rows = [line.split("\t") for line in text.split("\n")[:-1]] if text.endswith("\n") else []
        if len(rows) != self.lengths.shape[0] or any(
            len(r) != 2 or r[1] not in ("0", "1") for r in rows
        ):
            raise ContractError(
                f"{self.docs} is malformed (expected one 'doc_id<TAB>0|1' line per .idx "
                "sequence); re-encode the dataset"
            )
        return [r[0] for r in rows], np.array([r[1] == "1" for r in rows], dtype=bool)


class _ParquetShard(_Shard):
    _HANDLES = ("_file_handle",)

    def _open(self) -> None:
        import pyarrow.parquet as pq

        names = [n for n in self.paths if n.endswith(".parquet")]
        if len(names) != 1:
            raise ContractError(f"a Parquet shard lists {sorted(self.paths)}; re-encode")
        self.name = names[0]
        with self._readable():
            self._file_handle: Any = pq.ParquetFile(self.paths[self.name])
            lengths = self._file.read(columns=["length"]).column("length").to_numpy()
        if tuple(self._file.schema_arrow.names) != PARQUET_COLUMNS:
            raise ContractError(
                f"shard columns are {self._file.schema_arrow.names}, expected {PARQUET_COLUMNS}"
            )
        # Lengths come from the not yet hashed file: the totals are checked against the
        # manifest at open, and every token read hashes the file first.
        if lengths.dtype.kind not in "iu":
            raise ContractError(f"shard {self.name} lengths are {lengths.dtype}, not integers")
        self._set_lengths(lengths, self.name)
        meta = self._file.metadata
        rows = [meta.row_group(g).num_rows for g in range(meta.num_rows and meta.num_row_groups)]
        self.group_docs = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(rows, out=self.group_docs[1:])
        if int(self.group_docs[-1]) != self.lengths.shape[0]:
            raise ContractError(f"shard {self.name} row groups disagree with its row count")
        self.group_tokens = self.offsets[self.group_docs]
        self._cache: OrderedDict[int, NDArray[Any]] = OrderedDict()

    @contextmanager
    def _readable(self) -> Iterator[None]:
        """pyarrow's errors (ArrowInvalid and friends) as one ContractError."""
        try:
            yield
        except Exception as exc:
            raise ContractError(
                f"shard {self.name} is not a readable Parquet file: {exc}"
            ) from None

    @property
    def _file(self) -> Any:
        if self._file_handle is None:
            import pyarrow.parquet as pq

            self._file_handle = pq.ParquetFile(self.paths[self.name])
        return self._file_handle

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_cache"] = OrderedDict()
        return state

    def _group(self, g: int) -> NDArray[Any]:
        got = self._cache.get(g)
        if got is not None:
            self._cache.move_to_end(g)
            return got
        with self._readable():
            lists = self._file.read_row_group(g, columns=["input_ids"]).column(0).combine_chunks()
            ids = lists.flatten().to_numpy(zero_copy_only=False)
            sizes = np.diff(lists.offsets.to_numpy())
        if ids.dtype != self.dtype:
            raise ContractError(f"shard IDs are {ids.dtype}, the manifest says {self.dtype}")
        lo, hi = int(self.group_docs[g]), int(self.group_docs[g + 1])
        if not np.array_equal(sizes, self.lengths[lo:hi]):
            raise ContractError(f"shard {self.name} lengths disagree with its ID lists")
        self._seen(ids, self.name)
        self._cache[g] = ids
        while len(self._cache) > _ROW_GROUP_CACHE:
            self._cache.popitem(last=False)
        return ids

    def read(self, start: int, stop: int) -> NDArray[Any]:
        self._touch(self.name)
        if stop <= start:
            return np.zeros(0, self.dtype)
        first = int(np.searchsorted(self.group_tokens, start, side="right")) - 1
        last = int(np.searchsorted(self.group_tokens, stop, side="left"))
        parts = []
        for g in range(first, last):
            base = int(self.group_tokens[g])
            ids = self._group(g)
            parts.append(ids[max(start - base, 0) : stop - base])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def check_ids(self) -> None:
        for g in range(len(self.group_docs) - 1):
            self._group(g)

    def doc_ids_and_truncated(self) -> tuple[list[str], NDArray[np.bool_]]:
        self._touch(self.name)
        with self._readable():
            table = self._file.read(columns=["doc_id", "truncated"])
            flags = table.column("truncated").to_numpy(zero_copy_only=False)
            doc_ids = table.column("doc_id").to_pylist()
        if flags.dtype != np.bool_ or not all(isinstance(d, str) for d in doc_ids):
            raise ContractError(f"shard {self.name} has malformed doc_id/truncated columns")
        return doc_ids, flags


class EncodedDataset:
    """Encoded records of a dataset directory, in ``doc_id`` order, with their manifest.

    Tokens stay on disk: ``ds[i]`` and :meth:`tokens` read what they return (memory-
    mapped for Megatron shards), ``lengths``/``offsets`` are the in-memory index (8 bytes
    per record each). :attr:`input_ids`, :attr:`doc_ids` and :meth:`record_table` load
    the whole dataset and are meant for small ones; train from :class:`TokenLoader`.
    """

    def __init__(
        self,
        root: Path,
        manifest: dict[str, Any],
        shards: list[_Shard],
        masks: list[tuple[Path, str]] | None = None,
        checked: CheckedManifest | None = None,
    ) -> None:
        self.root = root
        self.manifest = manifest
        self._checked = checked
        self._shards = shards
        if len(shards) == 1:  # share the shard's index: 16 bytes per record, not 32
            self.lengths, self.offsets = shards[0].lengths, shards[0].offsets
        else:
            self.lengths = (
                np.concatenate([s.lengths for s in shards]) if shards else np.zeros(0, np.int64)
            )
            self.offsets = np.zeros(self.lengths.shape[0] + 1, dtype=np.int64)
            np.cumsum(self.lengths, out=self.offsets[1:])
        self.shard_docs = np.zeros(len(shards) + 1, dtype=np.int64)
        np.cumsum([s.lengths.shape[0] for s in shards], out=self.shard_docs[1:])
        self.shard_tokens = self.offsets[self.shard_docs]
        self._shard_bounds: list[int] = self.shard_tokens.tolist()
        self.n_tokens = int(self.offsets[-1])
        self.dtype: np.dtype[Any] = np.dtype(manifest["dtype"])
        self._doc_ids: list[str] | None = None
        self._truncated: NDArray[np.bool_] | None = None
        self._input_ids: NDArray[Any] | None = None
        self.background_error: Exception | None = None
        # Conversation datasets (tokenpact.data.encode_conversations) carry a flag byte
        # per token in a ".mask" file per shard: supervised (the loss targets) and control.
        self._masks = masks
        self._flags: NDArray[np.uint8] | None = None

    @property
    def tokenizer_hash(self) -> str:
        return str(self.manifest["tokenizer_hash"])

    @property
    def template_hash(self) -> str | None:
        value = self.manifest.get("template_hash")
        return None if value is None else str(value)

    @property
    def hash(self) -> str:
        """``sha256:`` of ``dataset.json``: it names every shard digest, so it names the data."""
        return "sha256:" + hashlib.sha256((self.root / MANIFEST_NAME).read_bytes()).hexdigest()

    @property
    def declaration(self) -> DatasetDeclaration:
        return DatasetDeclaration.from_json(self.manifest["declaration"])

    @property
    def verified(self) -> bool:
        """Whether every shard file's digest has been checked in this process."""
        return all(s.verified for s in self._shards)

    def verify(self) -> None:
        """The offline pass: hash every shard file, range-check every ID, and check the
        document IDs, truncation count, maximum ID and ``corpus.json`` against the
        manifest; raises a ContractError on the first disagreement."""
        for shard in self._shards:
            shard.verify()
        checked = self._checked
        if checked is None:
            return
        seen = [s.max_seen for s in self._shards if s.max_seen is not None]
        if (max(seen) if seen else None) != checked.max_token_id:
            raise ContractError(
                f"the shards' largest token ID is {max(seen) if seen else None}, the manifest "
                f"says {checked.max_token_id}; re-encode the dataset or restore the files"
            )
        if int(np.count_nonzero(self.truncated)) != checked.truncated:
            raise ContractError(
                f"{int(np.count_nonzero(self.truncated))} records are marked truncated, the "
                f"manifest says {checked.truncated}; re-encode the dataset"
            )
        self._load_flags()
        if not checked.supervised:
            check_corpus_file(self.root, checked.corpus_hash, self.doc_ids)

    def verify_in_background(self) -> threading.Thread:
        """Start the verification pass on a daemon thread and return it. A mismatch it
        finds is kept in :attr:`background_error`; the file is still refused on its
        first touch (first-touch checks never rely on this pass)."""

        def run() -> None:
            try:
                self.verify()
            except (ContractError, OSError) as exc:
                self.background_error = exc

        thread = threading.Thread(target=run, name="tokenpact-verify", daemon=True)
        thread.start()
        return thread

    def _load_docs(self) -> None:
        ids: list[str] = []
        flags = []
        for shard in self._shards:
            d, t = shard.doc_ids_and_truncated()
            if d and (d[0] != shard.entry.first_doc_id or d[-1] != shard.entry.last_doc_id):
                raise ContractError(
                    f"shard {shard.entry.index} holds documents {d[0]!r}..{d[-1]!r}, its "
                    f"manifest entry says {shard.entry.first_doc_id!r}..{shard.entry.last_doc_id!r}"
                    "; re-encode the dataset or restore the files"
                )
            ids.extend(d)
            flags.append(t)
        # Records are sorted by doc_id and unique (the order the encoder writes).
        if any(map(operator.ge, ids, islice(ids, 1, None))):
            raise ContractError(
                "the dataset's doc_ids are not strictly ascending; the shards were reordered "
                "or altered: re-encode the dataset"
            )
        self._doc_ids = ids
        self._truncated = np.concatenate(flags) if flags else np.zeros(0, bool)

    @property
    def doc_ids(self) -> list[str]:
        if self._doc_ids is None:
            self._load_docs()
        assert self._doc_ids is not None
        return self._doc_ids

    @property
    def truncated(self) -> NDArray[np.bool_]:
        if self._truncated is None:
            self._load_docs()
        assert self._truncated is not None
        return self._truncated

    def _load_flags(self) -> NDArray[np.uint8] | None:
        """The per-token flag bytes of a conversation dataset (None for plain text), each
        mask file checked against its digest and its shard's token count when read."""
        if self._masks is None:
            return None
        if self._flags is None:
            parts = []
            for shard, (path, digest) in zip(self._shards, self._masks, strict=True):
                size = path.stat().st_size  # bounded by the shard before it is read
                if size != shard.n_tokens:
                    raise ContractError(
                        f"{path.name} has {size} flags for {shard.n_tokens} tokens; "
                        "re-encode the dataset"
                    )
                data = path.read_bytes()
                _check_digest(path, digest, data)
                parts.append(np.frombuffer(data, dtype=np.uint8))
            self._flags = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        return self._flags

    @property
    def assistant_mask(self) -> NDArray[np.bool_] | None:
        """Per token: supervised (a conversation dataset's loss targets); None otherwise."""
        flags = self._load_flags()
        return None if flags is None else (flags & SUPERVISED_BIT) != 0

    @property
    def special_tokens_mask(self) -> NDArray[np.bool_] | None:
        """Per token: a control token (conversation datasets); None otherwise."""
        flags = self._load_flags()
        return None if flags is None else (flags & CONTROL_BIT) != 0

    @property
    def input_ids(self) -> NDArray[Any]:
        """Every token end to end, loaded into memory (small datasets only)."""
        if self._input_ids is None:
            self._input_ids = self.tokens(0, self.n_tokens)
        return self._input_ids

    def tokens(self, start: int, stop: int) -> NDArray[Any]:
        """Tokens ``[start, stop)`` of the dataset's stream (documents end to end), a copy."""
        out = np.empty(max(stop - start, 0), dtype=self.dtype)
        self.read_into(out, start)
        return out

    def read_into(self, out: NDArray[Any], start: int) -> None:
        """Fill ``out`` with the stream's tokens from ``start`` (crossing shards as needed)."""
        stop = start + out.shape[0]
        if start < 0 or stop > self.n_tokens:
            raise IndexError(f"tokens [{start}, {stop}) outside the dataset's {self.n_tokens}")
        if start == stop:
            return
        # The hot path of training reads: a plain-list bisect, one slice, one copy.
        bounds = self._shard_bounds
        k = bisect_right(bounds, start) - 1
        if stop <= bounds[k + 1]:
            out[:] = self._shards[k].read(start - bounds[k], stop - bounds[k])
            return
        at = 0
        while at < out.shape[0]:
            base = int(self.shard_tokens[k])
            piece = self._shards[k].read(
                start + at - base, min(stop, int(self.shard_tokens[k + 1])) - base
            )
            out[at : at + piece.shape[0]] = piece
            at += piece.shape[0]
            k += 1

    def contiguous(self) -> NDArray[Any] | None:
        """The whole stream as one memory-mapped array (verified now) when the dataset is
        a single Megatron shard, else ``None``: the loader's fast path."""
        if len(self._shards) != 1 or not isinstance(self._shards[0], _MegatronShard):
            return None
        return self._shards[0].read(0, self.n_tokens)

    def take(self, positions: NDArray[np.int64]) -> NDArray[Any]:
        """The tokens at global ``positions`` (any order), reading shard by shard."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty(positions.shape[0], dtype=self.dtype)
        which = np.searchsorted(self.shard_tokens, positions, side="right") - 1
        for k in np.unique(which).tolist():
            sel = which == k
            local = positions[sel] - self.shard_tokens[k]
            lo, hi = int(local.min()), int(local.max()) + 1
            out[sel] = self._shards[k].read(lo, hi)[local - lo]
        return out

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def __getitem__(self, i: int) -> NDArray[Any]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"record {i} outside the dataset's {len(self)}")
        i %= len(self)
        return self.tokens(int(self.offsets[i]), int(self.offsets[i + 1]))

    def __iter__(self) -> Iterator[tuple[str, NDArray[Any]]]:
        for i, doc_id in enumerate(self.doc_ids):
            yield doc_id, self[i]

    def record_table(self, *, drop_empty: bool = True) -> RecordTable:
        """The records as a :class:`tokenpact.batch.RecordTable` (sample IDs = doc IDs).

        Empty records cannot be collated, so they are dropped unless ``drop_empty=False``.
        Loads every token (small datasets); stream large ones with :class:`TokenLoader`.
        """
        keep = np.flatnonzero(self.lengths > 0) if drop_empty else np.arange(len(self))
        doc_ids = self.doc_ids
        return RecordTable(
            self.input_ids.astype(np.int64),
            starts=self.offsets[:-1][keep],
            lengths=self.lengths[keep],
            sample_ids=[doc_ids[i] for i in keep.tolist()],
            special_tokens_mask=self.special_tokens_mask,
            target_supervision=self.assistant_mask,
        )


def open_dataset(
    path: str | os.PathLike[str],
    *,
    tokenizer: Tokenizer | None = None,
    tokenizer_hash: str | None = None,
    template_hash: str | None = None,
    verify: Literal["first-touch", "open", "background"] = "first-touch",
) -> EncodedDataset:
    """Open an encoded dataset; check its tokenizer binding now, its shard digests on use.

    Pass the ``tokenizer`` you will train with (or its ``tokenizer_hash``): a different
    hash is a :class:`~tokenpact.errors.ContractError`. Opening reads only the manifest
    and the per-shard indexes; each shard file is hashed the first time it is read, and
    :meth:`EncodedDataset.verify` hashes them all. ``verify="open"`` does that pass now,
    before returning (it reads every byte); the default ``"first-touch"`` leaves each
    file to its first use; ``"background"`` also starts the whole pass on a thread
    (:meth:`EncodedDataset.verify_in_background`). No setting skips a digest or the
    binding check.
    """
    if verify not in ("first-touch", "open", "background"):
        raise ConfigError(f"verify must be 'first-touch', 'open' or 'background', got {verify!r}")
    root = Path(path)
    manifest = read_json(root / MANIFEST_NAME)
    vocab = None if tokenizer is None else int(tokenizer.vocab_size)
    checked = checked_manifest(manifest, root)
    expected = tokenizer_hash if tokenizer is None else tokenizer.semantic_hash
    if expected is not None and expected != manifest["tokenizer_hash"]:
        raise ContractError(
            f"the dataset was encoded with tokenizer {manifest['tokenizer_hash']}, not "
            f"{expected}; load the tokenizer it was made with or re-encode the dataset"
        )
    if vocab is not None and vocab != checked.vocab_size:
        raise ContractError(
            f"{root / MANIFEST_NAME} says vocab_size {checked.vocab_size}, the tokenizer has "
            f"{vocab}; the manifest was edited: re-encode the dataset"
        )
    if template_hash is not None and template_hash != manifest["template_hash"]:
        raise ContractError(
            f"the dataset was encoded with template {manifest['template_hash']}, not "
            f"{template_hash}; re-encode it with the template you train with"
        )
    kind = _ParquetShard if checked.format == "parquet" else _MegatronShard
    shards: list[_Shard] = []
    masks: list[tuple[Path, str]] = []
    for entry in checked.shards:
        mask = [k for k in entry.files if k.endswith(MASK_SUFFIX)]
        files = {k: v for k, v in entry.files.items() if k not in mask}
        shards.append(kind(root, files, checked.dtype, entry, checked.max_token_id))
        if mask:
            masks.append((_checked_name(root, mask[0]), entry.files[mask[0]]))
    ds = EncodedDataset(root, manifest, shards, masks if checked.supervised else None, checked)
    if verify == "open":
        ds.verify()
    elif verify == "background":
        ds.verify_in_background()
    return ds


def _tokens_at(ds: EncodedDataset, positions: NDArray[np.int64]) -> NDArray[np.int64]:
    """Tokens at ``positions``; -1 where a position is outside the stream (empty records)."""
    ok = (positions >= 0) & (positions < ds.n_tokens)
    out = np.full(positions.shape[0], -1, dtype=np.int64)
    out[ok] = ds.take(positions[ok])
    return out


def boundary_problems(ds: EncodedDataset, *, eos_id: int | None) -> list[str]:
    """Where the records contradict the manifest's boundary policy and BOS/EOD flags."""
    m = ds.manifest
    problems = []
    policy = m.get("boundary_policy")
    eod = m.get("eod_id") if m.get("append_eod") else eos_id
    ends = ds.offsets[1:] - 1
    nonempty = ds.lengths > 0
    if policy == "eos_separate_documents":
        if eod is None:
            problems.append(
                "boundary_policy is eos_separate_documents but no EOS ID is known; load "
                "the tokenizer the dataset was encoded with"
            )
        else:
            bad = np.flatnonzero(~nonempty | (_tokens_at(ds, ends) != eod))
            if bad.size:
                problems.append(
                    f"boundary_policy is eos_separate_documents but {bad.size} of {len(ds)} "
                    f"records do not end with EOS {eod} (first: {ds.doc_ids[int(bad[0])]!r}); "
                    "re-encode with --append-eod"
                )
    elif policy not in (None, "none"):
        problems.append(f"unknown boundary_policy {policy!r}; re-encode the dataset")
    if m.get("add_bos"):
        bos = m.get("bos_id")
        starts = ds.offsets[:-1]
        first = _tokens_at(ds, starts)
        bad = np.flatnonzero(~nonempty | (first != bos))
        if bad.size:
            problems.append(
                f"add_bos is set but {bad.size} records do not start with BOS {bos}; "
                "re-encode the dataset"
            )
    return problems


def dataset_problems(
    root: Path, manifest: dict[str, Any], tokenizer: Tokenizer | None
) -> dict[str, list[str]]:
    """Every way an encoded dataset's files disagree with its manifest and ``tokenizer``
    (``None``: the checks that need no tokenizer):
    ``declaration_hash`` (the declaration was edited), ``shards`` (digests, totals,
    format) and ``boundaries`` (the records do not hold what ``boundary_policy`` says)."""
    out: dict[str, list[str]] = {"declaration_hash": [], "shards": [], "boundaries": []}
    try:
        declared = DatasetDeclaration.from_json(manifest["declaration"])
        if manifest.get("declaration_hash") != declared.hash:
            out["declaration_hash"].append(
                f"declaration_hash {manifest.get('declaration_hash')} is not the hash of the "
                f"declaration ({declared.hash}); the manifest was edited: re-encode"
            )
    except (ContractError, KeyError, TypeError) as exc:
        out["declaration_hash"].append(f"the declaration is malformed: {exc}")
    try:
        ds = open_dataset(root, verify="open")
    except (ContractError, KeyError, TypeError, ValueError) as exc:
        out["shards"].append(str(exc))
        return out
    eos = tokenizer.eos_id if tokenizer is not None else None
    out["boundaries"] = boundary_problems(ds, eos_id=eos)
    return out
