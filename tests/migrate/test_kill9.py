"""kill -9 during ``migrate apply`` and ``release promote`` (issue 43): whatever the
moment, the output is either absent or complete (never a partial directory or pointer
that opens), the next run removes the killed run's temporary files, and a rerun gives
byte-identical files. The kill moments are spread over the run; the invariants are
checked whatever moment each kill lands on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tiny_lm
import tokenpact as tp
from security.hostile import package_root
from tokenpact import migrate

DELAYS = (0.3, 0.9, 1.5)


def _cli(*args: str | Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": package_root()}
    return subprocess.Popen(
        [sys.executable, "-m", "tokenpact.cli", *map(str, args)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _killed(args: tuple[str | Path, ...], delay: float) -> None:
    proc = _cli(*args)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def resize_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kill9")
    old = tp.Tokenizer.from_merges([(c, c) for c in b"abcdfghijklm"])
    old.save(root / "old")
    migrate.build_extended(old, [(101, 114), (114, 101), (61, 61)]).save(root / "new")
    tiny_lm.build(root / "ckpt", rows=268, dim=64, optimizer=True, shards=2)
    return root


def test_kill9_during_migrate_apply(resize_inputs: Path, tmp_path: Path) -> None:
    root = resize_inputs
    args = ("migrate", "apply", "--old", root / "old", "--new", root / "new",
            "--checkpoint", root / "ckpt")  # fmt: skip
    reference = tmp_path / "reference"
    assert _cli(*args, "--out", reference).wait() == 0
    expected = _files(reference)
    for delay in DELAYS:
        out = tmp_path / f"out-{delay}"
        _killed((*args, "--out", out), delay)
        if out.exists():  # the rename happened: the directory is complete
            assert _files(out) == expected
            continue
        # Nothing half-written under the final name; the rerun cleans up and matches.
        assert _cli(*args, "--out", out).wait() == 0
        assert _files(out) == expected
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(f".out-{delay}.tmp")]
        assert leftovers == []


def test_kill9_during_release_promote(tmp_path: Path) -> None:
    from migrate.test_release import releases as make_releases  # the fixture's function

    paths = make_releases.__wrapped__(tmp_path)  # type: ignore[attr-defined]
    pointer = paths["pointer"]
    assert _cli("release", "promote", paths["v1"], "--pointer", pointer).wait() == 0
    before = pointer.read_bytes()
    promoted = None
    for delay in DELAYS:
        _killed(("release", "promote", paths["v2"], "--pointer", pointer), delay)
        state = json.loads(pointer.read_text())  # always a whole pointer
        now = pointer.read_bytes()
        assert now == before or state["current"]["name"] == "v2"
        if state["current"]["name"] == "v2":
            promoted = now
            break
    if promoted is None:  # no kill landed after the rename: the rerun promotes
        assert _cli("release", "promote", paths["v2"], "--pointer", pointer).wait() == 0
        promoted = pointer.read_bytes()
    assert json.loads(promoted)["current"]["name"] == "v2"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{pointer.name}.tmp-")]
