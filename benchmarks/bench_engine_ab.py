"""Encode cost of one tokenpact build, for A/B comparisons of two builds of the native
engine (issue 11: one ``_native.Engine`` over both runtimes).

Run it once per build, pointing ``PYTHONPATH`` at a package directory holding that
build's ``_native.abi3.so``. On a shared machine wall time is too noisy to see a few
percent; run it under callgrind with a fixed hash seed and compare instruction counts
(``none`` is the load-only baseline to subtract)::

    PYTHONHASHSEED=0 RAYON_NUM_THREADS=1 PYTHONPATH=/tmp/base valgrind --tool=callgrind \\
        python benchmarks/bench_engine_ab.py bpe short
    python benchmarks/bench_engine_ab.py bpe long --time    # wall-clock timing instead

Workloads: ``short`` encodes the first 64 characters of 400 corpus documents (20 times
for BPE, 20 times for SentencePiece), ``long`` encodes whole documents (1 MiB of
bench-mixed, 512 KiB for SentencePiece), ``none`` only loads.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["bpe", "sentencepiece"])
    parser.add_argument("workload", choices=["none", "short", "long"])
    parser.add_argument("--time", action="store_true", help="print best-of-7 CPU seconds")
    args = parser.parse_args(argv)

    import tokenpact as tp

    common.use_repo_tests()
    from conformance import peer_data

    if args.model == "bpe":
        model = peer_data.llama3_tiktoken_model()
        specials = peer_data.llama3_special_tokens()
        tok = tp.Tokenizer.from_tiktoken(model, pattern="llama3", special_tokens=specials)
        limit = 1 << 20
    else:
        mistral = next(p for p in peer_data.mistral_models() if p.name.endswith(".model.v3"))
        tok = tp.Tokenizer.load(mistral)
        limit = 1 << 19
    texts = common.load_texts(common.corpus_path(), limit_bytes=limit)
    short = [t[:64] for t in texts][:400]

    def run() -> None:
        if args.workload == "short":
            for _ in range(20):
                for t in short:
                    tok.encode(t)
        elif args.workload == "long":
            for t in texts:
                tok.encode(t)

    if not args.time:
        run()
        return 0
    best = min(_cpu_seconds(run) for _ in range(7))
    print(f"{args.model} {args.workload}: {best * 1e3:.2f} ms CPU (best of 7)")
    return 0


def _cpu_seconds(fn: Callable[[], None]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


if __name__ == "__main__":
    raise SystemExit(main())
