"""Start-up cost: ``import tokenpact`` and ``tokenpact --help`` beside ``import tiktoken``.

Each command runs in a fresh interpreter; the table shows the median and best wall time
of N runs (interpreter start included, so ``python -c pass`` is printed as the floor).

    python benchmarks/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES: list[tuple[str, list[str]]] = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("import tokenpact", [sys.executable, "-c", "import tokenpact"]),
    ("tokenpact --help", [sys.executable, "-m", "tokenpact.cli", "--help"]),
    ("import tiktoken", [sys.executable, "-c", "import tiktoken"]),
    ("import tokenizers", [sys.executable, "-c", "import tokenizers"]),
]


def measure(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"| command | median s | best s |  (runs={args.runs})")
    print("|---|---:|---:|")
    for label, argv in CASES:
        try:
            times = measure(argv, args.runs)
        except subprocess.CalledProcessError:
            print(f"| {label} | unavailable | |")
            continue
        print(f"| {label} | {statistics.median(times):.3f} | {min(times):.3f} |")


if __name__ == "__main__":
    main()
