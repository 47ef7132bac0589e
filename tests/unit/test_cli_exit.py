"""The console script's end after pyarrow was used (issue 43): the exit code and every
byte of output survive skipping the interpreter teardown that pyarrow can abort in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from security.hostile import package_root

MAIN = "from tokenpact.cli.main import main; main()"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": package_root(), "PATH": "/usr/bin:/bin"},
    )


def test_exit_codes_and_output_survive_after_reading_parquet(tmp_path: Path) -> None:
    ids = pa.array([[5, -1, 7]], type=pa.list_(pa.int64()))
    pq.write_table(pa.table({"input_ids": ids}), tmp_path / "batch.parquet")
    bad = _run("doctor", str(tmp_path / "batch.parquet"))
    assert bad.returncode == 1, bad.stderr
    assert "negative-input-id" in bad.stdout and bad.stdout.rstrip().endswith("finding(s)")
    table = pa.table({"input_ids": pa.array([[5, 6]])})
    table = table.replace_schema_metadata({"tokenizer_hash": "sha256:" + "0" * 64})
    pq.write_table(table, tmp_path / "ok.parquet")
    good = _run("doctor", str(tmp_path / "ok.parquet"))
    assert good.returncode == 0 and good.stdout.rstrip().endswith("clean"), good.stderr
    usage = _run("doctor", "--no-such-flag")
    assert usage.returncode == 2
