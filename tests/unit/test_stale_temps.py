"""Stale temporaries of killed writers (issue 43): removed when their process is gone,
kept while it lives, and only the target's own when names are given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tokenpact._stale_temps import pid_alive, remove_stale_temps


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_dead_writers_temporaries_go_live_ones_stay(tmp_path: Path) -> None:
    dead, live = _dead_pid(), os.getppid()
    assert not pid_alive(dead) and pid_alive(live) and pid_alive(os.getpid())
    (tmp_path / f".shard-00000.parquet.tmp{dead}").write_bytes(b"x")
    (tmp_path / f".dataset.json.tmp{live}").write_bytes(b"x")
    (tmp_path / f".ckpt.tmp-{dead}").mkdir()
    (tmp_path / f".ckpt.tmp-{dead}" / "model.safetensors").write_bytes(b"x")
    (tmp_path / "shard-00000.parquet").write_bytes(b"kept")
    (tmp_path / ".hidden.tmpnotapid").write_bytes(b"kept")
    removed = remove_stale_temps(tmp_path)
    assert sorted(p.name for p in removed) == sorted(
        [f".shard-00000.parquet.tmp{dead}", f".ckpt.tmp-{dead}"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".dataset.json.tmp{live}", "shard-00000.parquet", ".hidden.tmpnotapid"]
    )


def test_names_restrict_the_cleanup_to_the_target(tmp_path: Path) -> None:
    dead = _dead_pid()
    (tmp_path / f".out.jsonl.tmp{dead}").write_bytes(b"x")
    (tmp_path / f".other.jsonl.tmp{dead}").write_bytes(b"x")
    remove_stale_temps(tmp_path, ["out.jsonl"])
    assert [p.name for p in tmp_path.iterdir()] == [f".other.jsonl.tmp{dead}"]
    assert remove_stale_temps(tmp_path / "missing") == []


def test_a_killed_atomic_write_leaves_a_temporary_the_next_run_removes(tmp_path: Path) -> None:
    # A writer killed between writing its temporary and the rename: the temporary it leaves
    # carries its process ID, so the cleanup of the same target removes it.
    target = tmp_path / "manifest.json"
    target.write_bytes(b"previous")
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from tokenpact import _io\n"
            "os.fsync = lambda fd: os._exit(9)\n"
            "_io.atomic_write_bytes(sys.argv[1], b'new')",
            str(target),
        ],
        env={**os.environ},
    )
    assert killed.returncode == 9
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "manifest.json"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".manifest.json.tmp-")
    assert target.read_bytes() == b"previous"
    assert [p.name for p in remove_stale_temps(tmp_path, ["manifest.json"])] == leftovers
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_live_atomic_writers_temporary_is_kept(tmp_path: Path) -> None:
    live = tmp_path / f".out.json.tmp-{os.getppid()}-abc123"
    live.write_bytes(b"x")
    assert remove_stale_temps(tmp_path, ["out.json"]) == []
    assert live.exists()
