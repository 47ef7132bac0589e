"""Sequence records: the validated input of every collator.

A record is one training sample after tokenization, special-token insertion and structural
truncation. Every per-token field is aligned to ``input_ids``; the collators never guess
ownership or supervision from IDs.

``SequenceRecord`` is the friendly one-sample form; ``RecordTable`` is the columnar form
(one flat token buffer plus per-record starts and lengths) that the collators and packers
work on, so that a million records never become a million Python objects on a hot path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import BatchError

IGNORE_INDEX = -100
"""Label value that the loss ignores (PyTorch ``cross_entropy``'s default ``ignore_index``)."""

PAD_OWNER = "__pad__"
"""Sample owner of a PAD slot: it belongs to no record."""

IGNORE_OWNER = "__ignore__"
"""Label owner of a position whose label is ignored (prompt targets, record ends, PAD)."""

DEFAULT_OWNER = "content"
"""Token owner used when a record does not say who owns its tokens."""

RESERVED_NAMES = frozenset({PAD_OWNER, IGNORE_OWNER})

OverflowPolicy = Literal["reject_upstream_sequence", "truncate_right"]
OVERFLOW_POLICIES: tuple[str, ...] = ("reject_upstream_sequence", "truncate_right")

_MAX_OWNER_NAMES = np.iinfo(np.int16).max


def as_token_ids(values: ArrayLike, what: str = "input_ids") -> NDArray[np.int64]:
    """Return ``values`` as a 1-D int64 array of non-negative token IDs, or raise BatchError."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise BatchError(
            f"{what} must be a flat sequence of token IDs, got an array of shape {arr.shape}; "
            "pass one record's IDs, e.g. [256, 258, 66, 260]"
        )
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise BatchError(
            f"{what} must hold integers, got dtype {arr.dtype}; "
            "convert with np.asarray(ids, dtype=np.int64)"
        )
    if arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
        raise BatchError(f"{what} holds an ID above 2**63 - 1; token IDs must fit in int64")
    ids = arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "i" and int(ids.min()) < 0:
        where = int(np.flatnonzero(ids < 0)[0])
        raise BatchError(
            f"{what} holds the negative ID {int(ids[where])} at position {where}; "
            f"token IDs are non-negative (labels use {IGNORE_INDEX}, never input_ids)"
        )
    return ids


def as_flags(values: ArrayLike | None, n: int, what: str, default: bool) -> NDArray[np.bool_]:
    """Return a 1-D bool array of length ``n`` (``default`` when ``values`` is None)."""
    if values is None:
        return np.full(n, default, dtype=bool)
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise BatchError(
            f"{what} has shape {arr.shape} but input_ids has {n} tokens; "
            "build every per-token field from the same token list"
        )
    if arr.dtype == bool:
        return arr
    if n and (arr.dtype.kind not in "iu" or not bool(np.all((arr == 0) | (arr == 1)))):
        raise BatchError(f"{what} must hold only 0/1 or booleans, got values of dtype {arr.dtype}")
    return arr.astype(bool)


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise BatchError(f"{what} must be a non-empty string, got {name!r}")
    if name in RESERVED_NAMES:
        raise BatchError(
            f"{what} {name!r} is reserved for PAD/ignored positions; rename it upstream"
        )
    return name


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class SequenceRecord:
    """One validated training sample with aligned per-token metadata.

    ``target_supervision[j]`` says whether token ``j`` is a training *target* (it is
    defined on the target axis; the collator shifts it onto prediction positions).
    ``token_owners`` names the grammar owner of each token (``"prompt"``, ``"response"``
    ...); a single string applies to every token.

    >>> r = SequenceRecord("sample-c", [256, 67, 260], target_supervision=[0, 1, 1])
    >>> len(r), r.token_owners.tolist()
    (3, ['content', 'content', 'content'])
    """

    sample_id: str
    input_ids: NDArray[np.int64]
    special_tokens_mask: NDArray[np.bool_] = None  # type: ignore[assignment]
    token_owners: NDArray[np.str_] = None  # type: ignore[assignment]
    target_supervision: NDArray[np.bool_] = None  # type: ignore[assignment]
    sequence_bundle_hash: str | None = None

    def __post_init__(self) -> None:
        sample_id = _check_name(self.sample_id, "sample_id")
        ids = as_token_ids(self.input_ids)
        n = ids.shape[0]
        if n == 0:
            raise BatchError(
                f"record {sample_id!r} has no tokens; drop empty records before collation "
                "(packed cu_seqlens must be strictly increasing)"
            )
        special = as_flags(self.special_tokens_mask, n, "special_tokens_mask", False)
        supervision = as_flags(self.target_supervision, n, "target_supervision", True)
        owners_in = DEFAULT_OWNER if self.token_owners is None else self.token_owners
        if isinstance(owners_in, str):
            owners = np.full(n, _check_name(owners_in, "token owner"))
        else:
            owners = np.asarray(owners_in)
            if owners.ndim != 1 or owners.shape[0] != n:
                raise BatchError(
                    f"token_owners of record {sample_id!r} has shape {owners.shape} but "
                    f"input_ids has {n} tokens; give one owner per token or a single string"
                )
            if owners.dtype.kind != "U":
                owners = owners.astype(str)
            for name in np.unique(owners).tolist():
                _check_name(name, "token owner")
        if self.sequence_bundle_hash is not None and not isinstance(self.sequence_bundle_hash, str):
            raise BatchError("sequence_bundle_hash must be a string or None")
        object.__setattr__(self, "sample_id", sample_id)
        object.__setattr__(self, "input_ids", _frozen(ids))
        object.__setattr__(self, "special_tokens_mask", _frozen(special))
        object.__setattr__(self, "token_owners", _frozen(owners))
        object.__setattr__(self, "target_supervision", _frozen(supervision))

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def __repr__(self) -> str:
        return (
            f"SequenceRecord(sample_id={self.sample_id!r}, length={len(self)}, "
            f"targets={int(self.target_supervision.sum())})"
        )


class RecordTable:
    """Columnar records: one flat token buffer plus per-record ``starts`` and ``lengths``.

    Records may share or skip parts of the buffer (``take`` selects without copying), so
    a table can also describe a window over a token pool. ``offsets`` (``[R+1]``, as
    returned by ``Tokenizer.encode_batch_flat``) is the contiguous special case.

    >>> t = RecordTable([1, 2, 3, 4, 5], offsets=[0, 3, 5], sample_ids=["a", "b"])
    >>> t.lengths.tolist(), t.record(1).input_ids.tolist()
    ([3, 2], [4, 5])
    """

    __slots__ = (
        "input_ids",
        "starts",
        "lengths",
        "sample_ids",
        "special_tokens_mask",
        "target_supervision",
        "owner_codes",
        "owner_names",
        "bundle_hashes",
    )

    input_ids: NDArray[np.int64]
    starts: NDArray[np.int64]
    lengths: NDArray[np.int64]
    sample_ids: NDArray[np.str_]
    special_tokens_mask: NDArray[np.bool_]
    target_supervision: NDArray[np.bool_]
    owner_codes: NDArray[np.int16]
    owner_names: tuple[str, ...]
    bundle_hashes: NDArray[np.object_] | None

    def __init__(
        self,
        input_ids: ArrayLike,
        offsets: ArrayLike | None = None,
        *,
        starts: ArrayLike | None = None,
        lengths: ArrayLike | None = None,
        sample_ids: Sequence[str] | NDArray[np.str_] | None = None,
        special_tokens_mask: ArrayLike | None = None,
        target_supervision: ArrayLike | None = None,
        owner_codes: ArrayLike | None = None,
        owner_names: Sequence[str] = (DEFAULT_OWNER,),
        bundle_hashes: Sequence[str | None] | None = None,
    ) -> None:
        ids = as_token_ids(input_ids)
        n_tokens = ids.shape[0]
        if offsets is not None:
            if starts is not None or lengths is not None:
                raise BatchError("pass either offsets or starts+lengths, not both")
            off = np.asarray(offsets, dtype=np.int64)
            if off.ndim != 1 or off.shape[0] < 1 or off[0] != 0 or off[-1] != n_tokens:
                raise BatchError(
                    "offsets must be [0, ..., len(input_ids)] with one entry per record "
                    "boundary (R+1 entries), as returned by encode_batch_flat"
                )
            st, ln = off[:-1].copy(), np.diff(off)
        elif starts is not None and lengths is not None:
            st = np.asarray(starts, dtype=np.int64).reshape(-1)
            ln = np.asarray(lengths, dtype=np.int64).reshape(-1)
            if st.shape != ln.shape:
                raise BatchError("starts and lengths must have one entry per record each")
        else:
            raise BatchError("describe the records with offsets=[0, ...] or starts= and lengths=")
        n = st.shape[0]
        if n and int(ln.min()) < 1:
            bad = int(np.flatnonzero(ln < 1)[0])
            raise BatchError(
                f"record {bad} has no tokens; drop empty records before collation "
                "(packed cu_seqlens must be strictly increasing)"
            )
        if n and (int(st.min()) < 0 or int((st + ln).max()) > n_tokens):
            raise BatchError("a record's start/length points outside input_ids")
        if sample_ids is None:
            sids = np.arange(n).astype(str)
        else:
            sids = np.asarray(sample_ids)
            if sids.shape != (n,):
                raise BatchError(f"sample_ids needs {n} entries, one per record")
            if sids.dtype.kind != "U":
                for sid in sids.tolist():
                    _check_name(sid, "sample_id")
                sids = sids.astype(str)
        _check_unique_ids(sids)
        for reserved in RESERVED_NAMES:
            if n and bool(np.any(sids == reserved)):
                raise BatchError(f"sample_id {reserved!r} is reserved; rename the record")
        if n and bool(np.any(sids == "")):
            raise BatchError("sample_id must be a non-empty string")
        names = tuple(owner_names)
        for name in names:
            _check_name(name, "owner name")
        if len(set(names)) != len(names) or not names or len(names) > _MAX_OWNER_NAMES:
            raise BatchError("owner_names must be 1..32767 distinct, non-reserved strings")
        if owner_codes is None:
            codes = np.zeros(n_tokens, dtype=np.int16)
        else:
            raw = np.asarray(owner_codes)
            if raw.shape != (n_tokens,) or (n_tokens and raw.dtype.kind not in "iu"):
                raise BatchError("owner_codes needs one integer code per token of input_ids")
            if n_tokens and (int(raw.min()) < 0 or int(raw.max()) >= len(names)):
                raise BatchError(f"owner_codes must index owner_names (0..{len(names) - 1})")
            codes = raw.astype(np.int16, copy=False)
        hashes = None
        if bundle_hashes is not None:
            hashes = np.asarray(list(bundle_hashes), dtype=object)
            if hashes.shape != (n,):
                raise BatchError(f"bundle_hashes needs {n} entries, one per record")
        self.input_ids = ids
        self.starts = st
        self.lengths = ln
        self.sample_ids = sids
        self.special_tokens_mask = as_flags(
            special_tokens_mask, n_tokens, "special_tokens_mask", False
        )
        self.target_supervision = as_flags(target_supervision, n_tokens, "target_supervision", True)
        self.owner_codes = codes
        self.owner_names = names
        self.bundle_hashes = hashes

    @classmethod
    def from_records(cls, records: Sequence[SequenceRecord]) -> RecordTable:
        """Concatenate validated records into one table (one copy, no per-token Python)."""
        records = list(records)
        for i, record in enumerate(records):
            if not isinstance(record, SequenceRecord):
                raise BatchError(
                    f"item {i} is a {type(record).__name__}, not a SequenceRecord; "
                    "wrap raw IDs with SequenceRecord(sample_id, input_ids, ...)"
                )
        names: dict[str, int] = {}
        code_parts: list[np.ndarray] = []
        for record in records:
            local, inverse = np.unique(record.token_owners, return_inverse=True)
            lut = np.asarray([names.setdefault(name, len(names)) for name in local.tolist()])
            code_parts.append(lut[inverse].astype(np.int16))
        lengths = np.asarray([len(r) for r in records], dtype=np.int64)
        offsets = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])

        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return cls(
            cat([r.input_ids for r in records], np.int64),
            offsets,
            sample_ids=np.asarray([r.sample_id for r in records], dtype=str),
            special_tokens_mask=cat([r.special_tokens_mask for r in records], bool),
            target_supervision=cat([r.target_supervision for r in records], bool),
            owner_codes=cat(code_parts, np.int16),
            owner_names=tuple(names) or (DEFAULT_OWNER,),
            bundle_hashes=[r.sequence_bundle_hash for r in records],
        )

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def __repr__(self) -> str:
        return f"RecordTable(records={len(self)}, tokens={int(self.lengths.sum())})"

    def record(self, i: int) -> SequenceRecord:
        """Return record ``i`` as a ``SequenceRecord``."""
        if not -len(self) <= i < len(self):
            raise BatchError(f"record index {i} is out of range for {len(self)} records")
        s = int(self.starts[i])
        e = s + int(self.lengths[i])
        names = np.asarray(self.owner_names)
        return SequenceRecord(
            str(self.sample_ids[i]),
            self.input_ids[s:e],
            special_tokens_mask=self.special_tokens_mask[s:e],
            token_owners=names[self.owner_codes[s:e]],
            target_supervision=self.target_supervision[s:e],
            sequence_bundle_hash=None if self.bundle_hashes is None else self.bundle_hashes[i],
        )

    def __iter__(self) -> Iterator[SequenceRecord]:
        return (self.record(i) for i in range(len(self)))

    def take(self, indices: ArrayLike) -> RecordTable:
        """Select records (in the given order) without copying token data."""
        idx = check_indices(indices, len(self))
        out = object.__new__(RecordTable)
        out.input_ids = self.input_ids
        out.starts = self.starts[idx]
        out.lengths = self.lengths[idx]
        out.sample_ids = self.sample_ids[idx]
        out.special_tokens_mask = self.special_tokens_mask
        out.target_supervision = self.target_supervision
        out.owner_codes = self.owner_codes
        out.owner_names = self.owner_names
        out.bundle_hashes = None if self.bundle_hashes is None else self.bundle_hashes[idx]
        return out


def check_indices(indices: ArrayLike, n: int) -> NDArray[np.int64]:
    """Validate a selection of record indices: integers in range, each at most once."""
    idx = np.asarray(indices)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise BatchError("indices must be a flat sequence of integer record indices")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise BatchError(f"record indices must lie in 0..{n - 1}")
    if idx.size > 1 and np.unique(idx).shape[0] != idx.shape[0]:
        raise BatchError(
            "a record index is selected twice; every record appears at most once per batch "
            "(duplicate rows would double-count its loss)"
        )
    return idx


def _check_unique_ids(sample_ids: NDArray[np.str_]) -> None:
    if sample_ids.shape[0] < 2:
        return
    uniq, counts = np.unique(sample_ids, return_counts=True)
    if uniq.shape[0] != sample_ids.shape[0]:
        dup = str(uniq[np.argmax(counts > 1)])
        raise BatchError(
            f"sample_id {dup!r} appears more than once; every record in a batch needs a "
            "unique sample_id so each row can be traced to its source"
        )


def as_table(records: Sequence[SequenceRecord] | RecordTable) -> RecordTable:
    """Accept a ``RecordTable`` as is, or build one from ``SequenceRecord`` objects."""
    if isinstance(records, RecordTable):
        return records
    if isinstance(records, SequenceRecord):
        raise BatchError("pass a list of records, not a single SequenceRecord")
    return RecordTable.from_records(records)
