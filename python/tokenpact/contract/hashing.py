"""Framed SHA-256 hashes and the named identities built on them.

``H_D(x) = SHA256(P || u32(len D) || D || u64(len C(x)) || C(x))`` where ``P`` is the
protocol prefix, ``D`` an ASCII domain naming the artifact class, and ``C(x)`` the
canonical JSON of ``x``. Lengths are big-endian. The length fields make
the concatenation unambiguous; the domain keeps one payload from meaning two things.

Hashes are written ``"sha256:<64 lowercase hex>"``. Raw file digests are plain SHA-256 of
the file bytes (what ``sha256sum`` prints), so anyone can check them without this library.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ContractError
from .canonical import canonical_bytes
from .semantics import HasConfig, config_of, ranks_payload, semantic_payload, vocabulary_payload

PROTOCOL_PREFIX = b"TOKENPACT-CONTRACT\x00"
HASH_PREFIX = "sha256:"

# Domains. A new meaning for a payload gets a new domain (or version suffix), never a reuse.
SEMANTIC = "tokenizer-semantic-v1"
RELEASE = "tokenizer-release-v1"
VOCABULARY = "tokenizer-vocabulary-v1"
RANKS = "tokenizer-ranks-v1"
TEMPLATE = "template-v1"
GOLDEN = "golden-v1"
GOLDEN_SOURCE = "golden-source-v1"
GOLDEN_IDS = "golden-ids-v1"
CORPUS = "corpus-v1"
DATASET = "dataset-v1"
CHECKPOINT = "checkpoint-v1"
BUNDLE = "bundle-v1"
TOKEN_IDS = "token-ids-v1"
NORMALIZATION = "tokenizer-normalization-v1"

_HASH_RE = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")
_DOMAIN_RE = re.compile(r"^[\x21-\x7e]{1,255}$")
_CHUNK = 1 << 20


def framed_digest(domain: str, payload: bytes) -> bytes:
    """Return the raw 32-byte framed digest of ``payload`` under ``domain``."""
    return framed_digest_parts(domain, (payload,))


def framed_digest_parts(domain: str, parts: Sequence[bytes]) -> bytes:
    """:func:`framed_digest` of ``b"".join(parts)``, without joining them (a payload
    written in pieces is hashed without a copy of it)."""
    h = framed_hasher(domain, sum(map(len, parts)))
    for part in parts:
        h.update(part)
    return h.digest()


def framed_hasher(domain: str, length: int) -> Any:
    """A SHA-256 object fed the frame of a ``length``-byte payload under ``domain``:
    ``update`` it with exactly that many payload bytes, then ``digest()`` is the framed
    digest (a payload read as a stream is hashed without holding it)."""
    if not _DOMAIN_RE.match(domain):
        raise ContractError(f"hash domain {domain!r} must be 1-255 printable ASCII characters")
    encoded = domain.encode("ascii")
    h = hashlib.sha256()
    h.update(PROTOCOL_PREFIX)
    h.update(len(encoded).to_bytes(4, "big"))
    h.update(encoded)
    h.update(length.to_bytes(8, "big"))
    return h


def framed_hash(domain: str, value: Any) -> str:
    """Return ``"sha256:<hex>"`` of the canonical JSON of ``value`` under ``domain``."""
    return HASH_PREFIX + framed_digest(domain, canonical_bytes(value)).hex()


def parse_hash(text: Any, *, what: str = "hash") -> str:
    """Return ``text`` as ``"sha256:<lowercase hex>"``; bare 64-hex digests are accepted."""
    match = _HASH_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ContractError(f"{what} {text!r} is not a SHA-256 digest; write 'sha256:<64 hex>'")
    return HASH_PREFIX + match.group(1).lower()


def is_hash(text: Any) -> bool:
    """Return True for a well-formed ``"sha256:<64 lowercase hex>"`` string."""
    return isinstance(text, str) and text.startswith(HASH_PREFIX) and bool(_HASH_RE.match(text))


def bytes_sha256(data: bytes) -> str:
    """Return the plain SHA-256 of ``data`` as ``"sha256:<hex>"``."""
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Return the plain SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            h.update(chunk)
    return HASH_PREFIX + h.hexdigest()


def check_release_path(path: Any) -> str:
    """Return ``path`` if it is a normalized relative POSIX path, else raise."""
    if not isinstance(path, str) or not path:
        raise ContractError(f"release file path {path!r} must be a non-empty string")
    pure = PurePosixPath(path)
    if (
        "\\" in path
        or pure.is_absolute()
        or pure.as_posix() != path
        or any(part in (".", "..") for part in pure.parts)
    ):
        raise ContractError(
            f"release file path {path!r} must be relative, use '/', and contain no '.' or '..'"
        )
    return path


def release_files(
    file_digests: Mapping[str, str] | Iterable[Mapping[str, Any]],
) -> list[dict[str, str]]:
    """Return file declarations ``[{"path", "sha256"}]`` sorted by path (a set, sealed).

    Accepts ``{path: digest}`` or an iterable of ``{"path", "sha256"}`` records (extra
    record keys such as ``bytes`` are ignored: only path and digest carry identity).
    """
    if isinstance(file_digests, Mapping):
        pairs = list(file_digests.items())
    else:
        pairs = [(record.get("path"), record.get("sha256")) for record in file_digests]
    files: dict[str, str] = {}
    for path, digest in pairs:
        checked = check_release_path(path)
        if checked in files:
            raise ContractError(f"release file {checked!r} is declared twice")
        files[checked] = parse_hash(digest, what=f"digest of {checked!r}")
    return [{"path": p, "sha256": files[p]} for p in sorted(files)]


def semantic_hash(tok_or_config: HasConfig | Mapping[str, Any]) -> str:
    """Return the tokenizer semantic hash: parsed behaviour, not file bytes.

    Reformatting a tokenizer file keeps it; swapping two IDs, changing a merge rank, a
    normalizer flag or a special token's role changes it.
    """
    return framed_hash(SEMANTIC, semantic_payload(tok_or_config))


def release_hash(
    semantic: str, file_digests: Mapping[str, str] | Iterable[Mapping[str, Any]]
) -> str:
    """Return the release hash: the semantic hash plus the raw digests of released files."""
    payload = {
        "semantic_hash": parse_hash(semantic, what="semantic hash"),
        "files": release_files(file_digests),
    }
    return framed_hash(RELEASE, payload)


def vocabulary_hash(tok_or_config: HasConfig | Mapping[str, Any]) -> str:
    """Return the hash of the ordered ID -> piece map (model pieces and special tokens)."""
    return framed_hash(VOCABULARY, vocabulary_payload(tok_or_config))


def ranks_hash(tok_or_config: HasConfig | Mapping[str, Any]) -> str:
    """Return the hash of the merge ranks (or tiktoken ranks / scores), in model order."""
    return framed_hash(RANKS, ranks_payload(tok_or_config))


def normalization_hash(tok_or_config: HasConfig | Mapping[str, Any]) -> str:
    """Return the hash of the normalizer component (``null``: no normalizer).

    Recorded beside the semantic hash where a record depends on normalized text (the
    stochastic segmentation manifest), so a mismatch can be blamed on normalization.
    """
    return framed_hash(NORMALIZATION, {"normalizer": config_of(tok_or_config).get("normalizer")})


def template_hash(template: Mapping[str, Any] | None) -> str:
    """Return the template hash; ``None`` ("no template") has an identity of its own.

    The modes are a set and are sealed in sorted order.
    """
    if template is None:
        return framed_hash(TEMPLATE, None)
    payload = dict(template)
    if isinstance(payload.get("modes"), list):
        payload["modes"] = sorted(payload["modes"])
    return framed_hash(TEMPLATE, payload)


def golden_hash(golden: Mapping[str, Any] | None) -> str:
    """Return the hash of a golden-vector document (inputs and expected outputs)."""
    return framed_hash(GOLDEN, None if golden is None else dict(golden))


def golden_source_hash(golden: Mapping[str, Any]) -> str:
    """Return the hash of the golden inputs only (comparable across tokenizers)."""
    cases = golden.get("cases", [])
    inputs = [{k: case.get(k) for k in ("name", "text", "codepoints", "policy")} for case in cases]
    return framed_hash(GOLDEN_SOURCE, inputs)


def golden_ids_hash(golden: Mapping[str, Any]) -> str:
    """Return the hash of the expected IDs of every golden case, in case order."""
    return framed_hash(GOLDEN_IDS, [case.get("ids") for case in golden.get("cases", [])])


def corpus_hash(corpus: Mapping[str, Any]) -> str:
    """Return the hash of a corpus manifest (document order is part of it)."""
    return framed_hash(CORPUS, dict(corpus))


def dataset_hash(dataset: Mapping[str, Any]) -> str:
    """Return the hash of an encoded-dataset declaration."""
    return framed_hash(DATASET, dict(dataset))


def checkpoint_hash(checkpoint: Mapping[str, Any]) -> str:
    """Return the hash of a checkpoint declaration."""
    return framed_hash(CHECKPOINT, dict(checkpoint))


def token_ids_hash(ids: Iterable[int]) -> str:
    """Return the hash of an ID sequence (stored instead of the IDs in declarations)."""
    return framed_hash(TOKEN_IDS, [int(i) for i in ids])


def bundle_hash(
    *,
    corpus: str,
    tokenizer_semantic: str,
    tokenizer_release: str,
    template: str,
    golden: str,
    dataset: Mapping[str, Any],
    checkpoint: Mapping[str, Any],
) -> str:
    """Return the bundle hash over every identity plus the dataset and checkpoint
    declarations themselves, so a changed row count changes the bundle identity."""
    payload = {
        "corpus": corpus,
        "tokenizer_semantic": tokenizer_semantic,
        "tokenizer_release": tokenizer_release,
        "template": template,
        "golden": golden,
        "dataset": dict(dataset),
        "checkpoint": dict(checkpoint),
    }
    return framed_hash(BUNDLE, payload)


def short_id(semantic: str) -> str:
    """Return a short display ID (``tok-`` + 16 hex) for logs; never use it as identity."""
    return "tok-" + parse_hash(semantic)[len(HASH_PREFIX) : len(HASH_PREFIX) + 16]


def directory_digests(directory: str | os.PathLike[str], paths: Iterable[str]) -> dict[str, str]:
    """Return ``{path: file_sha256}`` for release files under ``directory``."""
    root = Path(directory)
    return {p: file_sha256(root / check_release_path(p)) for p in paths}
