"""The fuzz suite (issue 13): seeded mutants of every loader's input, chat inputs and
command lines, each batch in a sandboxed subprocess (memory limit, timeout). Asserts no
crash, no hang, no untyped exception and no tampered artifact accepted with verification
on.

The CI budget is small (``TOKENPACT_FUZZ_MUTANTS`` per target, default below; about a
minute on 2 cores); set ``TOKENPACT_FUZZ_MUTANTS=5000`` (and ``TOKENPACT_FUZZ_SEED``) for
a long run, or run ``python -m tests.fuzz`` for the report in docs/SECURITY.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from . import harness, mutate, seeds

DEFAULT_MUTANTS = {
    "tokenizer_json": 300,
    "sentencepiece": 150,
    "tiktoken": 100,
    "artifact": 60,
    "chat": 120,
    "cli": 40,
}
SEED = int(os.environ.get("TOKENPACT_FUZZ_SEED", "13"))


def _count(kind: str) -> int:
    return harness.mutant_count(DEFAULT_MUTANTS, kind)


def _long_run() -> bool:
    return bool(os.environ.get("TOKENPACT_FUZZ_MUTANTS"))


def _check(tally: harness.Tally, kind: str) -> None:
    harness.check_tally(tally, kind, _count(kind))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def artifact(workdir: Path) -> Path:
    return seeds.saved_artifact(workdir)


def test_tokenizer_json(workdir: Path) -> None:
    docs = seeds.tokenizer_json_seeds(real=_long_run())
    mutants = harness.json_mutants(docs, workdir / "hf", _count("tokenizer_json"), SEED)
    _check(harness.run("tokenizer_json", mutants), "tokenizer_json")


def test_sentencepiece_model(workdir: Path) -> None:
    data = seeds.sentencepiece_seeds(workdir, real=_long_run())
    mutants = harness.byte_mutants(data, workdir / "sp", _count("sentencepiece"), SEED, ".model")
    _check(harness.run("sentencepiece", mutants), "sentencepiece")


def test_tiktoken(workdir: Path, artifact: Path) -> None:
    data = seeds.tiktoken_seeds(artifact)
    mutants = harness.byte_mutants(
        data, workdir / "tt", _count("tiktoken"), SEED, ".tiktoken", mutate.mutate_lines
    )
    _check(harness.run("tiktoken", mutants), "tiktoken")


def test_artifact_directory(workdir: Path, artifact: Path) -> None:
    import tokenpact as tp

    from .worker import _probe

    original = artifact
    tok = tp.Tokenizer.load(original)
    expected = {
        "semantic_hash": tok.semantic_hash,
        "outputs": json.loads(json.dumps(_probe(tok))),
    }
    mutants = harness.artifact_mutants(original, workdir / "art", _count("artifact"), SEED)
    _check(harness.run("artifact", mutants, spec={"expected": expected}), "artifact")


def test_chat_inputs(workdir: Path) -> None:
    mutants = harness.json_mutants(
        seeds.chat_seeds(),
        workdir / "chat",
        _count("chat"),
        SEED,
        name="chat.json",
        raw_edits=False,
    )
    _check(harness.run("chat", mutants), "chat")


def test_cli_inputs(workdir: Path, artifact: Path) -> None:
    from security.hostile import wordpiece, write_json

    (workdir / "cli-seed").mkdir()
    hf_file = write_json(workdir / "cli-seed" / "tokenizer.json", wordpiece())
    argvs = seeds.cli_seeds(artifact, hf_file)
    mutants = harness.json_mutants(
        argvs, workdir / "cli", _count("cli"), SEED, name="argv.json", raw_edits=False
    )
    _check(harness.run("cli", mutants), "cli")
