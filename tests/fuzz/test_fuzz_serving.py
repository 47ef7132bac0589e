"""Fuzz targets of issue 43: safetensors headers (differential against the library),
release bundles and pointers, playground HTTP requests and runtime API calls. Same
harness as test_fuzz.py (seeded mutants, sandboxed batches, memory limit, timeout);
``TOKENPACT_FUZZ_MUTANTS`` / ``TOKENPACT_FUZZ_SEED`` scale a long run.
"""

from __future__ import annotations

import json
import os
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from . import harness, mutate

DEFAULT_MUTANTS = {"safetensors": 150, "release": 40, "pointer": 20, "serve": 60, "runtime": 150}
SEED = int(os.environ.get("TOKENPACT_FUZZ_SEED", "43"))


def _count(kind: str) -> int:
    return harness.mutant_count(DEFAULT_MUTANTS, kind)


def _check(tally: harness.Tally, kind: str) -> None:
    harness.check_tally(tally, kind, _count(kind))


# ------------------------------------------------------------------ safetensors
def _safetensors_seeds(directory: Path) -> list[bytes]:
    pytest.importorskip("safetensors")
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    seeds = []
    for i, tensors in enumerate(
        (
            {"model.embed_tokens.weight": rng.normal(size=(12, 4)).astype(np.float32)},
            {
                "a": rng.normal(size=(3, 2)).astype(np.float16),
                "b": np.arange(5, dtype=np.int64),
                "c": np.zeros((0, 3), dtype=np.float32),
                "d": np.array([True, False]),
            },
        )
    ):
        path = directory / f"seed{i}.safetensors"
        save_file(tensors, str(path), metadata={"format": "np"})
        seeds.append(path.read_bytes())
    return seeds


def mutate_safetensors(data: bytes, rng: random.Random) -> bytes:
    """Half structure-aware (the JSON header mutated and re-packed, the data sometimes
    cut or extended), half byte edits."""
    if rng.random() < 0.4:
        return mutate.mutate_bytes(data, rng)
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    body = data[8 + length :]
    raw = mutate.dump_json(mutate.mutate_json(header, rng), rng)
    choice = rng.random()
    if choice < 0.15:
        body = body[: rng.randrange(len(body) + 1)]
    elif choice < 0.25:
        body += bytes(rng.randrange(1, 16))
    return struct.pack("<Q", len(raw)) + raw + body


def test_safetensors_headers(tmp_path: Path) -> None:
    seeds = _safetensors_seeds(tmp_path)
    mutants = harness.byte_mutants(
        seeds, tmp_path / "st", _count("safetensors"), SEED, ".safetensors", mutate_safetensors
    )
    _check(harness.run("safetensors", mutants), "safetensors")


# ------------------------------------------------------------------ releases
@pytest.fixture(scope="module")
def release_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sealed releases (v1, v2 = v1 extended and resized) and a pointer history."""
    import tiny_lm
    import tokenpact as tp
    from migrate.test_release import TEXTS, _bind, _dataset
    from tokenpact import migrate
    from tokenpact.migrate import release

    root = tmp_path_factory.mktemp("release")
    none = tp.contract.template_hash(None)

    def dataset(path: Path, tok: tp.Tokenizer) -> Path:
        return _dataset(path, tok, none)  # type: ignore[no-any-return]

    bind = _bind
    old = tp.train_bpe(TEXTS, vocab_size=280)
    old.save(root / "tok-v1")
    tiny_lm.build(root / "ckpt-v1", rows=old.vocab_size, tied=True)
    bind(root / "ckpt-v1", old)
    canary = root / "canary.jsonl"
    canary.write_text(json.dumps({"slice": "prose", "text": "the cat sat"}) + "\n")
    common = {"canary": canary}
    release.seal_release(
        root / "v1.bundle.json",
        name="v1",
        tokenizer=root / "tok-v1",
        dataset=dataset(root / "data-v1.json", old),
        checkpoint=root / "ckpt-v1",
        **common,
    )
    new = migrate.extend_bpe(old, ["error error terror mirror"] * 5, add_merges=3)
    new.save(root / "tok-v2")
    migrate.resize_checkpoint(root / "ckpt-v1", root / "ckpt-v2", old, new)
    release.seal_release(
        root / "v2.bundle.json",
        name="v2",
        tokenizer=root / "tok-v2",
        dataset=dataset(root / "data-v2.json", new),
        checkpoint=root / "ckpt-v2",
        previous=root / "v1.bundle.json",
        **common,
    )
    pointer = root / "pointer.json"
    assert release.promote(root / "v1.bundle.json", pointer=pointer).ok
    assert release.promote(root / "v2.bundle.json", pointer=pointer).ok
    return root


def _in_place(
    docs: list[Any], root: Path, count: int, seed: int, prefix: str
) -> Iterator[tuple[int, str]]:
    """Mutated JSON files beside the originals (their relative paths must resolve)."""
    rng = random.Random(seed)
    for i in range(count):
        path = root / f"{prefix}-m{i}.json"
        path.write_bytes(mutate.dump_json(mutate.mutate_json(rng.choice(docs), rng), rng))
        yield i, str(path)


def test_release_bundles(release_root: Path) -> None:
    original = json.loads((release_root / "v2.bundle.json").read_text())
    mutants = _in_place([original], release_root, _count("release"), SEED, "bundle")
    spec = {"original": original, "previous": str(release_root / "v1.bundle.json")}
    _check(harness.run("release", mutants, spec=spec), "release")


def test_release_pointers(release_root: Path) -> None:
    original = json.loads((release_root / "pointer.json").read_text())
    mutants = _in_place([original], release_root, _count("pointer"), SEED, "pointer")
    _check(harness.run("pointer", mutants), "pointer")


# ------------------------------------------------------------------ playground
SERVE_SEEDS: list[Any] = [
    {"route": "/api/encode", "body": {"tokenizer": "small", "text": "the cat 🤖"}},
    {"route": "/api/compare", "body": {"tokenizers": ["small", "tiny"], "text": "x += 1"}},
    {
        "route": "/api/stream",
        "body": {"tokenizer": "small", "text": "the mat", "chunk_size": 3, "stop_strings": ["m"]},
    },
    {
        "route": "/api/chat",
        "body": {"tokenizer": "small", "messages": [{"role": "user", "content": "hi"}]},
    },
    {"method": "GET", "route": "/api/audit?tokenizer=tiny&d_model=64", "body": ""},
    {"method": "GET", "route": "/api/tokenizers", "body": ""},
    {"route": "/api/encode", "body": {"tokenizer": "tiny", "text": "ab"}, "lie": True},
]


def test_playground_requests(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    import tokenpact as tp

    tokenizer_dir = tmp_path / "served"
    texts = ["the cat sat on the mat while the dog ran", "x += 1; naïve café 日本語"] * 20
    tp.train_bpe(texts, vocab_size=300).save(tokenizer_dir / "small")
    tp.train_bpe(texts[::-1], vocab_size=280).save(tokenizer_dir / "tiny")
    mutants = harness.json_mutants(
        SERVE_SEEDS, tmp_path / "http", _count("serve"), SEED, name="request.json", raw_edits=False
    )
    _check(harness.run("serve", mutants, spec={"dir": str(tokenizer_dir)}), "serve")


# ------------------------------------------------------------------ runtime API
RUNTIME_SEEDS: list[Any] = [
    {"api": "push_bytes", "arg": "hello héllo"},
    {"api": "push_bytes_reference", "arg": "hell<|eos|>o"},
    {"api": "push_bytes", "arg": 5},
    {"api": "push", "arg": "hello"},
    {"api": "decode_push", "arg": [104, 101, 256, 257]},
    {"api": "decode_push", "arg": 104},
    {"api": "stop", "arg": {"stop_ids": [101], "stop_strings": ["ll"], "max_new_tokens": 3}},
    {"api": "stop", "arg": {"stop_sequences": [[104, 101]]}, "ids": [104, 101, 108]},
]


def test_runtime_api_calls(tmp_path: Path) -> None:
    mutants = harness.json_mutants(
        RUNTIME_SEEDS, tmp_path / "rt", _count("runtime"), SEED, name="call.json", raw_edits=False
    )
    _check(harness.run("runtime", mutants), "runtime")
