"""MinHash over shingles: the parameters, a readable reference and the Rust engine.

Signatures are identical to ``datasketch.MinHash(num_perm, seed, scheme)`` updated with
the UTF-8 bytes of the same shingles. The permutation parameters are drawn here with
numpy's ``RandomState(seed)`` exactly as datasketch draws them; the engine applies them.

Shingles: ``kind="word"`` joins ``n`` consecutive whitespace-separated
words with one space ("The cat sleeps." gives "The cat", "cat sleeps." for n=2);
``kind="char"`` takes ``n`` consecutive code points. A document shorter than ``n`` units
is one shingle; an empty one has none (its signature is all ``2**32 - 1``).

>>> params = MinHashParams(num_perm=16, shingle="word", n=2)
>>> sig = minhash_signatures(["The cat sleeps.", "The cat wakes."], params)
>>> sig.shape
(2, 16)
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..errors import ConfigError, InvalidInputError

SCHEMES = ("affine32", "legacy")
SHINGLE_KINDS = ("word", "char")
MERSENNE_PRIME = (1 << 61) - 1
MAX_HASH = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class MinHashParams:
    """Shingling and permutation settings; ``scheme`` follows datasketch 2.x names."""

    num_perm: int = 128
    seed: int = 1
    shingle: str = "word"
    n: int = 5
    scheme: str = "affine32"

    def __post_init__(self) -> None:
        for name, value, low in (("num_perm", self.num_perm, 1), ("n", self.n, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.shingle not in SHINGLE_KINDS:
            raise ConfigError(f"unknown shingle kind {self.shingle!r}; use one of {SHINGLE_KINDS}")
        if self.scheme not in SCHEMES:
            raise ConfigError(
                f"unknown MinHash scheme {self.scheme!r}; use 'affine32' (datasketch 2.x "
                "default) or 'legacy' (datasketch < 2.0)"
            )

    @cached_property
    def permutations(self) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
        """``(a, b)`` as datasketch's ``MinHash._init_permutations`` draws them."""
        gen = np.random.RandomState(self.seed)
        if self.scheme == "legacy":
            pairs = [
                (
                    gen.randint(1, MERSENNE_PRIME, dtype=np.uint64),
                    gen.randint(0, MERSENNE_PRIME, dtype=np.uint64),
                )
                for _ in range(self.num_perm)
            ]
            arr = np.array(pairs, dtype=np.uint64)
            return np.ascontiguousarray(arr[:, 0]), np.ascontiguousarray(arr[:, 1])
        a = gen.randint(0, 1 << 31, self.num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        b = gen.randint(0, 1 << 32, self.num_perm, dtype=np.uint32)
        return a.astype(np.uint64), b.astype(np.uint64)

    def to_json(self) -> dict[str, Any]:
        return {
            "num_perm": self.num_perm,
            "seed": self.seed,
            "shingle": self.shingle,
            "n": self.n,
            "scheme": self.scheme,
            "hash": "sha1_hash32",
        }


def shingles(text: str, *, kind: str = "word", n: int = 5) -> list[str]:
    """The shingles of ``text`` in order, repeats included (the reference definition)."""
    if kind == "word":
        units: Sequence[str] = text.split()
        joiner = " "
    elif kind == "char":
        units, joiner = text, ""
    else:
        raise ConfigError(f"unknown shingle kind {kind!r}; use one of {SHINGLE_KINDS}")
    if not units:
        return []
    windows = max(len(units) - n, 0) + 1
    return [joiner.join(units[i : i + n]) for i in range(windows)]


def jaccard(a: set[str], b: set[str]) -> float:
    """``|A & B| / |A | B|``; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MAX_HASH
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MAX_HASH
    return h ^ (h >> 16)


def reference_signature(text: str, params: MinHashParams) -> list[int]:
    """Pure-Python MinHash of one document (the executable spec of the engine)."""
    a, b = (x.tolist() for x in params.permutations)
    sig = [MAX_HASH] * params.num_perm
    for shingle in shingles(text, kind=params.shingle, n=params.n):
        digest = hashlib.sha1(shingle.encode("utf-8", "surrogatepass")).digest()
        hv = struct.unpack("<I", digest[:4])[0]
        for k in range(params.num_perm):
            if params.scheme == "legacy":
                # numpy's uint64 product wraps before the modulo; datasketch inherits that.
                phv = (((a[k] * hv + b[k]) & _MASK64) % MERSENNE_PRIME) & MAX_HASH
            else:
                phv = (a[k] * _fmix32(hv) + b[k]) & MAX_HASH
            sig[k] = min(sig[k], phv)
    return sig


def minhash_signatures(
    texts: Sequence[str], params: MinHashParams | None = None, *, threads: int | None = None
) -> NDArray[np.uint32]:
    """Signatures ``[len(texts), num_perm]`` (uint32) computed in Rust, GIL released."""
    p = params or MinHashParams()
    items = list(texts)
    a, b = p.permutations
    try:
        sig: NDArray[np.uint32] = _native.minhash_signatures(
            items, p.shingle, p.n, p.scheme, a, b, threads
        )
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"a text contains a lone surrogate: {exc}") from None
    except TypeError:
        # The native call refuses a non-str item; name it. (Checking every item up front
        # is a serial Python loop that the engine's threads would wait for.)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise InvalidInputError(f"text {i} is {type(t).__name__}, not str") from None
        raise
    return sig
