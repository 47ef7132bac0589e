"""Fixtures for the contract tests: the seed's example bundle and small real tokenizers."""

from __future__ import annotations

import copy
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from contract_helpers import CORPUS, GOLDEN_OPTIONS

from tokenpact.contract.example import example_bundle, example_config


@pytest.fixture()
def bundle() -> dict[str, Any]:
    """A fresh copy of the sealed example bundle (IDs 0..11, 12/12 rows, tied head)."""
    return copy.deepcopy(example_bundle())


@pytest.fixture()
def config() -> dict[str, Any]:
    return example_config()


@pytest.fixture(scope="session")
def tok(tp: ModuleType) -> Any:
    """A small trained tokenizer (engine)."""
    return tp.train_bpe(CORPUS, vocab_size=320, min_frequency=2)


@pytest.fixture()
def saved(tok: Any, tmp_path: Path) -> Path:
    """A saved artifact directory with tokenpact.json, manifest.json and golden.json."""
    from tokenpact.contract import write_contract_files

    directory = tmp_path / "tok"
    tok.save(directory)
    write_contract_files(tok, directory, golden_options=GOLDEN_OPTIONS)
    return directory
