"""Fault injection (issue 43): ``kill -9`` at a random point of ``encode-dataset``,
``train`` and ``data clean|dedup|split``, then the checks every artifact write owes:

- what the killed run left either does not open (a typed error) or is the complete
  result (the old one, or the new one when the kill came after the last rename);
- a rerun of the same command gives byte-identical output;
- no temporary file remains, including the ones of a killed process that the rerun
  finds (it removes them: their process is gone).

Each trial is seeded; CI runs ``TOKENPACT_FAULT_TRIALS`` (default 1) per command, a long
run sets it higher (and ``TOKENPACT_FAULT_SEED``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from security.hostile import package_root
from tokenpact.corpus import builtin_corpus
from tokenpact.errors import TokenpactError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

TRIALS = int(os.environ.get("TOKENPACT_FAULT_TRIALS", "1"))
SEED = int(os.environ.get("TOKENPACT_FAULT_SEED", "43"))
CLI = "from tokenpact.cli.main import main; main()"  # the console script's entry point


def _env() -> dict[str, str]:
    # The tokenpact this process imported (the installed build in CI, where the source
    # tree has no compiled extension).
    return {**os.environ, "PYTHONPATH": package_root()}


def _run(args: list[str]) -> float:
    """Run the command to completion in this process (the reference and the reruns: no
    interpreter start); return its wall time."""
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    start = time.perf_counter()
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output[-2000:]
    return time.perf_counter() - start


@pytest.fixture(scope="module")
def startup() -> float:
    """Seconds a fresh interpreter takes to import what the commands import."""
    start = time.perf_counter()
    code = "import tokenpact.cli.main, tokenpact.data, pyarrow.parquet, numpy"
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True)
    return time.perf_counter() - start


def _killed(args: list[str], cwd: Path, delay: float) -> bool:
    """Start the CLI and SIGKILL it after ``delay`` seconds; False if it finished first."""
    child = subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        child.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
        child.wait()
        return True
    return False


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path (temporaries included: none may stay)."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _temporaries(root: Path) -> list[str]:
    base = root if root.is_dir() else root.parent
    return sorted(p.name for p in base.rglob(".*") if ".tmp" in p.name or ".staged" in p.name)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    texts = [
        para
        for doc in builtin_corpus(max_bytes=120_000)
        for para in doc.text.split("\n\n")
        if para.strip()
    ]
    lines = [json.dumps({"id": f"d{i:05d}", "text": t}) for i, t in enumerate(texts)]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = tp.train_bpe(texts[:300], vocab_size=500)
    tok.save(root / "tok")
    return root


def _dead_pid() -> int:
    """The ID of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _opens_as(kind: str, out: Path) -> Any:
    """What a reader gets from ``out`` (``None``: nothing there opens)."""
    if kind == "dataset":
        try:
            ds = tp.data.open_dataset(out, verify="open")
            return ds.doc_ids, ds.input_ids.tobytes()
        except TokenpactError:
            return None
    if kind == "tokenizer":
        try:
            return tp.Tokenizer.load(out).semantic_hash
        except (TokenpactError, OSError):
            return None
    # Files written one by one: each is absent or whole.
    return {name: data for name, data in _tree(out).items() if not name.startswith(".")}


# name: (arguments with OUT for the output directory, what it writes, temporaries a
# killed run of it leaves)
CASES: dict[str, tuple[list[str], str, list[str]]] = {
    "encode-dataset": (
        [
            "encode-dataset",
            "-t",
            "IN/tok",
            "IN/corpus.jsonl",
            "--id-field",
            "id",
            "-o",
            "OUT",
            "--records-per-shard",
            "150",
            "--overwrite",
        ],
        "dataset",
        [".shard-00001.parquet.tmpPID", ".dataset.json.tmpPID", ".corpus.json.tmpPID"],
    ),
    "train": (
        ["train", "IN/corpus.jsonl", "-o", "OUT", "--vocab-size", "400"],
        "tokenizer",
        [".manifest.json.staged"],
    ),
    "data-clean": (
        [
            "data",
            "clean",
            "IN/corpus.jsonl",
            "OUT/clean.jsonl",
            "--id-field",
            "id",
            "--steps",
            "quality,pii",
            "--allow-drop",
            "--report",
            "OUT/report.json",
            "--manifest",
            "OUT/manifest.json",
        ],
        "files",
        [".clean.jsonl.tmpPID", ".report.json.tmpPID", ".manifest.json.tmpPID"],
    ),
    "data-dedup": (
        ["data", "dedup", "IN/corpus.jsonl", "-o", "OUT/dedup.jsonl", "--id-field", "id"],
        "files",
        [".dedup.jsonl.tmpPID"],
    ),
    "data-split": (
        [
            "data",
            "split",
            "IN/corpus.jsonl",
            "-o",
            "OUT",
            "--id-field",
            "id",
            "--role",
            "train=0.9",
            "--role",
            "test=0.1",
        ],
        "files",
        [".train.jsonl.tmpPID", ".test.jsonl.tmpPID"],
    ),
}


def _args(template: list[str], inputs: Path, out: Path) -> list[str]:
    return [a.replace("IN", str(inputs), 1).replace("OUT", str(out), 1) for a in template]


@pytest.mark.parametrize("name", sorted(CASES))
def test_kill9_leaves_nothing_or_the_whole_result(
    inputs: Path, startup: float, tmp_path: Path, name: str
) -> None:
    template, kind, leftovers = CASES[name]
    reference = tmp_path / "reference"
    wall = startup + _run(_args(template, inputs, reference))
    expected_tree = _tree(reference)
    expected = _opens_as(kind, reference)
    assert expected is not None and not _temporaries(reference)
    rng = random.Random(f"{SEED}-{name}")
    tally = {"killed": 0, "left less, nothing partial": 0, "left the whole result": 0}
    for trial in range(TRIALS):
        out = tmp_path / f"trial{trial}"
        # A kill anywhere from interpreter start to the end of the command's work.
        tally["killed"] += _killed(
            _args(template, inputs, out), tmp_path, rng.uniform(0.2, 1.1) * wall
        )
        seen = _opens_as(kind, out) if out.exists() else None
        whole = seen == expected
        tally["left the whole result" if whole else "left less, nothing partial"] += 1
        if kind == "files":
            assert all(expected[k] == v for k, v in (seen or {}).items()), name
        else:
            assert seen in (None, expected), f"{name}: a partial result opens"
        # The rerun finds what a killed writer leaves, too (a process that is gone).
        pid = str(_dead_pid())
        out.mkdir(parents=True, exist_ok=True)
        planted = [out / leftover.replace("PID", pid) for leftover in leftovers]
        for path in planted:
            path.write_bytes(b"half written")
        _run(_args(template, inputs, out))
        assert not _temporaries(out), f"{name}: temporaries left: {_temporaries(out)}"
        assert _tree(out) == expected_tree, f"{name}: the rerun differs from the reference"
    print(f"\nkill -9 {name}: {TRIALS} trials, {tally}")
