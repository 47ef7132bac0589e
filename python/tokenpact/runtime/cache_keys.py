"""Prefix-cache block keys.

A key chain over the complete blocks of a compiled prompt: each block's key hashes the
namespace digest, the previous block's key and the block's exact IDs, so a change in
block ``j`` changes every key from ``j`` on (prefix reuse, not unordered block reuse).
The tail (``len(ids) % block_size`` IDs) is not keyed.

Two namespaces:

- ``minimal`` (model-state identity): model revision, adapter, position/context
  policy, extra model-input identity. Equal IDs under a compiler-only migration keep
  hitting the cache.
- ``conservative`` (release/provenance identity): every minimal field plus the
  tokenizer semantic hash, the template hash and any extra request fields (a cache
  salt, a tenant). Release isolation and rollback are simpler; hits are fewer.

``vllm_block_hashes`` reproduces vLLM's own chain (``hash_block_tokens`` with
``sha256_cbor`` or ``sha256``) for interoperability; see docs/RUNTIME.md for the
version checked.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .. import _native
from ..contract.hashing import framed_digest, framed_hash
from ..errors import ConfigError, UnknownTokenError

__all__ = [
    "BlockKeys",
    "CacheNamespace",
    "block_keys",
    "cbor_encode",
    "vllm_block_hashes",
    "vllm_none_hash",
]

NAMESPACE_DOMAIN = "prefix-cache-namespace-v1"
BLOCK_DOMAIN = "prefix-cache-block-v1"
ROOT = bytes(32)


@dataclass(frozen=True)
class CacheNamespace:
    """The state-changing identity a cache key is computed under."""

    model: str
    position_scheme: str = "absolute"
    adapter: str | None = None
    extra_inputs: str | None = None
    tokenizer_hash: str | None = None
    template_hash: str | None = None
    request_fields: Mapping[str, str] = field(default_factory=dict)
    mode: Literal["minimal", "conservative"] = "minimal"

    def __post_init__(self) -> None:
        if self.mode not in ("minimal", "conservative"):
            raise ConfigError(f'mode must be "minimal" or "conservative", not {self.mode!r}')
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError("model must name the model revision (a non-empty string)")
        if self.mode == "conservative" and (not self.tokenizer_hash or not self.template_hash):
            raise ConfigError(
                "a conservative namespace needs tokenizer_hash and template_hash "
                "(tok.semantic_hash and tokenpact.contract.template_hash(...))"
            )

    def to_config(self) -> dict[str, Any]:
        """The fields the key covers (the key policy is itself versioned state)."""
        document: dict[str, Any] = {
            "mode": self.mode,
            "model": self.model,
            "adapter": self.adapter,
            "position_scheme": self.position_scheme,
            "extra_inputs": self.extra_inputs,
        }
        if self.mode == "conservative":
            document["tokenizer_hash"] = self.tokenizer_hash
            document["template_hash"] = self.template_hash
            document["request_fields"] = dict(sorted(self.request_fields.items()))
        return document

    @property
    def hash(self) -> str:
        """``sha256:<hex>`` of the namespace (what the first block's key depends on)."""
        return framed_hash(NAMESPACE_DOMAIN, self.to_config())

    @property
    def digest(self) -> bytes:
        return bytes.fromhex(self.hash.split(":", 1)[1])


@dataclass(frozen=True)
class BlockKeys:
    """Keys of the complete blocks and the IDs of the unkeyed tail."""

    keys: tuple[bytes, ...]
    block_size: int
    tail: tuple[int, ...]

    def hex(self) -> list[str]:
        return [k.hex() for k in self.keys]

    def shared_prefix(self, other: BlockKeys) -> int:
        """How many leading blocks ``other`` can reuse (equal keys from the start)."""
        n = 0
        for a, b in zip(self.keys, other.keys, strict=False):
            if a != b:
                break
            n += 1
        return n


def _id_array(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = ids if isinstance(ids, np.ndarray) else np.asarray(list(ids))
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise UnknownTokenError("token IDs must be a flat sequence of ints")
    if int(arr.min()) < 0 or int(arr.max()) >= 2**32:
        raise UnknownTokenError("token IDs must be in 0..2**32-1")
    return np.ascontiguousarray(arr, dtype=np.uint32)


def _block_size(block_size: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ConfigError(f"block_size must be a positive int, not {block_size!r}")
    return block_size


def _split(keys: bytes, arr: np.ndarray, block_size: int) -> BlockKeys:
    full = len(arr) // block_size
    return BlockKeys(
        tuple(keys[i * 32 : (i + 1) * 32] for i in range(full)),
        block_size,
        tuple(int(i) for i in arr[full * block_size :]),
    )


def block_keys(
    ids: Sequence[int] | np.ndarray, *, block_size: int, namespace: CacheNamespace
) -> BlockKeys:
    """The key chain of the complete blocks of ``ids`` under ``namespace``.

    >>> ns = CacheNamespace(model="m@rev1")
    >>> len(block_keys(list(range(60)), block_size=8, namespace=ns).keys)
    7
    """
    size = _block_size(block_size)
    arr = _id_array(ids)
    return _split(_native.block_keys_tokenpact(arr, size, namespace.digest), arr, size)


def block_keys_reference(
    ids: Sequence[int], *, block_size: int, namespace: CacheNamespace
) -> list[bytes]:
    """The definition, in Python: ``K_i = H_D(z || K_{i-1} || ids_i)`` (IDs as big-endian
    u32) with the contract's framed SHA-256."""
    parent, keys = ROOT, []
    for i in range(len(ids) // block_size):
        block = ids[i * block_size : (i + 1) * block_size]
        payload = namespace.digest + parent + b"".join(int(t).to_bytes(4, "big") for t in block)
        parent = framed_digest(BLOCK_DOMAIN, payload)
        keys.append(parent)
    return keys


# ---------------------------------------------------------------- vLLM compatibility
def cbor_encode(value: Any) -> bytes:
    """Canonical CBOR (RFC 8949 shortest form) of None, bool, int, str, bytes and
    tuples/lists of those: the subset vLLM's block hashes serialize."""
    out = bytearray()
    _cbor(value, out)
    return bytes(out)


def _head(major: int, n: int, out: bytearray) -> None:
    m = major << 5
    if n < 24:
        out.append(m | n)
    elif n < 1 << 8:
        out += bytes([m | 24, n])
    elif n < 1 << 16:
        out += bytes([m | 25]) + n.to_bytes(2, "big")
    elif n < 1 << 32:
        out += bytes([m | 26]) + n.to_bytes(4, "big")
    elif n < 1 << 64:
        out += bytes([m | 27]) + n.to_bytes(8, "big")
    else:
        raise ConfigError(f"{n} does not fit a CBOR integer (64 bits)")


def _cbor(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xF6)
    elif value is True or value is False:
        out.append(0xF5 if value else 0xF4)
    elif isinstance(value, int):
        _head(0, value, out) if value >= 0 else _head(1, -1 - value, out)
    elif isinstance(value, bytes):
        _head(2, len(value), out)
        out += value
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _head(3, len(data), out)
        out += data
    elif isinstance(value, (tuple, list)):
        _head(4, len(value), out)
        for item in value:
            _cbor(item, out)
    else:
        raise ConfigError(f"extra keys must be None, int, str, bytes or tuples; got {value!r}")


def sha256_cbor(value: Any) -> bytes:
    """vLLM's ``sha256_cbor``: SHA-256 of the canonical CBOR of ``value``."""
    return hashlib.sha256(cbor_encode(value)).digest()


VllmHashAlgo = Literal["sha256_cbor", "sha256"]
VllmExtraKeys = Literal["tagged", "untagged"]

# vLLM's NONE_HASH seed for cryptographic hashes when PYTHONHASHSEED is unset
# (vllm/v1/core/kv_cache_utils.py DEFAULT_NONE_HASH_SEED).
VLLM_NONE_HASH_SEED = "vllm-none-hash"


def _vllm_hash(hash_algo: VllmHashAlgo) -> Callable[[Any], bytes]:
    if hash_algo == "sha256_cbor":
        return sha256_cbor
    if hash_algo == "sha256":
        return _sha256_pickle
    raise ConfigError(
        f'hash_algo must be "sha256_cbor" or "sha256" (vLLM\'s prefix_caching_hash_algo), '
        f"not {hash_algo!r}"
    )


def _sha256_pickle(value: Any) -> bytes:
    """vLLM's ``sha256``: SHA-256 of the highest-protocol pickle (what a default vLLM
    deployment, ``prefix_caching_hash_algo="sha256"``, uses). Pickling tuples of
    ints, strs and bytes is deterministic for a given protocol."""
    return hashlib.sha256(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def vllm_none_hash(
    python_hash_seed: str | None = None, *, hash_algo: VllmHashAlgo = "sha256_cbor"
) -> bytes:
    """vLLM's ``NONE_HASH``: the hash of ``PYTHONHASHSEED`` when the server sets it, else
    of the fixed seed ``"vllm-none-hash"`` (what current vLLM uses for cryptographic
    hashes, so independent servers share keys; before it drew a random seed per process
    without ``PYTHONHASHSEED``)."""
    seed = VLLM_NONE_HASH_SEED if python_hash_seed is None else python_hash_seed
    return _vllm_hash(hash_algo)(seed)


def _vllm_extra_keys(
    rule: VllmExtraKeys,
    lora_name: str | None,
    lora_path: str | None,
    cache_salt: str | None,
) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
    """(extra keys of the first block, of every later block), as vLLM builds them."""
    if rule == "tagged":
        if lora_name and lora_path is None:
            raise ConfigError(
                "vLLM keys a LoRA adapter by name and path: pass lora_path=... (the "
                "LoRARequest's lora_path), or extra_keys='untagged' for the older rule"
            )
        rest: tuple[Any, ...] = (("lora", lora_name, lora_path),) if lora_name else ()
        first = rest + ((("cache_salt", cache_salt),) if cache_salt else ())
    elif rule == "untagged":
        rest = (lora_name,) if lora_name else ()
        first = rest + ((cache_salt,) if cache_salt else ())
    else:
        raise ConfigError(f'extra_keys must be "tagged" or "untagged", not {rule!r}')
    return first or None, rest or None


def vllm_block_hashes(
    ids: Sequence[int] | np.ndarray,
    *,
    block_size: int = 16,
    none_hash: bytes | None = None,
    lora_name: str | None = None,
    lora_path: str | None = None,
    cache_salt: str | None = None,
    hash_algo: VllmHashAlgo = "sha256_cbor",
    extra_keys: VllmExtraKeys = "tagged",
) -> BlockKeys:
    """vLLM's block hashes (``hash_block_tokens``): each key is
    ``hash((parent, tuple(block_ids), extra_keys))``, the first parent being
    ``none_hash`` (default: :func:`vllm_none_hash` of the fixed seed, as a vLLM server
    without ``PYTHONHASHSEED``).

    ``extra_keys="tagged"`` (current vLLM): ``("lora", lora_name, lora_path)`` on every
    block and ``("cache_salt", cache_salt)`` on the first, or ``None``;
    ``"untagged"`` (the older rule): ``(lora_name,)`` plus the bare salt on the first
    block. ``hash_algo``: vLLM's ``prefix_caching_hash_algo``, ``"sha256_cbor"`` or
    ``"sha256"`` (pickle; vLLM's default). Multimodal and prompt-embedding keys are not
    supported."""
    size = _block_size(block_size)
    arr = _id_array(ids)
    first, rest = _vllm_extra_keys(extra_keys, lora_name, lora_path, cache_salt)
    if none_hash is None:
        none_hash = vllm_none_hash(hash_algo=hash_algo)
    if hash_algo == "sha256_cbor":
        keys = _native.block_keys_vllm(
            arr, size, bytes(none_hash), cbor_encode(first), cbor_encode(rest)
        )
        return _split(keys, arr, size)
    fn = _vllm_hash(hash_algo)
    parent, out = bytes(none_hash), bytearray()
    values = arr.tolist()
    for i in range(len(values) // size):
        parent = fn((parent, tuple(values[i * size : (i + 1) * size]), rest if i else first))
        out += parent
    return _split(bytes(out), arr, size)


def vllm_block_hashes_reference(
    ids: Iterable[int],
    *,
    block_size: int,
    none_hash: bytes,
    extra_keys: Any = None,
    first_extra_keys: Any = None,
    hash_algo: VllmHashAlgo = "sha256_cbor",
) -> list[bytes]:
    """vLLM's loop in Python (``get_request_block_hasher`` without multimodal inputs);
    ``first_extra_keys`` (default: ``extra_keys``) for the first block."""
    fn = _vllm_hash(hash_algo)
    ids = list(ids)
    parent, keys = none_hash, []
    for i in range(len(ids) // block_size):
        block = tuple(ids[i * block_size : (i + 1) * block_size])
        extra = first_extra_keys if i == 0 and first_extra_keys is not None else extra_keys
        parent = fn((parent, block, extra))
        keys.append(parent)
    return keys
