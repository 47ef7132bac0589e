"""A causal next-byte model: byte n-grams with declared additive smoothing and backoff.

``H_i``, the entropy of byte ``i``, comes from the ``context_bytes`` bytes *before* ``i``
only (a document is preceded by NUL bytes), so patch starts chosen from it never depend on
the future. The model is an artifact: :meth:`ByteNGramModel.save` writes
an ``.npz`` atomically and :attr:`ByteNGramModel.hash` names its exact counts.

Two evaluations of the same model exist on purpose: :meth:`ByteNGramModel.entropy` is the
readable per-context definition; :meth:`ByteNGramModel.entropy_table` precomputes every
context's entropy with numpy so patching is one table lookup per byte.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._io import atomic_write_bytes
from ..contract import framed_hash
from ..errors import ArtifactError, ConfigError, InvalidInputError

MODEL_HASH_DOMAIN = "byte-ngram-model-v1"
MAX_CONTEXT_BYTES = 3  # a dense table of 256**3 float32 entropies is 64 MiB
_FORMAT = "tokenpact.byte_ngram"
_UNIFORM_BITS = 8.0  # entropy of 256 equally likely bytes


@dataclass(frozen=True, kw_only=True)
class Smoothing:
    """Additive (Lidstone) smoothing: ``p(v|c) = (count(c, v) + alpha) / (N(c) + 256 alpha)``.

    With ``backoff`` an unseen context uses its longest seen suffix (dropping the oldest
    byte first); without it an unseen context is uniform (8 bits).
    """

    alpha: float = 0.1
    backoff: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.alpha, (int, float)) or not 0 <= self.alpha < math.inf:
            raise ConfigError(f"alpha must be a finite number >= 0, got {self.alpha!r}")

    def to_config(self) -> dict[str, Any]:
        return {"kind": "additive", "alpha": repr(float(self.alpha)), "backoff": self.backoff}


def context_codes(arr: NDArray[np.uint8], k: int, history: bytes = b"") -> NDArray[np.uint32]:
    """``codes[i]`` = bytes ``i-k .. i-1`` as a big-endian integer (oldest byte most
    significant), reading ``history`` (then NUL padding) before ``arr[0]``."""
    n = int(arr.size)
    if k == 0:
        return np.zeros(n, dtype=np.uint32)
    head = np.frombuffer((b"\x00" * k + bytes(history))[-k:], dtype=np.uint8)
    padded = np.concatenate((head, arr))
    codes = padded[:n].astype(np.uint32)
    for j in range(1, k):
        codes <<= 8
        codes |= padded[j : j + n]
    return codes


def _as_document(doc: bytes | str) -> NDArray[np.uint8]:
    if isinstance(doc, str):
        try:
            doc = doc.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(
                "a training document has a lone surrogate; repair it or pass bytes"
            ) from None
    if not isinstance(doc, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"training documents are str or bytes, got {type(doc).__name__}")
    return np.frombuffer(bytes(doc), dtype=np.uint8)


def _merge(keys: NDArray[np.int64], counts: NDArray[np.int64]) -> tuple[NDArray[np.int64], ...]:
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts, minlength=unique.size).astype(np.int64)


def _group_entropy(
    keys: NDArray[np.int64], counts: NDArray[np.int64], alpha: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Entropy (bits) of every context present in sorted ``keys`` (``context << 8 | byte``)."""
    contexts = keys >> 8
    first = np.flatnonzero(np.concatenate(([True], contexts[1:] != contexts[:-1])))
    total = np.add.reduceat(counts, first).astype(np.float64)
    observed = np.diff(np.append(first, keys.size))
    denom = total + 256.0 * alpha
    p = (counts + alpha) / np.repeat(denom, observed)
    h = -np.add.reduceat(p * np.log2(p), first)
    if alpha > 0:
        p0 = alpha / denom
        h -= (256 - observed) * p0 * np.log2(p0)
    return contexts[first], h


class ByteNGramModel:
    """Next-byte counts for contexts of exactly ``context_bytes`` bytes (NUL-padded)."""

    def __init__(
        self,
        *,
        context_bytes: int,
        smoothing: Smoothing,
        keys: NDArray[np.int64],
        counts: NDArray[np.int64],
    ) -> None:
        if not isinstance(context_bytes, int) or not 0 <= context_bytes <= MAX_CONTEXT_BYTES:
            raise ConfigError(
                f"context_bytes must be 0..{MAX_CONTEXT_BYTES}, got {context_bytes!r}; longer "
                "contexts need a hashed table, which this model does not declare"
            )
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        limit = 256 ** (context_bytes + 1)
        if keys.shape != counts.shape or keys.ndim != 1:
            raise ArtifactError("n-gram keys and counts must be 1-D arrays of equal length")
        if keys.size and (keys[0] < 0 or keys[-1] >= limit or np.any(np.diff(keys) <= 0)):
            raise ArtifactError(f"n-gram keys must be strictly increasing in 0..{limit - 1}")
        if np.any(counts <= 0):
            raise ArtifactError("n-gram counts must be positive")
        self.context_bytes = context_bytes
        self.smoothing = smoothing
        self.keys = keys
        self.counts = counts
        self.keys.setflags(write=False)
        self.counts.setflags(write=False)

    # ----------------------------------------------------------------- training
    @classmethod
    def train(
        cls,
        documents: Iterable[bytes | str],
        *,
        context_bytes: int = 2,
        smoothing: Smoothing | None = None,
        progress: bool = False,
    ) -> ByteNGramModel:
        """Count ``(previous context_bytes bytes, next byte)`` over documents."""
        if not isinstance(context_bytes, int) or not 0 <= context_bytes <= MAX_CONTEXT_BYTES:
            raise ConfigError(f"context_bytes must be 0..{MAX_CONTEXT_BYTES}")
        if isinstance(documents, (str, bytes, bytearray)):
            raise InvalidInputError(
                "documents must be an iterable of texts; wrap a single text in a list"
            )
        from tqdm.auto import tqdm

        keys = np.zeros(0, dtype=np.int64)
        counts = np.zeros(0, dtype=np.int64)
        pending: list[NDArray[np.int64]] = []
        size = 0
        for doc in tqdm(documents, desc="byte n-grams", unit="doc", disable=not progress):
            arr = _as_document(doc)
            codes = context_codes(arr, context_bytes).astype(np.int64)
            pending.append((codes << 8) | arr)
            size += arr.size
            if size > 1 << 24:  # merge every ~16 MB so memory stays bounded
                keys, counts = _merge(
                    np.concatenate([keys, *pending]),
                    np.concatenate([counts, *(np.ones(p.size, np.int64) for p in pending)]),
                )
                pending, size = [], 0
        keys, counts = _merge(
            np.concatenate([keys, *pending]),
            np.concatenate([counts, *(np.ones(p.size, np.int64) for p in pending)]),
        )
        return cls(
            context_bytes=context_bytes,
            smoothing=smoothing or Smoothing(),
            keys=keys,
            counts=counts,
        )

    # ----------------------------------------------------------------- identity
    def to_config(self) -> dict[str, Any]:
        return {
            "kind": _FORMAT,
            "version": 1,
            "context_bytes": self.context_bytes,
            "context_padding": "nul",
            "entropy_unit": "bits",
            "smoothing": self.smoothing.to_config(),
        }

    @cached_property
    def hash(self) -> str:
        """Framed SHA-256 of the configuration and the exact counts."""
        digest = hashlib.sha256()
        digest.update(self.keys.astype("<i8").tobytes())
        digest.update(self.counts.astype("<i8").tobytes())
        return framed_hash(
            MODEL_HASH_DOMAIN, {"config": self.to_config(), "counts_sha256": digest.hexdigest()}
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model as ``.npz`` atomically (temp file + ``os.replace``)."""
        target = Path(path)
        config = json.dumps({**self.to_config(), "hash": self.hash}, sort_keys=True)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            config=np.frombuffer(config.encode("utf-8"), dtype=np.uint8),
            keys=self.keys.astype("<i8"),
            counts=self.counts.astype("<i8"),
        )
        atomic_write_bytes(target, buffer.getvalue())
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ByteNGramModel:
        """Read a saved model and verify its recorded hash."""
        try:
            with np.load(Path(path), allow_pickle=False) as archive:
                config = json.loads(archive["config"].tobytes().decode("utf-8"))
                keys, counts = archive["keys"], archive["counts"]
        except (OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
            raise ArtifactError(f"{path} is not a byte n-gram model ({exc})") from None
        if not isinstance(config, dict) or config.get("kind") != _FORMAT:
            raise ArtifactError(f"{path} is not a byte n-gram model (kind {config!r})")
        try:
            smoothing_cfg = config["smoothing"]
            smoothing = Smoothing(
                alpha=float(smoothing_cfg["alpha"]), backoff=bool(smoothing_cfg["backoff"])
            )
            model = cls(
                context_bytes=int(config["context_bytes"]),
                smoothing=smoothing,
                keys=keys,
                counts=counts,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"{path} has a damaged configuration ({exc})") from None
        if config.get("hash") != model.hash:
            raise ArtifactError(
                f"{path} records hash {config.get('hash')} but its counts hash to {model.hash}; "
                "the file was altered or truncated: retrain or restore it"
            )
        return model

    # ----------------------------------------------------------------- reference
    @cached_property
    def _count_maps(self) -> list[dict[bytes, dict[int, int]]]:
        """``maps[j][context of j bytes] = {next byte: count}`` for j = 0..context_bytes."""
        k = self.context_bytes
        maps: list[dict[bytes, dict[int, int]]] = [{} for _ in range(k + 1)]
        for key, count in zip(self.keys.tolist(), self.counts.tolist(), strict=True):
            context = (key >> 8).to_bytes(k, "big") if k else b""
            for j in range(k + 1):
                suffix = context[k - j :]
                row = maps[j].setdefault(suffix, {})
                row[key & 0xFF] = row.get(key & 0xFF, 0) + count
        return maps

    def distribution(self, context: bytes) -> list[float]:
        """``p(next byte | last context_bytes bytes of context)``: the readable definition."""
        k = self.context_bytes
        padded = (b"\x00" * k + bytes(context))[len(context) :] if k else b""
        orders = range(k, -1, -1) if self.smoothing.backoff else (k,)
        row: dict[int, int] = {}
        for j in orders:
            row = self._count_maps[j].get(padded[k - j :], {})
            if row:
                break
        total = sum(row.values())
        alpha = float(self.smoothing.alpha)
        if total + 256 * alpha == 0:
            return [1 / 256] * 256
        return [(row.get(v, 0) + alpha) / (total + 256 * alpha) for v in range(256)]

    def entropy(self, context: bytes) -> float:
        """Next-byte entropy in bits after ``context`` (rounded to float32, as the table)."""
        bits = -math.fsum(p * math.log2(p) for p in self.distribution(context) if p > 0)
        return float(np.float32(bits))

    # ----------------------------------------------------------------- fast table
    @cached_property
    def entropy_table(self) -> NDArray[np.float32]:
        """``table[code]`` = entropy after the context whose big-endian code is ``code``."""
        k = self.context_bytes
        alpha = float(self.smoothing.alpha)
        table = np.full(1, _UNIFORM_BITS, dtype=np.float64)
        for j in range(k + 1):
            keys, counts = self.keys, self.counts
            if j < k:  # marginalize the oldest k - j context bytes away
                keys, counts = _merge(keys % (256 ** (j + 1)), counts)
            if self.smoothing.backoff and j > 0:
                table = np.tile(table, 256)  # code = older byte * 256**(j-1) + suffix
            else:
                table = np.full(256**j, _UNIFORM_BITS, dtype=np.float64)
            if keys.size:
                contexts, h = _group_entropy(keys, counts, alpha)
                table[contexts] = h
        out = table.astype(np.float32)
        out.setflags(write=False)
        return out
