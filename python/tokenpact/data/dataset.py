"""Reading encoded datasets back, with the binding checks (fail closed).

:func:`open_dataset` refuses a tokenizer whose semantic hash is not the one the shards
were encoded with, a template hash that differs, and any shard file whose SHA-256 is
not the manifest's. :meth:`EncodedDataset.record_table` hands the records to
:mod:`tokenpact.batch` for padding or packing.

>>> ds = open_dataset("out/", tokenizer=tok)  # doctest: +SKIP
>>> plan = first_fit_decreasing(ds.lengths, capacity=2048)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..batch import RecordTable
from ..contract import DatasetDeclaration
from ..errors import ContractError
from .chat_shards import CONTROL_BIT, MASK_SUFFIX, SUPERVISED_BIT
from .corpus_manifest import read_json
from .encode import MANIFEST_KIND, MANIFEST_NAME, SHARD_FORMATS
from .shard_formats import ShardData, read_megatron_shard, read_parquet_shard

_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")


def _read_checked(root: Path, name: str, digest: str) -> bytes:
    if not name or set(name) - _NAME_OK or name.startswith("."):
        raise ContractError(f"manifest names a shard file {name!r} outside the dataset directory")
    try:
        data = (root / name).read_bytes()
    except FileNotFoundError:
        raise ContractError(f"shard file {name} is missing from {root}") from None
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != digest:
        raise ContractError(
            f"shard file {name} has digest {actual}, the manifest says {digest}; the file "
            "changed after encoding: re-encode the dataset or restore the file"
        )
    return data


class EncodedDataset:
    """Encoded records of a dataset directory, in ``doc_id`` order, with their manifest."""

    def __init__(
        self,
        root: Path,
        manifest: dict[str, Any],
        shards: list[ShardData],
        flags: NDArray[np.uint8] | None = None,
    ) -> None:
        self.root = root
        self.manifest = manifest
        self._shards = shards
        self.doc_ids: list[str] = [d for s in shards for d in s.doc_ids]
        self.lengths: NDArray[np.int64] = (
            np.concatenate([s.lengths for s in shards]) if shards else np.zeros(0, np.int64)
        )
        self.truncated: NDArray[np.bool_] = (
            np.concatenate([s.truncated for s in shards]) if shards else np.zeros(0, bool)
        )
        self.offsets = np.zeros(self.lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        dtype = np.dtype(manifest["dtype"])
        self.input_ids: NDArray[Any] = (
            np.concatenate([s.ids for s in shards]) if shards else np.zeros(0, dtype)
        )
        # Conversation datasets (tokenpact.data.encode_conversations) carry a flag byte
        # per token: supervised (the loss targets) and control.
        self.assistant_mask: NDArray[np.bool_] | None = None
        self.special_tokens_mask: NDArray[np.bool_] | None = None
        if flags is not None:
            self.assistant_mask = (flags & SUPERVISED_BIT) != 0
            self.special_tokens_mask = (flags & CONTROL_BIT) != 0

    @property
    def tokenizer_hash(self) -> str:
        return str(self.manifest["tokenizer_hash"])

    @property
    def declaration(self) -> DatasetDeclaration:
        return DatasetDeclaration.from_json(self.manifest["declaration"])

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __getitem__(self, i: int) -> NDArray[Any]:
        return self.input_ids[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self) -> Iterator[tuple[str, NDArray[Any]]]:
        for i, doc_id in enumerate(self.doc_ids):
            yield doc_id, self[i]

    def record_table(self, *, drop_empty: bool = True) -> RecordTable:
        """The records as a :class:`tokenpact.batch.RecordTable` (sample IDs = doc IDs).

        Empty records cannot be collated, so they are dropped unless ``drop_empty=False``.
        """
        keep = np.flatnonzero(self.lengths > 0) if drop_empty else np.arange(len(self))
        return RecordTable(
            self.input_ids.astype(np.int64),
            starts=self.offsets[:-1][keep],
            lengths=self.lengths[keep],
            sample_ids=[self.doc_ids[i] for i in keep.tolist()],
            special_tokens_mask=self.special_tokens_mask,
            target_supervision=self.assistant_mask,
        )


def open_dataset(
    path: str | os.PathLike[str],
    *,
    tokenizer: Any = None,
    tokenizer_hash: str | None = None,
    template_hash: str | None = None,
    verify: bool = True,
) -> EncodedDataset:
    """Open an encoded dataset; check its tokenizer binding and every shard digest.

    Pass the ``tokenizer`` you will train with (or its ``tokenizer_hash``): a different
    hash is a :class:`~tokenpact.errors.ContractError`. ``verify=False`` skips only the
    digest pass (never the binding check).
    """
    root = Path(path)
    manifest = read_json(root / MANIFEST_NAME)
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise ContractError(f"{root / MANIFEST_NAME} is not a tokenpact encoded-dataset manifest")
    if manifest.get("version") != 1 or manifest.get("format") not in SHARD_FORMATS:
        raise ContractError(f"unsupported dataset manifest version/format in {root}")
    expected = tokenizer_hash if tokenizer is None else tokenizer.semantic_hash
    if expected is not None and expected != manifest["tokenizer_hash"]:
        raise ContractError(
            f"the dataset was encoded with tokenizer {manifest['tokenizer_hash']}, not "
            f"{expected}; load the tokenizer it was made with or re-encode the dataset"
        )
    if template_hash is not None and template_hash != manifest["template_hash"]:
        raise ContractError(
            f"the dataset was encoded with template {manifest['template_hash']}, not "
            f"{template_hash}; re-encode it with the template you train with"
        )
    DatasetDeclaration.from_json(manifest["declaration"])  # schema-checked
    dtype = np.dtype(manifest["dtype"])
    shards = []
    masks = []
    supervised = manifest.get("supervision") is not None
    for entry in manifest["shards"]:
        files: dict[str, str] = entry["files"]
        blobs = {
            name: _read_checked(root, name, digest) if verify else (root / name).read_bytes()
            for name, digest in sorted(files.items())
        }
        mask = [v for k, v in blobs.items() if k.endswith(MASK_SUFFIX)]
        shards.append(
            _shard_from_files(
                manifest["format"],
                {k: v for k, v in blobs.items() if not k.endswith(MASK_SUFFIX)},
                dtype,
            )
        )
        if supervised:
            if len(mask) != 1 or len(mask[0]) != int(shards[-1].offsets[-1]):
                raise ContractError(
                    "a conversation shard's supervision mask is missing or does not match its "
                    "tokens; re-encode the dataset"
                )
            masks.append(np.frombuffer(mask[0], dtype=np.uint8))
    flags = None
    if supervised:
        flags = np.concatenate(masks) if masks else np.zeros(0, np.uint8)
    ds = EncodedDataset(root, manifest, shards, flags)
    if len(ds) != manifest["records"] or int(ds.lengths.sum()) != manifest["tokens"]:
        raise ContractError("the shards' record or token totals differ from the manifest")
    return ds


def _shard_from_files(fmt: str, blobs: dict[str, bytes], dtype: np.dtype[Any]) -> ShardData:
    if fmt == "parquet":
        (data,) = (v for k, v in blobs.items() if k.endswith(".parquet"))
        return read_parquet_shard(data, dtype)
    by_ext = {
        name.rsplit(".", 2)[-1] if not name.endswith(".docs.tsv") else "docs": v
        for name, v in blobs.items()
    }
    lines = by_ext["docs"].decode("utf-8").splitlines()
    rows = [line.split("\t") for line in lines]
    if any(len(r) != 2 or r[1] not in ("0", "1") for r in rows):
        raise ContractError("a shard's .docs.tsv is malformed (expected 'doc_id<TAB>0|1' lines)")
    doc_ids: Sequence[str] = [r[0] for r in rows]
    truncated = [r[1] == "1" for r in rows]
    shard = read_megatron_shard(by_ext["bin"], by_ext["idx"], list(doc_ids), truncated)
    if shard.ids.dtype != dtype:
        raise ContractError(f"shard IDs are {shard.ids.dtype}, the manifest says {dtype}")
    return shard


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
            bad = np.flatnonzero(~nonempty | (ds.input_ids[np.maximum(ends, 0)] != eod))
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
        first = ds.input_ids[np.minimum(starts, max(len(ds.input_ids) - 1, 0))]
        bad = np.flatnonzero(~nonempty | (first != bos))
        if bad.size:
            problems.append(
                f"add_bos is set but {bad.size} records do not start with BOS {bos}; "
                "re-encode the dataset"
            )
    return problems


def dataset_problems(root: Path, manifest: dict[str, Any], tokenizer: Any) -> dict[str, list[str]]:
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
        ds = open_dataset(root)
    except (ContractError, KeyError, TypeError, ValueError) as exc:
        out["shards"].append(str(exc))
        return out
    eos = tokenizer.eos_id if tokenizer is not None else None
    out["boundaries"] = boundary_problems(ds, eos_id=eos)
    return out
