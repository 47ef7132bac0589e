"""Ray encoding and counting across a cluster restart: nothing cached for the first
cluster (the tokenizer spec in its object store, a kept actor pool, the block tasks'
remote functions) is handed to the second one, whose job IDs start again at 1."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.data import Document, encode_dataset

from .local_ray import start_local_ray

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")


def test_encoding_after_a_cluster_restart(tmp_path: Path, real_docs: list[Document]) -> None:
    from tokenpact.data import ray_encoder
    from tokenpact.data.ray_engine import ray_count_pretokens
    from tokenpact.train import count_pretokens

    if ray.is_initialized():
        ray.shutdown()
    docs = real_docs[:60]
    tok = tp.train_bpe([d.text for d in docs], vocab_size=330, special_tokens=())
    local = encode_dataset(docs, tok, tmp_path / "local", records_per_shard=25)
    try:
        for run in range(2):
            start_local_ray()
            for options in ({}, {"keep_workers": True}):
                out = tmp_path / f"ray{run}-{len(options)}"
                assert (
                    encode_dataset(
                        docs, tok, out, records_per_shard=25, engine="ray", ray_options=options
                    )
                    == local
                )
            (counts,) = ray_count_pretokens([d.text for d in docs])
            assert counts == count_pretokens([d.text for d in docs])
            ray.shutdown()  # the kept pool and the spec's object die with the cluster
    finally:
        ray_encoder.release_ray_workers()
        if ray.is_initialized():
            ray.shutdown()
