"""What SFT supervision costs: ``render_columns(threads=1)`` per record, by ``supervise``.

Run from the repository root::

    python benchmarks/bench_supervision.py                 # prints the table
    python benchmarks/bench_supervision.py --write-docs    # also update docs/PERFORMANCE.md
    python benchmarks/bench_supervision.py --models llama-3.1 --rounds 3   # quick

Records: SFT conversations in training mode, ``exchanges`` user/assistant pairs (message
texts are 20-300 character snippets of ``../shared/corpus/bench-mixed.jsonl.gz``), on the
real templates of ``tests/chat/chat_data.py``. Rows: ``supervise="turns"`` (every
assistant turn, the default), ``supervise="final"`` and ``floor``: the same call with the
supervised turns left empty (``supervision.assistant_turns`` returning none), i.e. what
rendering and encoding cost without the supervision rule. Each round renders every record
once per row, interleaved; the best round's CPU time per record is kept. The IDs and masks
of ``turns`` are compared with ``render`` record by record before timing.

Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    fmt,
    machine_info,
    markdown_table,
    update_performance_section,
    use_repo_tests,
)

MODELS = ("llama-3.1", "qwen-2.5", "qwen-3", "deepseek-v3")


def snippets(limit: int = 2000) -> list[str]:
    from _common import corpus_path

    texts = []
    with gzip.open(corpus_path(), "rt", encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line).get("text", "")
            if text.strip():
                texts.append(text)
            if len(texts) >= limit:
                break
    return texts


def records(texts: list[str], exchanges: int, count: int, seed: int = 0) -> list[Any]:
    rng = random.Random(seed)

    def snippet() -> str:
        text = rng.choice(texts)
        size = rng.randint(20, 300)
        start = rng.randrange(max(1, len(text) - size + 1))
        return text[start : start + size]

    out = []
    for _ in range(count):
        messages = []
        for _ in range(exchanges):
            messages.append({"role": "user", "content": snippet()})
            messages.append({"role": "assistant", "content": snippet()})
        out.append(messages)
    return out


def load(name: str) -> Any:
    use_repo_tests()
    import tokenpact as tp
    import tokenpact.chat  # noqa: F401
    from chat.chat_data import model_dir

    directory = model_dir(name)
    return tp.chat.ChatTemplate.from_hf(directory, tp.Tokenizer.load(directory))


def measure(template: Any, recs: list[Any], rounds: int) -> dict[str, float]:
    from tokenpact.chat import supervision

    real = supervision.assistant_turns

    def floor(*args: Any, **kwargs: Any) -> list[Any]:
        return []

    # The IDs and masks of every row equal render's (the floor: render's IDs).
    cols = template.render_columns(recs, threads=1)
    for k, messages in enumerate(recs):
        conv = template.render(messages)
        assert cols[k].input_ids.tolist() == conv.input_ids, k
        assert cols[k].assistant_mask.tolist() == conv.assistant_mask, k
    rows = {
        "turns": lambda: template.render_columns(recs, threads=1),
        "final": lambda: template.render_columns(recs, threads=1, supervise="final"),
        "floor": lambda: template.render_columns(recs, threads=1),
    }
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(rounds):
        for name, fn in rows.items():
            if name == "floor":
                supervision.assistant_turns = floor  # type: ignore[assignment]
            try:
                c = time.process_time()
                fn()
                best[name] = min(best[name], time.process_time() - c)
            finally:
                supervision.assistant_turns = real  # type: ignore[assignment]
    return {k: v / len(recs) * 1e6 for k, v in best.items()}


def worker(args: argparse.Namespace) -> None:
    """One measurement in this process (the tree on ``PYTHONPATH``), as JSON lines."""
    texts = snippets()
    for name in args.models:
        template = load(name)
        for exchanges in args.exchanges:
            us = measure(template, records(texts, exchanges, args.count), args.rounds)
            print(json.dumps({"model": name, "messages": 2 * exchanges, **us}), flush=True)


def run_tree(python_dir: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """:func:`worker` in a child process importing tokenpact from ``python_dir``."""
    import subprocess

    argv = [sys.executable, __file__, "--worker", "--count", str(args.count)]
    argv += ["--rounds", str(args.rounds), "--models", *args.models]
    argv += ["--exchanges", *map(str, args.exchanges)]
    env = dict(os.environ, PYTHONPATH=python_dir)
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--exchanges", nargs="+", type=int, default=[1, 3, 5])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--baseline",
        help="a python/ directory of another tree (e.g. `git archive` of an earlier "
        "commit, with this tree's native module copied in): measured in alternation with "
        "this tree, in child processes, best of --repeat",
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    here = str(Path(__file__).resolve().parents[1] / "python")
    trees = {"after": here} if not args.baseline else {"before": args.baseline, "after": here}
    best: dict[tuple[str, str, int], dict[str, float]] = {}
    for _ in range(args.repeat):
        for label, tree in trees.items():
            for row in run_tree(tree, args):
                key = (label, row["model"], row["messages"])
                old = best.get(key)
                best[key] = (
                    row
                    if old is None
                    else {k: min(old[k], row[k]) for k in row if k in ("turns", "final", "floor")}
                    | {"model": row["model"], "messages": row["messages"]}
                )
    rows = []
    for name in args.models:
        for exchanges in args.exchanges:
            after = best[("after", name, 2 * exchanges)]
            before = best.get(("before", name, 2 * exchanges))
            cells = [name, 2 * exchanges, fmt(after["floor"], 1)]
            if before is not None:
                cells += [fmt(before["final"], 1), fmt(after["final"], 1)]
                cells += [fmt(before["turns"], 1), fmt(after["turns"], 1)]
                cells += [f"{before['turns'] / after['floor']:.2f}x"]
            else:
                cells += [fmt(after["final"], 1), fmt(after["turns"], 1)]
            cells += [f"{after['turns'] / after['floor']:.2f}x"]
            rows.append(cells)
    if args.baseline:
        headers = ["template", "messages", "floor us/rec", "final before", "final after"]
        headers += ["turns before", "turns after", "turns/floor before", "turns/floor after"]
    else:
        headers = ["template", "messages", "floor us/rec", "final us/rec", "turns us/rec"]
        headers += ["turns / floor"]
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = markdown_table(headers, rows)
    caption = (
        f"`benchmarks/bench_supervision.py`: {machine_info()}; load average {load_avg} at "
        f"the end; {args.count} records per row, best of {args.rounds} interleaved rounds "
        f"(x {args.repeat} alternating runs per tree), CPU time per record (us) of "
        "`render_columns(threads=1)` in training mode. `floor`: the same call with the "
        "supervised turns left empty (rendering and encoding alone)."
    )
    print(caption)
    print(table)
    if args.write_docs:
        update_performance_section("bench_supervision", f"{caption}\n\n{table}")


if __name__ == "__main__":
    main()
