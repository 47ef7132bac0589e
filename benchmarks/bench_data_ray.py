"""Part 4 of bench_data.py: the Ray engine on a local 2-CPU Ray instance against the local
engine, and the fixed costs of Ray encoding one by one.

Run alone (prints the tables, changes no file; ~2 minutes on a quiet machine)::

    PYTHONPATH=python python benchmarks/bench_data_ray.py            # whole bench-mixed
    PYTHONPATH=python python benchmarks/bench_data_ray.py --quick    # a third of 15 MB

``benchmarks/bench_data.py`` runs it as its part 4 and records it in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import tokenpact as tp  # noqa: E402
from tokenpact.data import Document, encode_dataset, near_dedup, read_documents  # noqa: E402
from tokenpact.data import train_bpe as engine_train_bpe  # noqa: E402

TINY = 200  # documents of a "fixed cost" call


def bench_docs(limit_bytes: int | None) -> list[Document]:
    path = _common.corpus_path("bench-mixed.jsonl.gz")
    docs = []
    total = 0
    for d in read_documents(path, source_field="slice", duplicate_ids="number"):
        docs.append(d)
        total += len(d.text)
        if limit_bytes is not None and total >= limit_bytes:
            break
    return docs


def _init_ray() -> float:
    import ray

    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=1_000_000_000,
        _node_ip_address="127.0.0.1",
    )
    return time.perf_counter() - start


def tree_cpu_seconds() -> float:
    """CPU time of this process and every process it started (the local Ray instance:
    raylet, GCS, the workers), read from /proc: what a step costs whatever the load."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, UnicodeDecodeError, IndexError):
                continue  # a process that exited meanwhile
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, frontier = 0.0, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        total += stats.get(pid, (0, 0.0))[1]
        frontier.extend(children.get(pid, []))
    return total


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, CPU seconds (this process tree) and the result of one call."""
    cpu = tree_cpu_seconds()
    seconds, result = _common.timed(fn)
    return seconds, tree_cpu_seconds() - cpu, result


def _variants(tok: tp.Tokenizer) -> Callable[[], tp.Tokenizer]:
    """A new tokenizer per call (the same merges plus one special token of its own, so a
    new semantic hash): what the workers have never seen and must be shipped."""
    specials = [t for t, _ in tok.spec.special_tokens]
    numbers = count()
    pattern = tok.pattern_name or tok.pattern
    return lambda: tp.Tokenizer.from_merges(
        tok.merges, pattern=pattern, special_tokens=[*specials, f"<|bench-{next(numbers)}|>"]
    )


def fixed_costs(tok: tp.Tokenizer, docs: list[Document], tmp: Path) -> list[list[str]]:
    """Each fixed cost of Ray encoding alone, right after ``ray.init`` (fresh workers)."""
    import ray

    from tokenpact.data import ray_encoder
    from tokenpact.data.ray_engine import release_ray_workers

    rows: list[list[str]] = []
    tiny = docs[:TINY]

    def enc(t: tp.Tokenizer, name: str, **options: Any) -> None:
        encode_dataset(tiny, t, tmp / name, engine="ray", ray_options=options, overwrite=True)

    # The driver's own first-use imports (Parquet writer, contract) are not Ray's cost.
    encode_dataset(tiny, tok, tmp / "driver-warm-up", overwrite=True)
    seconds, _ = _common.timed(partial(enc, tok, "cold"))
    rows.append(
        [
            "first Ray call after `ray.init` (first tasks, tokenpact imports, tokenizer built)",
            f"{seconds:.2f}",
        ]
    )
    seconds, _ = _common.timed(partial(enc, tok, "warm"))
    rows.append(["a call with the same tokenizer (workers hold it)", f"{seconds:.2f}"])
    new = _variants(tok)
    seconds, _ = _common.timed(lambda: enc(new(), "new"))
    rows.append(
        ["a call with a new tokenizer (shipped and built on warm workers)", f"{seconds:.2f}"]
    )
    blob = pickle.dumps(tok.spec, protocol=pickle.HIGHEST_PROTOCOL)
    seconds, _ = _common.timed(lambda: ray.put(tok.spec), repeat=3)
    rows.append(
        [f"driver: spec pickled ({len(blob) / 1e6:.2f} MB) into the object store", f"{seconds:.3f}"]
    )

    @ray.remote(num_cpus=1)
    def rebuild(spec_box: list[Any], expected: str) -> float:
        start = time.perf_counter()
        ray_encoder.tokenizer_from_spec(ray.get(spec_box[0]), expected)
        return time.perf_counter() - start

    worker = min(
        ray.get([rebuild.remote([ray.put(tok.spec)], tok.semantic_hash) for _ in range(3)])
    )
    rows.append(
        ["worker: tokenizer rebuilt from the spec + semantic hash checked", f"{worker:.3f}"]
    )
    with tempfile.TemporaryDirectory() as scratch:
        seconds, _ = _common.timed(lambda: tok.save(Path(scratch) / "t"))
        loaded, _ = _common.timed(lambda: tp.Tokenizer.load(Path(scratch) / "t", verify=False))
    rows.append(
        [
            "(before: `tokenpact.json` written by the driver, loaded by each worker)",
            f"{seconds:.2f} + {loaded:.2f}",
        ]
    )

    @ray.remote(num_cpus=1)
    class Probe:
        def ready(self) -> int:
            return os.getpid()

    def actors() -> None:
        pool = [Probe.remote() for _ in range(2)]  # type: ignore[attr-defined]
        ray.get([a.ready.remote() for a in pool])
        for a in pool:
            ray.kill(a)

    seconds, _ = _common.timed(actors)
    rows.append(
        [
            "2 new actor processes started (empty actors; `keep_workers=True` pays this)",
            f"{seconds:.2f}",
        ]
    )
    release_ray_workers()
    cold, _ = _common.timed(partial(enc, tok, "kept", workers=2, keep_workers=True))
    warm, _ = _common.timed(partial(enc, tok, "kept", workers=2, keep_workers=True))
    release_ray_workers()
    rows.append(
        [
            "`keep_workers=True`: first call (2 actors start, build it) minus a kept call",
            f"{cold - warm:.2f}",
        ]
    )
    return rows


def part_ray(
    quick: bool, tok: tp.Tokenizer, docs: list[Document], *, only: str | None = None
) -> tuple[str, dict[str, Any]]:
    """Each step on the local engine and on a local 2-CPU Ray instance.

    The whole bench-mixed corpus unless ``quick``. Ray's cost is split in two: the
    fixed cost of a call (the same call on 200 documents) and the marginal ratio,
    ``(Ray - Ray fixed) / (local - local on 200 documents)``, which is what a corpus
    large enough to amortize the fixed cost converges to. ``ray.init`` is excluded
    from every row (reported once).
    """
    import ray

    from tokenpact.data.ray_engine import release_ray_workers

    if not quick:
        docs = bench_docs(None)
    tiny = docs[:TINY]
    load_before = os.getloadavg()[0]
    startup = _init_ray()
    rows = []
    ratios: dict[str, dict[str, float]] = {}
    tmp_dir = tempfile.TemporaryDirectory()
    tmp = Path(tmp_dir.name)

    def enc(d: list[Document], t: tp.Tokenizer | None = None, **ray: Any) -> Any:
        engine = "ray" if ray else "local"
        out = tmp / f"{engine}-{len(d)}"
        return encode_dataset(
            d, t or tok, out, engine=engine, ray_options=ray or None, overwrite=True
        )

    new = _variants(tok)
    step = Callable[[list[Document]], Any]
    jobs: dict[str, tuple[step, step]] = {
        "pre-token counts + BPE merges (vocab 4096)": (
            lambda d: engine_train_bpe(d, vocab_size=4096),
            lambda d: engine_train_bpe(d, vocab_size=4096, engine="ray"),
        ),
        "pre-token counts + BPE merges, the same blocks through Ray Data (ray_data=True)": (
            lambda d: engine_train_bpe(d, vocab_size=4096),
            lambda d: engine_train_bpe(
                d, vocab_size=4096, engine="ray", ray_options={"ray_data": True}
            ),
        ),
        "near dedup (MinHash + LSH, 0.8)": (
            lambda d: near_dedup(d, threshold=0.8),
            lambda d: near_dedup(d, threshold=0.8, engine="ray"),
        ),
        "near dedup, the same blocks through Ray Data (ray_data=True)": (
            lambda d: near_dedup(d, threshold=0.8),
            lambda d: near_dedup(d, threshold=0.8, engine="ray", ray_options={"ray_data": True}),
        ),
        "encode to Parquet shards, a new tokenizer each call (shipped to the workers)": (
            lambda d: enc(d, current[0]),
            lambda d: enc(d, current[0], workers=2),
        ),
        "encode to Parquet shards, the same tokenizer again (the workers hold it)": (
            lambda d: enc(d),
            lambda d: enc(d, workers=2),
        ),
        "encode to Parquet shards, kept actors (keep_workers=True)": (
            lambda d: enc(d),
            lambda d: enc(d, workers=2, keep_workers=True),
        ),
    }
    if only is not None:
        jobs = {name: job for name, job in jobs.items() if re.search(only, name)}
    current = [tok]
    try:
        fixed = fixed_costs(tok, docs, tmp) if only is None else []
        texts = [d.text for d in docs]
        for name, (local, remote) in jobs.items():
            if "kept" in name:
                release_ray_workers()
                remote(tiny)  # starts the pool (its cost is in the fixed-cost table)
            runs: dict[str, list[float]] = {
                "local": [],
                "ray": [],
                "local0": [],
                "ray0": [],
                "local_cpu": [],
                "ray_cpu": [],
            }
            same = True
            fresh = "new tokenizer" in name
            for _ in range(2 if quick else 3):
                # The local run leaves nothing on the workers: a tokenizer made just
                # before the pair is new to them when the Ray run ships it.
                current[0] = new() if fresh else tok
                t, c, a = timed_cpu(partial(local, docs))
                runs["local"].append(t)
                runs["local_cpu"].append(c)
                t, c, b = timed_cpu(partial(remote, docs))
                runs["ray"].append(t)
                runs["ray_cpu"].append(c)
                current[0] = new() if fresh else tok
                runs["local0"].append(_common.timed(partial(local, tiny))[0])
                runs["ray0"].append(_common.timed(partial(remote, tiny))[0])
                if isinstance(a, dict):
                    same = same and a == b
                elif hasattr(a, "merges"):
                    same = same and a.merges == b.merges
                else:
                    same = same and a.duplicate_of == b.duplicate_of
            m = {k: float(np.median(v)) for k, v in runs.items()}
            marginal = (m["ray"] - m["ray0"]) / max(1e-9, m["local"] - m["local0"])
            if "ray_data=True" not in name:  # a comparison row, not the engine's default
                ratios[name] = {"end_to_end": m["ray"] / m["local"], "marginal": marginal}
            rows.append(
                [
                    name,
                    f"{m['local']:.2f}",
                    f"{m['ray']:.2f}",
                    f"{m['ray'] / m['local']:.2f}x",
                    f"{m['ray0']:.2f}",
                    f"{marginal:.2f}x",
                    f"{m['local_cpu']:.2f} / {m['ray_cpu']:.2f} "
                    f"({m['ray_cpu'] / max(1e-9, m['local_cpu']):.2f}x)",
                    str(same),
                ]
            )
    finally:
        release_ray_workers()
        ray.shutdown()
        tmp_dir.cleanup()
    table = _common.markdown_table(
        [
            "step",
            "local s",
            "Ray s",
            "Ray / local (end to end)",
            f"Ray fixed s ({TINY} docs)",
            "Ray / local (marginal)",
            "CPU-s local / Ray (driver + Ray processes)",
            "identical",
        ],
        rows,
    )
    costs = _common.markdown_table(["fixed cost of Ray encoding (measured alone)", "s"], fixed)
    mb = _common.utf8_bytes(texts) / 1e6
    note = (
        f"{len(docs)} documents, {mb:.1f} MB; medians of {len(runs['ray'])} alternating "
        f"rounds; `ray.init` ({startup:.1f} s) excluded everywhere. Load average "
        f"{load_before:.1f} before the run, {os.getloadavg()[0]:.1f} after."
    )
    return (f"{table}\n\n{note}\n\n{costs}" if fixed else f"{table}\n\n{note}"), ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a third of 15 MB of documents")
    parser.add_argument(
        "--only", help="run only the steps whose name matches this regex (no fixed-cost table)"
    )
    args = parser.parse_args()
    docs = bench_docs(3_000_000 if args.quick else 15_000_000)
    tok = tp.train_bpe([d.text for d in docs[::4]], vocab_size=16_384)
    text, ratios = part_ray(
        args.quick, tok, docs[: len(docs) // 3] if args.quick else docs, only=args.only
    )
    print(text)
    worst = max(r["end_to_end"] for r in ratios.values())
    print(f"\nworst end-to-end ratio {worst:.2f}x ({'met' if worst <= 2 else 'not met'})")


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    main()
