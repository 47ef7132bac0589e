"""Encoding speed with Llama 3's vocabulary: tokenpact vs tiktoken vs HF tokenizers.

Run from the repository root (needs ../shared/corpus/bench-mixed.jsonl.gz, network or a
filled cache for the Llama 3.2 tokenizer files, and tiktoken + tokenizers installed)::

    python benchmarks/bench_encode.py             # whole corpus, writes docs/PERFORMANCE.md
    python benchmarks/bench_encode.py --limit-mb 5 --no-write   # a quick look

Single thread means one ``encode`` call per document. Batch means each library's batch
API on 2 threads. Every library must give tiktoken's IDs; the script exits 1 if
tokenpact differs on any document or hostile input.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BATCH_THREADS = 2
# The global rayon pool of HF tokenizers is sized from these on first use, so they must
# be set before the import; single-document encode() never uses the pool.
os.environ["RAYON_NUM_THREADS"] = str(BATCH_THREADS)
os.environ["RAYON_RS_NUM_CPUS"] = str(BATCH_THREADS)
os.environ["TOKENIZERS_PARALLELISM"] = "true"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

HOSTILE_SIZES = (1_000_000, 4_000_000, 16_000_000)
# tiktoken's merge loop is quadratic in the piece length: 16 M would take minutes.
TIKTOKEN_HOSTILE_MAX = 4_000_000
LONG_LINE_CHARS = 10_000_000


def count_differences(ids: Sequence[Sequence[int]], reference: Sequence[Sequence[int]]) -> int:
    return sum(1 for a, b in zip(ids, reference, strict=True) if list(a) != list(b))


def load_tokenizers() -> tuple[Any, Any, Any | None]:
    """tokenpact and tiktoken from Llama 3.2's tokenizer.model, HF from its tokenizer.json."""
    import hashlib

    import tiktoken
    import tiktoken.load

    import tokenpact as tp

    common.use_repo_tests()
    from conformance import peer_data

    model = peer_data.llama3_tiktoken_model()
    specials = peer_data.llama3_special_tokens()
    ours = tp.Tokenizer.from_tiktoken(model, pattern="llama3", special_tokens=specials)
    # tiktoken caches local files by path; the hash keeps a stale copy from being used.
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    peer = tiktoken.Encoding(
        name="llama3.2",
        pat_str=peer_data.llama3_pattern(),
        mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(model), expected_hash=digest),
        special_tokens=specials,
    )
    try:
        import tokenizers
    except ImportError:
        print("HF tokenizers is not installed; its rows are skipped", file=sys.stderr)
        return ours, peer, None
    return ours, peer, tokenizers.Tokenizer.from_file(str(peer_data.llama3_hf_json()))


def bench_corpus(
    texts: list[str], ours: Any, peer: Any, hf: Any | None, repeat: int
) -> tuple[list[list[object]], int]:
    """Rows of the corpus table, and tokenpact's number of differing documents."""
    nbytes = common.utf8_bytes(texts)

    def peer_encode(text: str) -> list[int]:
        return peer.encode(text, disallowed_special=())

    def single(encode: Callable[[str], list[int]]) -> Callable[[], list[list[int]]]:
        return lambda: [encode(t) for t in texts]

    for encode in (ours.encode, peer_encode):
        for text in texts[:200]:
            encode(text)  # warm caches and lazy initialisation outside the timings

    t_peer, ref = common.timed(single(peer_encode), repeat)
    t_peer_b, peer_b = common.timed(
        lambda: peer.encode_batch(texts, num_threads=BATCH_THREADS, disallowed_special=()), repeat
    )
    t_ours, ours_ids = common.timed(single(ours.encode), repeat)
    t_ours_b, ours_b = common.timed(lambda: ours.encode_batch(texts, threads=BATCH_THREADS), repeat)
    ours_diff = max(count_differences(ours_ids, ref), count_differences(ours_b, ref))
    results = [
        ("tokenpact", t_ours, t_ours_b, ours_diff),
        ("tiktoken", t_peer, t_peer_b, count_differences(peer_b, ref)),
    ]
    del ours_ids, ours_b, peer_b
    if hf is not None:

        def hf_encode(text: str) -> list[int]:
            return hf.encode(text, add_special_tokens=False).ids

        t_hf, hf_ids = common.timed(single(hf_encode), repeat)
        t_hf_b, hf_b = common.timed(
            lambda: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)], repeat
        )
        hf_diff = max(count_differences(hf_ids, ref), count_differences(hf_b, ref))
        results.append(("HF tokenizers", t_hf, t_hf_b, hf_diff))

    # Relative to tiktoken's single-thread figure, the yardstick.
    base = common.mb_per_s(nbytes, t_peer)
    rows: list[list[object]] = []
    for name, t_single, t_batch, diff in results:
        one = common.mb_per_s(nbytes, t_single)
        two = common.mb_per_s(nbytes, t_batch)
        rows.append(
            [
                name,
                common.fmt(one),
                common.fmt(two),
                common.fmt(one / base) + "x",
                common.fmt(two / one) + "x",
                diff,
            ]
        )
    return rows, ours_diff


def long_line(texts: list[str]) -> str:
    """One line of ~10 M characters without whitespace, made of real corpus text."""
    parts: list[str] = []
    size = 0
    for text in texts:
        piece = "".join(text.split())
        parts.append(piece)
        size += len(piece)
        if size >= LONG_LINE_CHARS:
            break
    return "".join(parts)[:LONG_LINE_CHARS]


def bench_hostile(texts: list[str], ours: Any, peer: Any) -> tuple[list[list[object]], int]:
    """Rows of the hostile-input table, and the number of inputs where IDs differ."""
    cases: list[tuple[str, str, bool]] = []
    for char in ("a", "^"):
        for n in HOSTILE_SIZES:
            cases.append((f'"{char}" x {n:,}', char * n, n <= TIKTOKEN_HOSTILE_MAX))
    line = long_line(texts)
    cases.append((f"one line, {len(line.encode()) / 1e6:.1f} MB, no whitespace", line, True))

    rows: list[list[object]] = []
    differing = 0
    first: dict[str, float] = {}
    for label, text, with_peer in cases:
        t_ours, ids = common.timed(functools.partial(ours.encode, text))
        t_peer: float | None = None
        same = "-"
        if with_peer:
            t_peer, ref = common.timed(functools.partial(peer.encode, text, disallowed_special=()))
            same = "yes" if list(ids) == list(ref) else "NO"
            differing += same == "NO"
        # Growth relative to the 1 M case of the same character: linear means 4x, 16x.
        key = label.split(" x ")[0]
        first.setdefault(key, t_ours)
        growth = t_ours / first[key] if " x " in label else None
        ratio = t_peer / t_ours if t_peer is not None else None
        rows.append(
            [
                label,
                common.fmt(t_ours, 3),
                common.fmt(growth, 1) + ("x" if growth is not None else ""),
                common.fmt(t_peer, 3),
                common.fmt(ratio, 1) + ("x" if ratio is not None else ""),
                same,
            ]
        )
    return rows, differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-mb", type=float, default=None, help="use only the first N MB")
    parser.add_argument("--repeat", type=int, default=1, help="best of N timings")
    parser.add_argument("--skip-hf", action="store_true", help="leave out HF tokenizers (slow)")
    parser.add_argument("--skip-hostile", action="store_true", help="leave out hostile inputs")
    parser.add_argument("--no-write", action="store_true", help="do not update PERFORMANCE.md")
    args = parser.parse_args(argv)

    path = common.corpus_path("bench-mixed.jsonl.gz")
    limit = int(args.limit_mb * common.MB) if args.limit_mb else None
    texts = common.load_texts(path, limit)
    nbytes = common.utf8_bytes(texts)
    ours, peer, hf = load_tokenizers()
    if args.skip_hf:
        hf = None
    print(f"corpus: {len(texts):,} documents, {nbytes / common.MB:.1f} MB", file=sys.stderr)

    corpus_rows, ours_diff = bench_corpus(texts, ours, peer, hf, args.repeat)
    headers = [
        "library",
        "1 thread MB/s",
        f"{BATCH_THREADS}-thread batch MB/s",
        "vs tiktoken 1 thread",
        "batch speed-up",
        "docs with IDs != tiktoken",
    ]
    parts = [
        "## Encoding (Llama 3 vocabulary)",
        "",
        f"Measured {datetime.date.today().isoformat()} on {common.machine_info()}; "
        f"tokenpact {common.package_version('tokenpact')}, "
        f"tiktoken {common.package_version('tiktoken')}, "
        f"tokenizers {common.package_version('tokenizers')}. "
        f"Corpus: `bench-mixed.jsonl.gz`, {len(texts):,} documents, "
        f"{nbytes / common.MB:.1f} MB of UTF-8. Produced by `benchmarks/bench_encode.py`.",
        "",
        common.markdown_table(headers, corpus_rows),
    ]
    hostile_diff = 0
    if not args.skip_hostile:
        hostile_rows, hostile_diff = bench_hostile(texts, ours, peer)
        parts += [
            "",
            "Hostile inputs (one `encode` call; tiktoken only up to "
            f"{TIKTOKEN_HOSTILE_MAX:,} repeated characters):",
            "",
            common.markdown_table(
                [
                    "input",
                    "tokenpact s",
                    "growth vs 1 M",
                    "tiktoken s",
                    "tiktoken / tokenpact",
                    "same IDs",
                ],
                hostile_rows,
            ),
        ]
    section = "\n".join(parts)
    print(section)
    if not args.no_write:
        written = common.update_performance_section("encode", section)
        print(f"\nupdated {written}", file=sys.stderr)
    if ours_diff or hostile_diff:
        print(
            f"tokenpact differs from tiktoken on {ours_diff} documents and "
            f"{hostile_diff} hostile inputs",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
