"""Finding the dataset declaration in what a user points at, and checking shard digests.

``encode-dataset`` writes one directory: ``dataset.json`` (the encoded-dataset manifest,
which carries the dataset declaration under ``"declaration"``), ``corpus.json`` and the
shard files. Every command that takes a dataset accepts any of them: the directory,
``dataset.json``, a shard file (``shard-00000.parquet``, ``.bin``, ``.idx``,
``.docs.tsv``), or a bare declaration file.

>>> found = read_dataset("out/")  # doctest: +SKIP
>>> found.declaration["tokenizer_hash"], found.manifest["format"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ContractError
from .canonical import CanonicalError, check_canonical, loads
from .hashing import file_sha256

ENCODED_DATASET_KIND = "tokenpact.encoded_dataset"
DATASET_MANIFEST = "dataset.json"
SHARD_SUFFIXES = (".parquet", ".bin", ".idx", ".docs.tsv")
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")


@dataclass(frozen=True)
class FoundDataset:
    """The declaration, and the manifest and directory when the input was an encoded
    dataset (``manifest`` and ``root`` are ``None`` for a bare declaration file)."""

    path: Path
    declaration: dict[str, Any]
    manifest: dict[str, Any] | None
    root: Path | None


def is_shard_file(path: Path) -> bool:
    return path.name.startswith("shard-") and path.name.endswith(SHARD_SUFFIXES)


def dataset_manifest_path(path: str | os.PathLike[str]) -> Path:
    """The JSON file that declares the dataset ``path`` names (directory, shard, file)."""
    p = Path(path)
    if p.is_dir():
        candidate = p / DATASET_MANIFEST
        if not candidate.is_file():
            raise ContractError(
                f"{p} holds no {DATASET_MANIFEST}; pass an encode-dataset output directory "
                "or a dataset declaration file"
            )
        return candidate
    if is_shard_file(p):
        candidate = p.parent / DATASET_MANIFEST
        if not candidate.is_file():
            raise ContractError(
                f"{p} is a shard file but {candidate} is missing; nothing binds the shard to "
                "a tokenizer: restore dataset.json or re-encode the dataset"
            )
        return candidate
    return p


def read_dataset(path: str | os.PathLike[str]) -> FoundDataset:
    """Read the dataset declaration behind ``path`` (see the module doc).

    The manifest's own fields are not canonical-profile values everywhere (manifests
    written before token shares became strings hold floats), so an encoded-dataset
    manifest is parsed as plain JSON and only its declaration is held to the profile.
    """
    file = dataset_manifest_path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ContractError(f"cannot read the dataset declaration {file}: {exc}") from None
    try:
        document = loads(data)
    except CanonicalError as strict_error:
        try:
            document = json.loads(data)
        except ValueError:
            raise ContractError(f"cannot read {file}: {strict_error}") from None
        if not (isinstance(document, dict) and document.get("kind") == ENCODED_DATASET_KIND):
            raise ContractError(f"cannot read {file}: {strict_error}") from None
    if isinstance(document, dict) and document.get("kind") == ENCODED_DATASET_KIND:
        declaration = document.get("declaration")
        if not isinstance(declaration, dict):
            raise ContractError(f"{file} has no declaration object; re-encode the dataset")
        try:
            check_canonical(declaration)
        except CanonicalError as exc:
            raise ContractError(f"the declaration in {file} is malformed: {exc}") from None
        return FoundDataset(file, declaration, document, file.parent)
    if not isinstance(document, dict):
        raise ContractError(f"{file} is not a dataset declaration (not a JSON object)")
    return FoundDataset(file, document, None, None)


def shard_digest_problems(root: Path, manifest: dict[str, Any]) -> list[str]:
    """Every shard file the manifest lists whose bytes differ from its recorded digest
    (or that is missing), as readable problems; an empty list means all match."""
    problems = []
    shards = manifest.get("shards")
    if not isinstance(shards, list):
        return [f"{root / DATASET_MANIFEST} lists no shards; re-encode the dataset"]
    for entry in shards:
        files = entry.get("files") if isinstance(entry, dict) else None
        if not isinstance(files, dict):
            problems.append("a shard entry has no files; re-encode the dataset")
            continue
        for name, digest in sorted(files.items()):
            if not name or set(name) - _NAME_OK or name.startswith("."):
                problems.append(f"the manifest names a shard file {name!r} outside the directory")
                continue
            try:
                actual = file_sha256(root / name)
            except FileNotFoundError:
                problems.append(f"shard file {name} is missing")
                continue
            if actual != digest:
                problems.append(
                    f"shard file {name} has digest {actual}, the manifest says {digest} "
                    "(changed after encoding: re-encode or restore it)"
                )
    return problems
