"""Shared benchmark helpers: corpus loading, timing, peak RSS, tables, PERFORMANCE.md.

Benchmarks compare tokenpact with its peers in the same run and on the same machine;
nothing here asserts a time. Tables go to ``docs/PERFORMANCE.md`` between the markers
``<!-- begin NAME -->`` and ``<!-- end NAME -->`` so each script owns one section.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
PERFORMANCE_MD = REPO_ROOT / "docs" / "PERFORMANCE.md"
MB = 1_000_000  # throughput is reported in decimal megabytes of UTF-8 per second

T = TypeVar("T")
_NUMBER = re.compile(r"-?[\d,]*\.?\d+(e[+-]?\d+)?x?")


def use_repo_tests() -> None:
    """Make ``tests/conformance/peer_data`` importable as ``conformance.peer_data``."""
    tests = str(REPO_ROOT / "tests")
    if tests not in sys.path:
        # tests/ is not a package; importing it as "tests" could pick up a stray
        # site-packages "tests" package instead.
        sys.path.insert(0, tests)


# --------------------------------------------------------------------------- corpus


def corpus_path(name: str = "bench-mixed.jsonl.gz") -> Path:
    """The path of a shared benchmark corpus file; exit with a message if it is absent."""
    path = CORPUS_DIR / name
    if not path.is_file():
        sys.exit(
            f"benchmark corpus {path} is absent: it sits beside the checkout as "
            f"../shared/corpus/{name} on developer machines and in CI (see its README)"
        )
    return path


def load_records(path: Path, limit_bytes: int | None = None) -> list[dict[str, Any]]:
    """JSONL records in file order, stopping once ``limit_bytes`` of text are loaded."""
    records: list[dict[str, Any]] = []
    total = 0
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            records.append(record)
            total += len(record.get("text", "").encode("utf-8"))
            if limit_bytes is not None and total >= limit_bytes:
                break
    return records


def load_texts(path: Path, limit_bytes: int | None = None) -> list[str]:
    """The ``text`` field of each record (see :func:`tokenpact.corpus.iter_jsonl_texts`)."""
    from tokenpact.corpus import iter_jsonl_texts

    texts: list[str] = []
    total = 0
    for text in iter_jsonl_texts(path, "text"):
        texts.append(text)
        total += len(text.encode("utf-8"))
        if limit_bytes is not None and total >= limit_bytes:
            break
    return texts


def utf8_bytes(texts: Iterable[str]) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


# --------------------------------------------------------------------------- timing


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Best wall time of ``repeat`` calls, and the result of the last call."""
    best = float("inf")
    result: T
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def mb_per_s(nbytes: int, seconds: float) -> float:
    return nbytes / MB / seconds if seconds > 0 else float("inf")


# --------------------------------------------------------------------------- memory


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (``VmHWM``, or ``ru_maxrss``)."""
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is KiB on Linux but bytes on macOS.
    return peak if sys.platform == "darwin" else peak * 1024


def reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux only); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class ChildResult:
    """Wall time and peak RSS of one child process."""

    seconds: float
    peak_rss_bytes: int
    returncode: int
    stdout: str


def run_child(argv: Sequence[str], env: dict[str, str] | None = None) -> ChildResult:
    """Run a command; measure its wall time and its own peak RSS (not the parent's)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    # wait4 reports the rusage of exactly this child; RUSAGE_CHILDREN would be the max
    # over every child so far.
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
    return ChildResult(seconds, peak, proc.returncode, stdout)


# --------------------------------------------------------------------------- reporting


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; numbers are right-aligned."""

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|")

    def numeric(column: int) -> bool:
        # Numbers, or cells formatted by fmt() ("1,234.56", "2.0x"); "-" means not measured.
        values = [str(r[column]) for r in rows if r[column] not in ("", "-", None)]
        return bool(values) and all(_NUMBER.fullmatch(v) for v in values)

    align = ["---:" if rows and numeric(i) else "---" for i in range(len(headers))]
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(value: float | None, digits: int = 2) -> str:
    """A number for a table cell; ``-`` when not measured."""
    return "-" if value is None else f"{value:,.{digits}f}"


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> str:
    """One line describing the machine and interpreter, for table captions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    system = f"{platform.system()} {platform.release()}"
    return f"{cpu}, {cpus} CPUs, {system}, Python {sys.version.split()[0]}"


def update_performance_section(name: str, markdown: str, path: Path = PERFORMANCE_MD) -> Path:
    """Replace the ``NAME`` section of PERFORMANCE.md (append it, or create the file)."""
    from tokenpact._io import atomic_write_text

    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    if path.is_file():
        current = path.read_text(encoding="utf-8")
    else:
        current = (
            "# Performance\n\nLatest measured tables, written by the scripts in `benchmarks/`"
            " (each owns one section). Peers run in the same process on the same machine.\n"
        )
    found = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if found.search(current):
        updated = found.sub(lambda _: block, current, count=1)
    else:
        updated = current.rstrip("\n") + "\n\n" + block + "\n"
    atomic_write_text(path, updated)
    return path
