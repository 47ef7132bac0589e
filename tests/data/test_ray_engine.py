"""The Ray engine equals the local engine (a 2-CPU Ray instance on this machine).

One module-scoped cluster serves every test; it is shut down afterwards. Kept small:
Ray start-up dominates, and the machine is shared.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.data import Document, MinHashParams, encode_dataset, near_dedup, train_bpe

from .local_ray import start_local_ray

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    if ray.is_initialized():
        ray.shutdown()
    start_local_ray()
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def docs(real_docs: list[Document]) -> list[Document]:
    base = real_docs[:120]
    copies = [Document(f"zcopy{i}", d.text + " (copy)", d.source) for i, d in enumerate(base[:15])]
    return base + copies


# ray_data=True runs the same blocks through Ray Data map_batches instead of plain tasks.
@pytest.mark.parametrize("ray_data", [False, True])
def test_bpe_counts_on_ray_give_local_merges(
    cluster: None, docs: list[Document], ray_data: bool
) -> None:
    texts = [d.text for d in docs]
    local = tp.train_bpe(texts, vocab_size=520)
    options = {"block_docs": 25, "ray_data": ray_data}
    remote = train_bpe(docs, vocab_size=520, engine="ray", ray_options=options)
    assert remote.merges == local.merges
    assert remote.training == local.training
    assert remote.semantic_hash == local.semantic_hash


def test_ray_counts_equal_local_counts(cluster: None, docs: list[Document]) -> None:
    from tokenpact.data.ray_engine import ray_count_pretokens
    from tokenpact.train import count_pretokens

    texts = [d.text for d in docs]
    for options in ({}, {"block_docs": 7}):
        (remote,) = ray_count_pretokens(texts, pattern="gpt2", **options)
        assert remote == count_pretokens(texts, pattern="gpt2")  # pieces, counts, digest
    (empty,) = ray_count_pretokens([])
    assert empty == count_pretokens([])


@pytest.mark.parametrize("ray_data", [False, True])
def test_near_dedup_on_ray_equals_local(
    cluster: None, docs: list[Document], ray_data: bool
) -> None:
    params = MinHashParams(n=3)
    local = near_dedup(docs, threshold=0.7, params=params)
    remote = near_dedup(
        docs,
        threshold=0.7,
        params=params,
        engine="ray",
        ray_options={"block_docs": 25, "ray_data": ray_data},
    )
    assert local.clusters and remote.clusters == local.clusters
    assert remote.duplicate_of == local.duplicate_of
    assert remote.stats == local.stats


@pytest.mark.parametrize("fmt", ["parquet", "megatron"])
def test_shards_on_ray_are_byte_identical(
    cluster: None, tmp_path: Path, docs: list[Document], fmt: str
) -> None:
    tok = tp.train_bpe([d.text for d in docs], vocab_size=400, special_tokens=())
    local = encode_dataset(docs, tok, tmp_path / "local", format=fmt, records_per_shard=30)
    remote = encode_dataset(
        docs, tok, tmp_path / "ray", format=fmt, records_per_shard=30, engine="ray"
    )
    assert remote == local
    tree = {p.name: p.read_bytes() for p in (tmp_path / "local").iterdir()}
    assert tree == {p.name: p.read_bytes() for p in (tmp_path / "ray").iterdir()}


def test_kept_encoder_pool_is_reused_then_released(
    cluster: None, tmp_path: Path, docs: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tokenpact.data import encode as encode_module
    from tokenpact.data import ray_encoder

    monkeypatch.setattr(encode_module, "CHUNK_CHARS", 3_000)  # several chunks per shard
    tok = tp.train_bpe([d.text for d in docs], vocab_size=380, special_tokens=())
    local = encode_dataset(docs, tok, tmp_path / "local", format="megatron", records_per_shard=70)
    keep = {"keep_workers": True, "workers": 3}
    first = encode_dataset(
        docs,
        tok,
        tmp_path / "r1",
        format="megatron",
        records_per_shard=70,
        engine="ray",
        ray_options=keep,
    )
    (pool,) = ray_encoder._POOLS.values()
    assert len(pool) == 2  # clamped to the cluster's CPUs (a third actor would never start)
    second = encode_dataset(
        docs,
        tok,
        tmp_path / "r2",
        format="parquet",
        records_per_shard=70,
        engine="ray",
        ray_options=keep,
    )
    assert list(ray_encoder._POOLS.values()) == [pool]  # the same actors served both calls
    assert first == local
    assert second == encode_dataset(docs, tok, tmp_path / "l2", records_per_shard=70)
    # Another Ray step releases the kept encoders (they would hold the CPUs it needs).
    near_dedup(docs[:40], threshold=0.7, engine="ray", ray_options={"block_docs": 20})
    assert not ray_encoder._POOLS
    one = encode_dataset(
        docs,
        tok,
        tmp_path / "r3",
        format="megatron",
        records_per_shard=70,
        engine="ray",
        ray_options={"workers": 1},
    )
    assert one == local and not ray_encoder._POOLS


def test_ray_encoding_refuses_a_bad_worker_count(
    cluster: None, tmp_path: Path, docs: list[Document]
) -> None:
    from tokenpact.errors import ConfigError

    tok = tp.train_bpe([d.text for d in docs], vocab_size=300, special_tokens=())
    with pytest.raises(ConfigError, match="workers"):
        encode_dataset(docs, tok, tmp_path, engine="ray", ray_options={"workers": 0})


def test_default_encoding_holds_no_cpu_and_workers_keep_the_tokenizer(
    cluster: None, tmp_path: Path, docs: list[Document]
) -> None:
    from tokenpact.data import ray_encoder

    tok = tp.train_bpe([d.text for d in docs], vocab_size=420, special_tokens=())
    local = encode_dataset(docs, tok, tmp_path / "local", records_per_shard=50)
    for run in ("r1", "r2"):
        remote = encode_dataset(docs, tok, tmp_path / run, records_per_shard=50, engine="ray")
        assert remote == local
    assert not ray_encoder._POOLS
    # Idle workers hold no CPU (kept actors would), so a job that needs every CPU runs
    # (the timeout only turns a hang into a failure).
    assert ray.get(ray.remote(num_cpus=2)(lambda: "ran").remote(), timeout=120) == "ran"

    @ray.remote(num_cpus=1)
    def held() -> str | None:
        from tokenpact.data import ray_encoder as worker_side

        kept = worker_side._WORKER_TOKENIZER
        return None if kept is None else kept[0]

    # The worker processes that encoded still hold the tokenizer (keyed by its hash).
    assert tok.semantic_hash in ray.get([held.remote() for _ in range(4)])


def test_a_worker_refuses_a_spec_with_another_hash(cluster: None, docs: list[Document]) -> None:
    from tokenpact.data import ray_encoder
    from tokenpact.errors import ContractError

    tok = tp.train_bpe([d.text for d in docs], vocab_size=300, special_tokens=())
    other = tp.train_bpe([d.text for d in docs], vocab_size=310, special_tokens=())
    warm = ray.remote(num_cpus=1)(ray_encoder._warm)
    with pytest.raises(ContractError, match="differs from the driver's"):
        ray.get(warm.remote(tok.semantic_hash, [ray.put(other.spec)]))
    assert ray.get(warm.remote(tok.semantic_hash, [ray.put(tok.spec)])) > 0
