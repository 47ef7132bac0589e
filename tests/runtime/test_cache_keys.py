"""Prefix-cache keys: the seed's 60-ID probe table exactly, the Rust chain against its
Python definition, and vLLM's sha256_cbor chain on golden vectors and against cbor2."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.errors import ConfigError
from tokenpact.runtime.cache_keys import (
    CacheNamespace,
    block_keys,
    block_keys_reference,
    cbor_encode,
    vllm_block_hashes,
    vllm_block_hashes_reference,
    vllm_none_hash,
)

TOKENIZER = "sha256:" + "1" * 64
TEMPLATE = "sha256:" + "2" * 64


def _prefill_prompt() -> list[int]:
    """The seed's assistant_prefill case: a user question and an open assistant answer
    through the seed grammar, exactly sixty IDs with the boundary at 60."""
    import tokenpact as tp
    from tokenpact.chat import SEED_SPECIAL_TOKENS, SequenceCompiler, assistant, user

    tok = tp.Tokenizer.from_merges([], special_tokens=SEED_SPECIAL_TOKENS)
    conv = SequenceCompiler(tok).compile(
        [user("Give the answer as JSON, ok?"), assistant('{answer:"')], mode="prefill"
    )
    assert len(conv.input_ids) == 60 and conv.prompt_boundary == 60
    return list(conv.input_ids)


def _namespaces(**change: str) -> tuple[CacheNamespace, CacheNamespace]:
    fields = {
        "model": "seed-model@rev1",
        "adapter": None,
        "position_scheme": "rope-absolute",
        "extra_inputs": None,
        "tokenizer_hash": TOKENIZER,
        "template_hash": TEMPLATE,
    }
    fields.update(change)
    return (
        CacheNamespace(**fields, mode="minimal"),  # type: ignore[arg-type]
        CacheNamespace(**fields, mode="conservative"),  # type: ignore[arg-type]
    )


def test_seed_probe_table() -> None:
    ids = _prefill_prompt()
    base_min, base_con = _namespaces()
    stored = {
        "minimal": block_keys(ids, block_size=8, namespace=base_min),
        "conservative": block_keys(ids, block_size=8, namespace=base_con),
    }
    assert len(stored["minimal"].keys) == 7 and len(stored["minimal"].tail) == 4
    changed = list(ids)
    changed[18] ^= 1
    probes = {
        "identical request": (ids, {}, (7, 7)),
        "token at position 18 changes": (changed, {}, (2, 2)),
        "different template provenance": (ids, {"template_hash": "sha256:" + "3" * 64}, (7, 0)),
        "different tokenizer provenance": (ids, {"tokenizer_hash": "sha256:" + "4" * 64}, (7, 0)),
        "model changes": (ids, {"model": "seed-model@rev2"}, (0, 0)),
        "adapter changes": (ids, {"adapter": "lora-a"}, (0, 0)),
        "position changes": (ids, {"position_scheme": "rope-scaled-2x"}, (0, 0)),
        "extra input changes": (ids, {"extra_inputs": "image:abc"}, (0, 0)),
    }
    for name, (probe_ids, change, expected) in probes.items():
        ns_min, ns_con = _namespaces(**change)
        hits = (
            stored["minimal"].shared_prefix(block_keys(probe_ids, block_size=8, namespace=ns_min)),
            stored["conservative"].shared_prefix(
                block_keys(probe_ids, block_size=8, namespace=ns_con)
            ),
        )
        assert hits == expected, name


@settings(max_examples=60)
@given(
    ids=st.lists(st.integers(0, 2**32 - 1), max_size=200),
    block_size=st.integers(1, 20),
    model=st.text(min_size=1, max_size=8),
)
def test_engine_equals_definition(ids: list[int], block_size: int, model: str) -> None:
    ns = CacheNamespace(model=model)
    got = block_keys(np.asarray(ids, dtype=np.uint64), block_size=block_size, namespace=ns)
    assert list(got.keys) == block_keys_reference(ids, block_size=block_size, namespace=ns)
    assert got.tail == tuple(ids[len(got.keys) * block_size :])


def test_bad_arguments_are_typed() -> None:
    ns = CacheNamespace(model="m")
    with pytest.raises(ConfigError):
        block_keys([1, 2], block_size=0, namespace=ns)
    with pytest.raises(ConfigError):
        CacheNamespace(model="m", mode="conservative")  # no tokenizer/template identity
    with pytest.raises(ConfigError):
        CacheNamespace(model="")


# The older rule (extra_keys="untagged"): vLLM main at commit
# 001cabc1be16a59a70d720ed61a13b678c060a18 (vllm/v1/core/kv_cache_utils.py
# hash_block_tokens, vllm/utils/hashing.py sha256_cbor), with PYTHONHASHSEED=0. Vectors
# computed from that algorithm with cbor2 5.7.1. The current rule is checked against
# vLLM's own functions in test_vllm_differential.py.
NONE_HASH_SEED_0 = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"
GOLDEN_PLAIN = [
    "d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c",
    "fedd9e4abebebbe6f6cf96b682f08d316063fe2f22a5c552192dd62904fcccac",
]
GOLDEN_LORA_SALT = [
    "741fd063cde0fcc899e3007d5c292bee505bf41c1109f07bc799b872ddc281d5",
    "35a395e2f768d8bffa122d2becf1867df13355bcbb008e8f57db5bfd27d072b8",
]
GOLDEN_WIDE_IDS = "5f9f89f5523a06777f600f59ef5977ab6e86383d267dcfada3fb92b05665ae08"


def test_vllm_golden_vectors() -> None:
    none_hash = vllm_none_hash("0")
    assert none_hash.hex() == NONE_HASH_SEED_0
    ids = list(range(33))  # two full blocks of 16, one ID of tail
    plain = vllm_block_hashes(ids, block_size=16, none_hash=none_hash)
    assert plain.hex() == GOLDEN_PLAIN and plain.tail == (32,)
    extra = vllm_block_hashes(
        ids,
        block_size=16,
        none_hash=none_hash,
        lora_name="adapter-a",
        cache_salt="salt",
        extra_keys="untagged",
    )
    assert extra.hex() == GOLDEN_LORA_SALT
    wide = vllm_block_hashes([70000, 128000, 5, 300] * 4, block_size=16, none_hash=none_hash)
    assert wide.hex() == [GOLDEN_WIDE_IDS]


@settings(max_examples=60)
@given(
    ids=st.lists(st.integers(0, 2**32 - 1), max_size=120),
    block_size=st.integers(1, 40),
    lora=st.one_of(st.none(), st.text(min_size=1, max_size=6)),
)
def test_vllm_chain_equals_cbor2(ids: list[int], block_size: int, lora: str | None) -> None:
    cbor2 = pytest.importorskip("cbor2")
    none_hash = vllm_none_hash("42")
    parent, want = none_hash, []
    extra = (lora,) if lora else None
    for i in range(len(ids) // block_size):
        block = tuple(ids[i * block_size : (i + 1) * block_size])
        parent = hashlib.sha256(cbor2.dumps((parent, block, extra), canonical=True)).digest()
        want.append(parent)
    got = vllm_block_hashes(
        ids, block_size=block_size, none_hash=none_hash, lora_name=lora, extra_keys="untagged"
    )
    assert list(got.keys) == want
    ref = vllm_block_hashes_reference(
        ids, block_size=block_size, none_hash=none_hash, extra_keys=extra
    )
    assert ref == want


@settings(max_examples=100)
@given(
    value=st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**63), 2**64 - 1),
            st.text(max_size=10),
            st.binary(max_size=40),
        ),
        lambda inner: st.lists(inner, max_size=5).map(tuple),
        max_leaves=20,
    )
)
def test_cbor_subset_equals_cbor2(value: object) -> None:
    cbor2 = pytest.importorskip("cbor2")
    assert cbor_encode(value) == cbor2.dumps(value, canonical=True)
