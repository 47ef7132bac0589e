"""The fuzz suite of the data surfaces (issue 43): encoded datasets opened with
verification on, corpus JSON Lines, cleaning configs and the doctor's batch and
checkpoint files. Same harness and rules as ``test_fuzz.py`` (sandboxed batches, no
crash, hang, untyped error or fail-open result); ``TOKENPACT_FUZZ_MUTANTS`` and
``TOKENPACT_FUZZ_SEED`` set a long run (docs/SECURITY.md has the counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import harness, mutate
from .data_seeds import (
    clean_config_seeds,
    corpus_jsonl_seed,
    dataset_mutants,
    doctor_seeds,
    encoded_datasets,
)
from .test_fuzz import SEED

DEFAULT_MUTANTS = {"dataset": 60, "corpus": 40, "clean_config": 30, "doctor": 80}


def _count(kind: str) -> int:
    return harness.mutant_count(DEFAULT_MUTANTS, kind)


def _checked(tally: harness.Tally, kind: str) -> None:
    harness.check_tally(tally, kind, _count(kind))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-data")


def test_encoded_datasets(workdir: Path) -> None:
    import tokenpact as tp

    tok_dir, originals, digests = encoded_datasets(workdir / "seed")
    vocab = tp.Tokenizer.load(tok_dir).vocab_size
    mutants = dataset_mutants(originals, vocab, workdir / "ds", _count("dataset"), SEED)
    spec = {"tokenizer": str(tok_dir), "expected": digests}
    _checked(harness.run("dataset", mutants, spec=spec), "dataset")


def test_corpus_jsonl(workdir: Path) -> None:
    seed = corpus_jsonl_seed()
    mutants = harness.byte_mutants(
        [seed], workdir / "corpus", _count("corpus"), SEED, ".jsonl", _corpus_mutator
    )
    _checked(harness.run("corpus", mutants), "corpus")


def _corpus_mutator(data: bytes, rng: object) -> bytes:
    import random

    assert isinstance(rng, random.Random)
    if rng.random() < 0.5:
        return mutate.mutate_lines(data, rng)
    if rng.random() < 0.5:
        lines = data.splitlines()
        k = rng.randrange(len(lines))
        doc = mutate.mutate_json(json.loads(lines[k]), rng)
        lines[k] = mutate.dump_json(doc, rng).replace(b"\n", b" ")
        return b"\n".join(lines) + b"\n"
    return mutate.mutate_bytes(data, rng)


def test_clean_configs(workdir: Path) -> None:
    mutants = harness.json_mutants(
        clean_config_seeds(), workdir / "clean", _count("clean_config"), SEED, "clean.json"
    )
    _checked(harness.run("clean_config", mutants), "clean_config")


def test_doctor_inputs(workdir: Path) -> None:
    import tokenpact as tp

    tok = tp.train_bpe(["hello world " * 20], vocab_size=280)
    tok_dir = tok.export_hf(workdir / "doctor-tok")  # tokenizer.json: no golden replay
    seeds = doctor_seeds(workdir / "doctor-seed")
    count = _count("doctor")
    by_suffix: dict[str, list[bytes]] = {}
    for suffix, data in seeds:
        by_suffix.setdefault(suffix, []).append(data)
    # One mutant stream per file type, in proportion to its seeds.
    items = []
    start = 0
    for n, (suffix, datas) in enumerate(sorted(by_suffix.items())):
        share = count - start if n == len(by_suffix) - 1 else count * len(datas) // len(seeds)
        for i, path in harness.byte_mutants(
            datas, workdir / f"doctor-{suffix.strip('.')}", share, SEED + n, suffix
        ):
            items.append((start + i, path))
        start += share
    tally = harness.run("doctor", iter(items), spec={"tokenizer": str(tok_dir)})
    _checked(tally, "doctor")
