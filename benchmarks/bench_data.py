"""Corpus preparation speed (tokenpact.data) against its peers, in one run.

Run from the repository root::

    PYTHONPATH=python python benchmarks/bench_data.py            # full run, updates docs
    PYTHONPATH=python python benchmarks/bench_data.py --quick    # small samples, no docs
    PYTHONPATH=python python benchmarks/bench_data.py --only shards  # part 3 only, no docs

1. MinHash signatures (128 permutations, 5-word shingles, shingling included) of
   ``bench-mixed`` documents: tokenpact's Rust engine on 1 and 2 threads against
   ``datasketch.MinHash.update_batch``; the signatures are checked to be identical.
2. Exact + near dedup (threshold 0.8) end to end of ``bench-mixed`` plus
   ``parallel-gettext`` (one document per message and language), reading included, in
   a child process so its peak RSS is its own.
3. Encoding to shards (Parquet and Megatron) against ``Tokenizer.encode_batch_flat``
   alone, same tokenizer and documents.
4. The Ray engine on a local 2-CPU Ray instance against the local engine, and its
   fixed costs one by one (``benchmarks/bench_data_ray.py``, which also runs alone).

Asserts nothing about time; prints markdown and updates docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import tokenpact as tp  # noqa: E402
from bench_data_ray import bench_docs, part_ray  # noqa: E402
from tokenpact.data import (  # noqa: E402
    Document,
    MinHashParams,
    deduplicate,
    encode_dataset,
    minhash_signatures,
    shard_sink,
    shingles,
)


def gettext_docs() -> list[Document]:
    """parallel-gettext melted: one document per (message, language)."""
    path = _common.corpus_path("parallel-gettext.jsonl.gz")
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle):
            # "id" is both the record ID and Indonesian's language code, and the file
            # keeps only one of them: number the records by line instead.
            record = json.loads(line)
            for lang, text in record.items():
                if lang != "domain" and isinstance(text, str):
                    out.append(Document(f"pg{lineno:06d}:{lang}", text, source=f"gettext-{lang}"))
    return out


# --------------------------------------------------------------------------- part 1
def part_minhash(quick: bool) -> tuple[str, dict[str, Any]]:
    from datasketch import MinHash

    # The whole corpus: on 20 MB one pass takes ~0.1 s, too short to time 1 vs 2 threads
    # (thread start-up and page faults of the output are a visible share of it).
    docs = bench_docs(3_000_000 if quick else 60_000_000)
    texts = [d.text for d in docs]
    nbytes = _common.utf8_bytes(texts)
    params = MinHashParams(num_perm=128, n=5)
    peer_texts = texts[: max(1, len(texts) // (10 if quick else 24))]
    peer_bytes = _common.utf8_bytes(peer_texts)

    def peer() -> list[np.ndarray]:
        out = []
        for t in peer_texts:
            m = MinHash(num_perm=128, seed=1)
            m.update_batch([s.encode("utf-8") for s in shingles(t, n=5)])
            out.append(m.hashvalues)
        return out

    # Interleaved rounds, best of each: the machine is shared, and load that drifts
    # between one long measurement and the next would bias the ratio.
    # CPU seconds measure "per core" on a machine shared with other jobs: waiting for a
    # core does not count, which wall time would charge to whichever side was unlucky.
    best = {"peer": float("inf"), 1: float("inf"), 2: float("inf")}
    cpu = {"peer": float("inf"), 1: float("inf"), 2: float("inf")}
    load = [os.getloadavg()[0]]
    peer_sigs: list[np.ndarray] = []
    sig1 = np.zeros((0, 128), dtype=np.uint32)
    for _ in range(2 if quick else 3):
        c0 = time.process_time()
        t, peer_sigs = _common.timed(peer)
        cpu["peer"] = min(cpu["peer"], time.process_time() - c0)
        best["peer"] = min(best["peer"], t)
        for k in (1, 2):
            c0 = time.process_time()
            t, sig = _common.timed(functools.partial(minhash_signatures, texts, params, threads=k))
            # Process CPU time counts both workers: with 2 threads it shows whether the
            # work grew (parallel overhead) apart from whether 2 cores were free.
            cpu[k] = min(cpu[k], time.process_time() - c0)
            if k == 1:
                sig1 = sig
            best[k] = min(best[k], t)
        load.append(os.getloadavg()[0])
    t_peer = best["peer"]
    ours = {k: (best[k], sig1) for k in (1, 2)}
    per_cpu = (nbytes / cpu[1]) / (peer_bytes / cpu["peer"])
    same = bool(np.array_equal(np.asarray(peer_sigs), ours[1][1][: len(peer_texts)]))
    rates = {
        "datasketch update_batch (1 core)": _common.mb_per_s(peer_bytes, t_peer),
        "tokenpact, 1 thread": _common.mb_per_s(nbytes, ours[1][0]),
        "tokenpact, 2 threads": _common.mb_per_s(nbytes, ours[2][0]),
    }
    base = rates["datasketch update_batch (1 core)"]
    rows = [
        [name, _common.fmt(rate), _common.fmt(rate / base, 1) + "x"] for name, rate in rates.items()
    ]
    table = _common.markdown_table(
        ["MinHash (128 perm, 5-word shingles)", "MB/s", "vs datasketch"], rows
    )
    scaling = ours[1][0] / ours[2][0]
    # What 2 threads would give on 2 free cores if nothing else ran: the 1-thread work
    # over the 2-thread work per thread. `busy` is how many cores the 2-thread run got.
    cpu_scaling = 2 * cpu[1] / cpu[2]
    busy = cpu[2] / ours[2][0]
    text = (
        f"{table}\n\nSignatures identical to datasketch on the {len(peer_texts)} compared "
        f"documents: **{same}**. Per CPU-second (1 thread each): tokenpact "
        f"{nbytes / cpu[1] / 1e6:.1f} MB, datasketch {peer_bytes / cpu['peer'] / 1e6:.2f} MB: "
        f"**{per_cpu:.1f}x**. Scaling 1 -> 2 threads (wall): **{scaling:.2f}x** "
        f"({len(texts)} documents, {nbytes / 1e6:.1f} MB); in CPU time the 2-thread run did "
        f"{cpu[2] / cpu[1]:.2f}x the 1-thread work ({cpu_scaling:.2f}x on two free cores) and "
        f"kept {busy:.2f} cores busy; 1-minute load average {min(load):.1f}-{max(load):.1f} "
        "on the 2 cores during this part."
    )
    if _autogroup_enabled():
        text += (
            "\n\nThe kernel has `sched_autogroup_enabled=1`: CPU time is divided between "
            "sessions, not threads, so on a loaded machine a process gets about the same "
            "share with 2 threads as with 1, and only the CPU-time figures show what the "
            "code does (the work with 2 threads against 1, no serial part)."
        )
    phases = minhash_phases()
    if phases:
        text += "\n\n" + phases
    return text, {
        "speedup_per_core": per_cpu,
        "scaling": scaling,
        "cpu_scaling": cpu_scaling,
        "identical": same,
        "load": (min(load), max(load)),
    }


def _autogroup_enabled() -> bool:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


PROFILE_MINHASH = _common.REPO_ROOT / "target" / "release" / "examples" / "profile_minhash"


def minhash_phases() -> str:
    """Per-shingle cost of each MinHash step from the Rust example, when it is built
    (``cargo build --release --example profile_minhash``); empty otherwise."""
    if not PROFILE_MINHASH.is_file():
        return ""
    corpus = _common.corpus_path("bench-mixed.jsonl.gz")
    out = subprocess.run(
        [str(PROFILE_MINHASH), str(corpus), "20"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    rows = []
    for line in out[1:]:
        name, sep, rest = line.partition("\t")
        if sep and rest.endswith("ns/shingle"):
            rows.append([name.strip(), rest.removesuffix("ns/shingle").strip()])
    table = _common.markdown_table(["step (per 5-word shingle)", "ns"], rows)
    return (
        f"Where the time goes ({out[0]}; on-CPU time of one thread, best of 5 rounds; "
        f"`cargo run --release --example profile_minhash`):\n\n{table}"
    )


# --------------------------------------------------------------------------- part 2
def dedup_child(quick: bool) -> None:
    start = time.perf_counter()
    docs = bench_docs(5_000_000 if quick else None)
    docs += gettext_docs()[: 50_000 if quick else None]
    read = time.perf_counter() - start
    outcome = deduplicate(docs, near=0.8, params=MinHashParams(num_perm=128, n=5))
    total = time.perf_counter() - start
    t = outcome.report.totals
    print(
        json.dumps(
            {
                "documents": t["documents"],
                "bytes": t["bytes"],
                "exact_removed": t["exact_removed"],
                "near_removed": t["near_removed"],
                "clusters": len(outcome.report.clusters),
                "read_s": read,
                "total_s": total,
                "pairs_checked": outcome.near.stats["pairs_checked"] if outcome.near else 0,
            }
        )
    )


def part_dedup(quick: bool) -> tuple[str, dict[str, Any]]:
    argv = [sys.executable, __file__, "--dedup-child"] + (["--quick"] if quick else [])
    child = _common.run_child(argv)
    r = json.loads(child.stdout.strip().splitlines()[-1])
    rows = [
        [
            f"{r['documents']:,}",
            f"{r['bytes'] / 1e6:.1f}",
            f"{r['exact_removed']:,}",
            f"{r['near_removed']:,}",
            f"{r['clusters']:,}",
            f"{r['read_s']:.1f}",
            f"{r['total_s']:.1f}",
            f"{child.peak_rss_bytes / 2**20:,.0f}",
        ]
    ]
    table = _common.markdown_table(
        [
            "documents",
            "MB",
            "exact removed",
            "near removed",
            "near clusters",
            "read s",
            "end-to-end s",
            "peak RSS MiB",
        ],
        rows,
    )
    return table, {"seconds": r["total_s"], "rss": child.peak_rss_bytes}


# --------------------------------------------------------------------------- part 3
def _wall_and_cpu(fn: Any) -> tuple[float, float]:
    """Wall seconds and process CPU seconds (every thread of this process) of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def part_shards(quick: bool, tok: tp.Tokenizer, docs: list[Document]) -> tuple[str, dict[str, Any]]:
    """encode_dataset against encode_batch_flat on the same documents and thread count.

    The whole bench-mixed corpus unless ``quick`` (then ``docs``). Rounds alternate the
    three jobs in a rotating order, so load from other jobs that drifts during the run
    hits all of them; the medians are reported, in wall time and in CPU time (a job that
    waits for a core on a shared machine is not charged for the wait in CPU time).
    """
    if not quick:
        docs = bench_docs(None)
    texts = [d.text for d in docs]
    nbytes = _common.utf8_bytes(texts)
    threads = 2
    runs: dict[str, list[tuple[float, float]]] = {
        "flat": [],
        "parquet": [],
        "parquet-pyarrow": [],
        "megatron": [],
    }
    native_writer = shard_sink.ShardWriter
    # The writer thread's own CPU (time.thread_time around every ShardWriter call, which
    # all run on that thread): what writing costs whatever the load.
    writer_cpu: dict[str, list[float]] = {k: [] for k in runs if k != "flat"}
    spent = [0.0]

    class TimedWriter(native_writer):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            t = time.thread_time()
            super().__init__(*args, **kwargs)
            spent[0] += time.thread_time() - t

        def add(self, chunk: Any) -> None:
            t = time.thread_time()
            super().add(chunk)
            spent[0] += time.thread_time() - t

        def finish(self) -> Any:
            t = time.thread_time()
            try:
                return super().finish()
            finally:
                spent[0] += time.thread_time() - t

    pyarrow_writer = functools.partial(TimedWriter, native=False)

    def encode(job: str, tmp: str) -> None:
        # "parquet-pyarrow": the same shards through pyarrow's writer (the one the native
        # writer replaced for uncompressed shards), for a same-run comparison.
        timed = pyarrow_writer if job == "parquet-pyarrow" else TimedWriter
        shard_sink.ShardWriter = timed  # type: ignore[assignment,misc]
        spent[0] = 0.0
        try:
            fmt = "megatron" if job == "megatron" else "parquet"
            encode_dataset(docs, tok, Path(tmp) / job, format=fmt, threads=threads, overwrite=True)
        finally:
            shard_sink.ShardWriter = native_writer  # type: ignore[misc]
        writer_cpu[job].append(spent[0])

    with tempfile.TemporaryDirectory() as tmp:
        encode_dataset(docs[:200], tok, Path(tmp) / "warm", format="parquet")  # imports
        jobs = ("parquet", "parquet-pyarrow", "megatron")
        for r in range(3 if quick else 7):
            runs["flat"].append(
                _wall_and_cpu(lambda: tok.encode_batch_flat(texts, threads=threads))
            )
            # The order rotates: with a fixed one, Parquet (always right after the flat
            # call) paid up to 0.1 CPU-s more than Megatron in some runs and none with
            # Megatron first; rotating spreads any such position bias over the jobs.
            for job in jobs[r % 3 :] + jobs[: r % 3]:
                runs[job].append(_wall_and_cpu(lambda job=job: encode(job, tmp)))
    wall = {k: float(np.median([w for w, _ in v])) for k, v in runs.items()}
    cpu = {k: float(np.median([c for _, c in v])) for k, v in runs.items()}
    rows = []
    ratios: dict[str, tuple[float, float]] = {}
    names = {
        "flat": "encode_batch_flat (no files)",
        "parquet": "encode_dataset, parquet (native writer)",
        "parquet-pyarrow": "encode_dataset, parquet (pyarrow writer, before)",
    }
    for k in runs:
        ratios[k] = (wall["flat"] / wall[k], cpu["flat"] / cpu[k])
        rows.append(
            [
                names.get(k, f"encode_dataset, {k}"),
                _common.fmt(_common.mb_per_s(nbytes, wall[k])),
                f"{ratios[k][0]:.0%}",
                f"{cpu[k]:.2f}",
                f"{ratios[k][1]:.0%}",
                f"{min(w for w, _ in runs[k]):.2f}-{max(w for w, _ in runs[k]):.2f}",
                f"{np.median(writer_cpu[k]):.3f}" if k in writer_cpu else "",
            ]
        )
    table = _common.markdown_table(
        [
            "shard encoding",
            "MB/s (wall)",
            "of flat (wall)",
            "CPU s",
            "of flat (CPU)",
            "wall s range",
            "writer thread CPU s",
        ],
        rows,
    )
    note = (
        f"{len(docs)} documents, {nbytes / 1e6:.1f} MB, vocab {tok.vocab_size}, "
        f"threads={threads} on both sides; medians of {len(runs['flat'])} alternating "
        f"rounds; load average before the run {os.getloadavg()[0]:.1f}."
    )
    ratios.pop("flat")
    return table + "\n\n" + note, ratios


# --------------------------------------------------------------------------- part 4
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small samples; do not update docs")
    parser.add_argument("--dedup-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument(
        "--only",
        choices=("shards",),
        help="run one part on the whole corpus (shards: part 3); print it, do not update docs",
    )
    args = parser.parse_args()
    if args.dedup_child:
        dedup_child(args.quick)
        return
    if args.only == "shards":
        docs = bench_docs(3_000_000 if args.quick else 15_000_000)
        tok = tp.train_bpe([d.text for d in docs[::4]], vocab_size=16_384)
        text, sh = part_shards(args.quick, tok, docs)
        share = ", ".join(f"{k} {w:.0%} / {c:.0%}" for k, (w, c) in sh.items())
        print(f"{text}\n\nof encode_batch_flat (wall / CPU): {share}", flush=True)
        return
    sections = [f"Machine: {_common.machine_info()}; shared with other jobs while measured."]
    text, mh = part_minhash(args.quick)
    sections += ["### MinHash signatures", text]
    print(text, flush=True)
    text, dd = part_dedup(args.quick)
    sections += ["### Exact + near dedup, bench-mixed + parallel-gettext, end to end", text]
    print(text, flush=True)
    docs = bench_docs(3_000_000 if args.quick else 15_000_000)
    train_texts = [d.text for d in docs[::4]]
    tok = tp.train_bpe(train_texts, vocab_size=16_384)
    text, sh = part_shards(args.quick, tok, docs)
    sections += ["### Encoding to shards", text]
    print(text, flush=True)
    rr: dict[str, Any] = {}
    if not args.skip_ray:
        ray_docs = docs[: len(docs) // 3] if args.quick else docs
        text, rr = part_ray(args.quick, tok, ray_docs)
        sections += ["### Ray engine (local 2-CPU Ray instance) vs local engine", text]
        print(text, flush=True)

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    targets = [
        f"- MinHash >= 30x datasketch per core (CPU time): {mh['speedup_per_core']:.1f}x, "
        f"{verdict(mh['speedup_per_core'] >= 30)}; identical signatures: {mh['identical']}",
        f"- MinHash 1 -> 2 cores >= 1.8x: {mh['scaling']:.2f}x wall, "
        f"{verdict(mh['scaling'] >= 1.8)} (load average {mh['load'][0]:.1f}-{mh['load'][1]:.1f} "
        f"on the 2 cores); in CPU time {mh['cpu_scaling']:.2f}x",
        f"- exact + near dedup end to end < 60 s: {dd['seconds']:.1f} s, "
        f"{verdict(dd['seconds'] < 60)}; peak RSS {dd['rss'] / 2**20:,.0f} MiB",
        "- shards >= 80% of encode_batch_flat (wall / CPU, medians): "
        + ", ".join(f"{k} {w:.0%} / {c:.0%}" for k, (w, c) in sh.items())
        + f", {verdict(min(min(v) for k, v in sh.items() if k != 'parquet-pyarrow') >= 0.8)}",
    ]
    if rr:
        worst = max(r["end_to_end"] for r in rr.values())
        steady = max(r["marginal"] for r in rr.values())
        targets.append(
            f"- Ray within 2x of local, whole bench-mixed: end to end worst step {worst:.2f}x, "
            f"{verdict(worst <= 2)}; marginal (fixed per-call cost removed) worst step "
            f"{steady:.2f}x, {verdict(steady <= 2)}"
        )
    sections += ["### Targets", "\n".join(targets)]
    print("\n".join(targets), flush=True)
    if not args.quick:
        body = "## Corpus preparation (tokenpact.data)\n\n" + "\n\n".join(sections)
        _common.update_performance_section("bench_data", body)
        print(f"updated {_common.PERFORMANCE_MD}")


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    main()
