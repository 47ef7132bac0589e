"""Every file the data journey writes is readable by every command that takes files:
``hash`` names its identity, ``doctor`` says what it is (never "nothing recognizable",
never a traceback), and every dataset file is accepted by ``verify --dataset``,
``reconcile`` and ``doctor`` (``release seal --dataset``: tests/migrate/test_release.py
and the journey)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tokenpact.cli.main import cli

from .test_data_journey import _walk


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _walk(tmp_path_factory.mktemp("every-file"), engine="local")


def _invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _written(root: Path) -> list[Path]:
    """Every file written, and the artifact directories (a tokenizer, a dataset)."""
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.name != "raw.jsonl"
        and (p.is_file() or (p / "tokenpact.json").is_file() or (p / "dataset.json").is_file())
    ]


def test_hash_and_doctor_read_every_written_path(walked: dict[str, Any]) -> None:
    root = walked["root"]
    paths = _written(root)
    assert any(p.suffix == ".bin" for p in paths) and any(p.suffix == ".parquet" for p in paths)
    for path in paths:
        result = _invoke("hash", path)
        assert result.exit_code == 0, (path, result.output)
        result = _invoke("doctor", path)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), (path, result.exception)
        assert "nothing recognizable" not in result.output, (path, result.output)
        assert result.exit_code == 0, (path, result.output)


def test_every_dataset_file_is_a_dataset_everywhere(walked: dict[str, Any]) -> None:
    root = walked["root"]
    for out in walked["datasets"].values():
        for path in [out, *sorted(out.iterdir())]:
            if path.name == "corpus.json":
                continue  # the corpus manifest: a corpus, not the dataset
            result = _invoke("verify", root / "tok", "--dataset", path)
            assert result.exit_code == 0, (path, result.output)
            result = _invoke("doctor", path, root / "tok")
            assert result.exit_code == 0 and "encoded dataset" in result.output, path
            result = _invoke("reconcile", path)  # the checks that need no tokenizer
            assert (
                result.exit_code == 0
                and "dataset.shards" in _invoke("reconcile", path, "-v").output
            ), (path, result.output)
