"""Corpus files and cleaning configs found by the data fuzz suite (issue 43): each is a
typed error, not a traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tokenpact.data import read_documents
from tokenpact.data.cleaning import CleaningPipeline
from tokenpact.errors import ConfigError, InvalidInputError


def test_jsonl_that_is_not_utf8_is_invalid_input(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "\xff\xfe"}\n')
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        list(read_documents(path))
    lines = tmp_path / "c.txt"
    lines.write_bytes(b"fine\n\xc3\x28\n")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        list(read_documents(lines, format="lines"))


def test_damaged_gzip_and_deep_json_lines_are_invalid_input(tmp_path: Path) -> None:
    data = gzip.compress(b'{"id": "a", "text": "hello"}\n' * 200)
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InvalidInputError, match="compressed stream"):
        list(read_documents(path))
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "a", "text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InvalidInputError, match="nested"):
        list(read_documents(deep))


def test_cleaning_configs_deep_or_with_no_languages_are_config_errors(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"quality": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match="nests too deeply"):
        CleaningPipeline.from_file(deep)
    with pytest.raises(ConfigError, match="languages is empty"):
        CleaningPipeline.from_config({"langid": {"languages": []}})
