"""The fuzz harness: seeds, mutants on disk, batched sandboxed workers, and the tally.

Each batch of mutants runs in a fresh interpreter (``worker.py``) with an address-space
limit (``RLIMIT_AS``) and a timeout. The worker prints a line before and after each
mutant, so when it dies (abort, out-of-memory kill) or hangs, the harness knows which
mutant did it, records a crash or hang, and resumes the batch after it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from security.hostile import package_root

from . import mutate

REPO = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = int(os.environ.get("TOKENPACT_FUZZ_MEMORY", 3 << 30))
BATCH = 40
# Seconds a batch may take: interpreter start plus a generous per-mutant allowance.
BATCH_BASE_S = 60.0
MUTANT_S = 10.0


@dataclass
class Tally:
    """Counts per outcome, and the first few examples of each bad outcome."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        if outcome in BAD and len(self.examples.setdefault(outcome, [])) < 5:
            self.examples[outcome].append(detail)

    def merge(self, other: Tally) -> None:
        self.counts.update(other.counts)
        for key, items in other.examples.items():
            mine = self.examples.setdefault(key, [])
            mine.extend(items[: 5 - len(mine)])

    @property
    def bad(self) -> int:
        return sum(self.counts[k] for k in BAD)


BAD = ("untyped", "fail_open", "crash", "hang")


def mutant_count(defaults: dict[str, int], kind: str) -> int:
    """Mutants to run for target ``kind``: ``TOKENPACT_FUZZ_MUTANTS`` when set (a long
    run), else the target's CI default."""
    value = os.environ.get("TOKENPACT_FUZZ_MUTANTS")
    return int(value) if value else defaults[kind]


def check_tally(tally: Tally, kind: str, expected: int) -> None:
    """No mutant of ``kind`` gave a bad outcome, and all ``expected`` of them ran."""
    print(f"\nfuzz {kind}: {dict(tally.counts)}")
    assert tally.bad == 0, f"{kind}: {dict(tally.counts)}; examples: {tally.examples}"
    assert sum(tally.counts.values()) == expected


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run_batch(kind: str, items: list[tuple[int, str]], spec: dict[str, Any]) -> Tally:
    tally = Tally()
    pending = list(items)
    env = {**os.environ, "PYTHONPATH": package_root(), "RUST_BACKTRACE": "0"}
    # Mutated command lines write relative paths: run the workers in a scratch directory,
    # never in the checkout.
    scratch = tempfile.mkdtemp(prefix="tokenpact-fuzz-")
    try:
        return _run_pending(kind, pending, spec, env, scratch, tally)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_pending(
    kind: str,
    pending: list[tuple[int, str]],
    spec: dict[str, Any],
    env: dict[str, str],
    scratch: str,
    tally: Tally,
) -> Tally:
    while pending:
        job = json.dumps({"kind": kind, "items": pending, "spec": spec})
        timeout = BATCH_BASE_S + MUTANT_S * len(pending)
        try:
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).with_name("worker.py"))],
                input=job,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=scratch,
                preexec_fn=_limit,
                check=False,
            )
            output, died, hung = proc.stdout, proc.returncode != 0, False
            tail = proc.stderr[-300:]
        except subprocess.TimeoutExpired as exc:
            raw = exc.stdout or b""
            output = raw.decode() if isinstance(raw, bytes) else raw
            died, hung, tail = True, True, ""
        done: set[int] = set()
        started = None
        for line in output.splitlines():
            record = json.loads(line)
            if "start" in record:
                started = record["start"]
                continue
            done.add(record["index"])
            detail = f"{record.get('error', '')} at {record.get('where', '')}"
            tally.add(record["outcome"], f"{kind} #{record['index']}: {detail}")
        if not died:
            break
        # The mutant that started and never finished crashed (or hung) the worker.
        culprit = started if started is not None and started not in done else None
        path = dict(pending).get(culprit, "?") if culprit is not None else "?"
        tally.add("hang" if hung else "crash", f"{kind} #{culprit} {path}: {tail}")
        pending = [(i, p) for i, p in pending if i not in done and i != culprit]
        if culprit is None:
            break  # died before the first mutant: report once, do not loop
    return tally


def run(
    kind: str,
    mutants: Iterator[tuple[int, str]],
    *,
    spec: dict[str, Any] | None = None,
    workers: int = 2,
) -> Tally:
    """Run every mutant (index, path) of ``kind`` in sandboxed batches; return the tally."""
    batches: list[list[tuple[int, str]]] = [[]]
    for item in mutants:
        if len(batches[-1]) == BATCH:
            batches.append([])
        batches[-1].append(item)
    total = Tally()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for result in pool.map(lambda b: _run_batch(kind, b, spec or {}), batches):
            total.merge(result)
    return total


# ---------------------------------------------------------------------- mutant writers
def json_mutants(
    seeds: list[Any],
    directory: Path,
    count: int,
    seed: int,
    name: str = "tokenizer.json",
    *,
    raw_edits: bool = True,
) -> Iterator[tuple[int, str]]:
    """``count`` mutated JSON documents, each in its own directory as ``name``. Without
    ``raw_edits`` the file always parses (it carries Python values to an API, not a file
    to a loader)."""
    rng = random.Random(seed)
    for i in range(count):
        doc = mutate.mutate_json(rng.choice(seeds), rng)
        target = directory / f"m{i}"
        target.mkdir(parents=True, exist_ok=True)
        if raw_edits:
            data = mutate.dump_json(doc, rng)
        else:
            data = json.dumps(doc).encode("utf-8", "surrogatepass")
        (target / name).write_bytes(data)
        yield i, str(target / name)


def byte_mutants(
    seeds: list[bytes],
    directory: Path,
    count: int,
    seed: int,
    suffix: str,
    mutator: Callable[[bytes, random.Random], bytes] = mutate.mutate_bytes,
) -> Iterator[tuple[int, str]]:
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        path = directory / f"m{i}{suffix}"
        path.write_bytes(mutator(rng.choice(seeds), rng))
        yield i, str(path)


def artifact_mutants(
    original: Path, directory: Path, count: int, seed: int
) -> Iterator[tuple[int, str]]:
    """Copies of a saved artifact directory with one of its files mutated."""
    rng = random.Random(seed)
    files = sorted(p.name for p in original.iterdir() if p.is_file())
    for i in range(count):
        target = directory / f"m{i}"
        shutil.copytree(original, target)
        name = rng.choice(files)
        data = (original / name).read_bytes()
        if name.endswith(".json") and rng.random() < 0.8:
            doc = json.loads(data)
            mutated = mutate.dump_json(mutate.mutate_json(doc, rng), rng)
        else:
            mutated = mutate.mutate_bytes(data, rng)
        if rng.random() < 0.1:
            (target / name).unlink()  # a deleted contract or tokenizer file
        else:
            (target / name).write_bytes(mutated)
        yield i, str(target)
