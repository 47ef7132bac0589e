"""BPE training scaling: tokenpact vs rustbpe from 50 MB to 1 GB of text (issue 12).

Each (trainer, size) runs in its own child process, which streams the text from
``../shared/corpus`` (bench-mixed documents, then every translation of
parallel-gettext, about 130 MB of distinct text; larger sizes cycle through it again, so
beyond that point the number of distinct pre-tokens stops growing) and trains vocab
32,000 with the GPT-4 pattern, 2 threads. Reported: training time and the child's peak
RSS (the streamed text is never held in memory). Writes the "train-scaling" section of
docs/PERFORMANCE.md with a plot (docs/train_scaling.png) when matplotlib is installed.

    python benchmarks/bench_train_scaling.py [--sizes 50 100 200 500 1000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

TRAINERS = ("tokenpact", "rustbpe")


def _distinct_texts() -> Iterator[str]:
    with gzip.open(_common.corpus_path(), "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)["text"]
    path = _common.corpus_path("parallel-gettext.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            yield "\n".join(v for k, v in record.items() if k not in ("id", "domain"))


def stream(megabytes: int) -> Iterator[str]:
    """Texts until ``megabytes`` of UTF-8 have been produced (cycling the corpus)."""
    left = megabytes * _common.MB
    while True:
        for text in _distinct_texts():
            size = len(text.encode())
            if size >= left:
                yield text.encode()[:left].decode("utf-8", "ignore")
                return
            left -= size
            yield text


def run_one(name: str, megabytes: int) -> dict[str, object]:
    from tokenpact.patterns import GPT4

    start = time.perf_counter()
    if name == "tokenpact":
        import tokenpact as tp

        tok = tp.train_bpe(stream(megabytes), vocab_size=32_000, pattern="gpt4", threads=2)
        vocab = tok.vocab_size
    else:
        import rustbpe

        rt = rustbpe.Tokenizer()
        rt.train_from_iterator(stream(megabytes), 32_000, pattern=GPT4)
        vocab = rt.vocab_size
    return {"train_seconds": time.perf_counter() - start, "vocab": vocab}


def plot(rows: list[tuple[int, dict[str, tuple[float, float]]]], out: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name in TRAINERS:
        xs = [size for size, r in rows if name in r]
        a.plot(xs, [r[name][0] for _, r in rows if name in r], marker="o", label=name)
        b.plot(xs, [r[name][1] for _, r in rows if name in r], marker="o", label=name)
    a.set(xlabel="corpus MB", ylabel="train s", title="BPE training time (vocab 32k)")
    b.set(xlabel="corpus MB", ylabel="peak RSS MB", title="peak RSS")
    a.legend()
    b.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[50, 100, 200, 500, 1000])
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child[0], int(args.child[1]))))
        return
    rows: list[tuple[int, dict[str, tuple[float, float]]]] = []
    table = []
    for size in args.sizes:
        result: dict[str, tuple[float, float]] = {}
        for name in TRAINERS:
            argv = [sys.executable, __file__, "--child", name, str(size)]
            child = _common.run_child(argv, env={"RAYON_NUM_THREADS": "2"})
            if child.returncode != 0:
                print(name, size, "failed", child.stdout[-500:], file=sys.stderr)
                continue
            info = json.loads(child.stdout.strip().splitlines()[-1])
            result[name] = (float(info["train_seconds"]), child.peak_rss_bytes / 1e6)
            print(name, size, result[name], file=sys.stderr, flush=True)
        rows.append((size, result))
        ours, peer = result.get("tokenpact"), result.get("rustbpe")
        ratio_t = f"{ours[0] / peer[0]:.2f}x" if ours and peer else "-"
        ratio_m = f"{ours[1] / peer[1]:.2f}x" if ours and peer else "-"
        table.append(
            [
                size,
                _common.fmt(ours[0]) if ours else "-",
                _common.fmt(peer[0]) if peer else "-",
                ratio_t,
                f"{ours[1]:.0f}" if ours else "-",
                f"{peer[1]:.0f}" if peer else "-",
                ratio_m,
            ]
        )
    headers = ["MB", "tokenpact s", "rustbpe s", "time ratio", "tokenpact RSS MB"]
    headers += ["rustbpe RSS MB", "RSS ratio"]
    image = _common.REPO_ROOT / "docs" / "train_scaling.png"
    parts = [
        f"BPE training scaling, vocab 32,000, GPT-4 pattern, 2 threads; machine: "
        f"{_common.machine_info()} (shared with other agents during the run). Text above "
        "~130 MB cycles the distinct corpus again. Command: "
        "`python benchmarks/bench_train_scaling.py`.",
        _common.markdown_table(headers, table),
    ]
    if plot(rows, image):
        parts.append("![BPE training time and peak RSS against corpus size](train_scaling.png)")
    print("\n\n".join(parts))
    if not args.no_write:
        _common.update_performance_section("train-scaling", "\n\n".join(parts))


if __name__ == "__main__":
    main()
