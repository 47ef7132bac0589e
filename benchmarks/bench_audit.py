"""Audit speed: every corpus metric for three tokenizers, and the static vocabulary audit.

Run from the repository root::

    PYTHONPATH=python python benchmarks/bench_audit.py            # full bench-mixed
    PYTHONPATH=python python benchmarks/bench_audit.py --limit-mb 5   # a quick look

Part 1: ``tokenpact.audit.run.audit_tokenizers`` on ``../shared/corpus/bench-mixed``
(52 M characters) for cl100k (tiktoken ranks), Llama 3.2 (tokenizer.json) and Qwen2.5
(tokenizer.json): text units, encoding, every per-slice metric, amplification,
reconstruction, offsets sample, normalization collisions, exposure and the static
audit of each vocabulary. For scale, the peers' own batch encoders (tiktoken's
``encode_ordinary_batch``, Hugging Face ``tokenizers``' ``encode_batch``) encode the same
corpus in the same process: an audit built on them would spend that on encoding alone.

Part 2: the static audit of Qwen3.5's 248,058-ID vocabulary (the largest real one the
test data packages ship; a 256k-class vocabulary). Prints markdown tables, updates
``docs/PERFORMANCE.md``; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import tokenpact as tp  # noqa: E402
from tokenpact.audit.corpus import load_corpus  # noqa: E402
from tokenpact.audit.run import AuditOptions, audit_tokenizers  # noqa: E402
from tokenpact.audit.vocab import audit_vocabulary  # noqa: E402

METRICS_TARGET_S = 60.0
STATIC_TARGET_S = 10.0


def _tokenizers() -> dict[str, Any]:
    _common.use_repo_tests()
    from conformance import peer_data

    return {
        "cl100k": tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="cl100k"),
        "llama3.2": tp.Tokenizer.load(peer_data.llama3_hf_json()),
        "qwen2.5": tp.Tokenizer.load(peer_data.offline_counter_files("qwen-2.5").tokenizer_json),
    }


def _peer_encode_seconds(texts: list[str]) -> dict[str, float]:
    _common.use_repo_tests()
    from conformance import peer_data

    out: dict[str, float] = {}
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        enc = tiktoken.Encoding(
            name="cl100k_local",
            pat_str=tp.PATTERNS["cl100k"],
            mergeable_ranks=load_tiktoken_bpe(str(peer_data.cl100k_tiktoken())),
            special_tokens={},
        )
        start = time.perf_counter()
        enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
        out["cl100k"] = time.perf_counter() - start
    except ImportError:
        pass
    try:
        from tokenizers import Tokenizer as HFTokenizer

        for name, path in (
            ("llama3.2", peer_data.llama3_hf_json()),
            ("qwen2.5", peer_data.offline_counter_files("qwen-2.5").tokenizer_json),
        ):
            hf = HFTokenizer.from_file(str(path))
            start = time.perf_counter()
            hf.encode_batch(texts, add_special_tokens=False)
            out[name] = time.perf_counter() - start
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-mb", type=float, default=None, help="audit only this much text")
    parser.add_argument("--no-write", action="store_true", help="do not update PERFORMANCE.md")
    parser.add_argument("--static-only", action="store_true", help="only the static audit")
    args = parser.parse_args()
    if args.static_only:
        print(static_table()[0])
        return

    path = _common.corpus_path("bench-mixed.jsonl.gz")
    start = time.perf_counter()
    corpus = load_corpus(path)
    if args.limit_mb is not None:
        budget = int(args.limit_mb * 1e6)
        keep = 0
        while keep < len(corpus.texts) and budget > 0:
            budget -= len(corpus.texts[keep].encode("utf-8"))
            keep += 1
        corpus = type(corpus)(
            corpus.texts[:keep], {k: v[:keep] for k, v in corpus.fields.items()}, corpus.name
        )
    load_s = time.perf_counter() - start
    toks = _tokenizers()
    n_bytes = _common.utf8_bytes(corpus.texts)
    print(f"corpus: {len(corpus):,} records, {n_bytes / 1e6:.1f} MB (loaded in {load_s:.1f} s)")

    start = time.perf_counter()
    report = audit_tokenizers(
        toks, corpus, options=AuditOptions(slice_field="slice", selection=None, progress=True)
    )
    metrics_s = time.perf_counter() - start
    timings = report["timings"]
    rows = []
    for name, entry in report["tokenizers"].items():
        m = entry["metrics"]["overall"]
        rows.append(
            [
                name,
                f"{entry['vocab_size']:,}",
                f"{m['tokens']:,}",
                f"{m['bytes_per_token']:.3f}",
                _common.fmt(entry["throughput"]["encode_seconds"]),
                _common.fmt(entry["vocab_seconds"]),
                _common.fmt(timings[name]),
            ]
        )
    peers = _peer_encode_seconds(corpus.texts)
    table1 = _common.markdown_table(
        [
            "tokenizer",
            "V",
            "tokens",
            "bytes/token",
            "encode s",
            "static audit s",
            "all metrics s (incl. encode)",
        ],
        rows,
    )
    peer_rows = [
        [
            name,
            _common.fmt(s),
            _common.fmt(report["tokenizers"][name]["throughput"]["encode_seconds"]),
        ]
        for name, s in peers.items()
    ]
    table_peers = _common.markdown_table(
        ["tokenizer", "peer batch encode s", "tokenpact encode s"], peer_rows
    )

    table2, static_s, big_size = static_table()
    met1 = "met" if metrics_s < METRICS_TARGET_S else "not met"
    met2 = "met" if static_s < STATIC_TARGET_S else "not met"
    summary = (
        f"All metrics, three tokenizers, {n_bytes / 1e6:.1f} MB of bench-mixed "
        f"({len(corpus):,} records): **{metrics_s:.1f} s** (target < {METRICS_TARGET_S:.0f} s: "
        f"{met1}); text units (bytes, code points, graphemes, words) once: "
        f"{timings['text_units']:.1f} s. Static audit of a {big_size:,}-ID vocabulary: "
        f"**{static_s:.1f} s** (target < {STATIC_TARGET_S:.0f} s: {met2})."
    )
    markdown = "\n\n".join(
        [
            "## Audit (`tokenpact.audit`)",
            f"`benchmarks/bench_audit.py`; {_common.machine_info()} (shared with other jobs while "
            "measured); all cores for encoding.",
            summary,
            table1,
            "Peers encoding the same corpus in the same process (encoding only, no metrics):",
            table_peers,
            table2,
        ]
    )
    print(markdown)
    if not args.no_write and args.limit_mb is None:
        _common.update_performance_section("audit", markdown)


def _synthetic_256k(base: Any) -> Any:
    """Qwen3.5's byte pieces plus letter-pair concatenations up to exactly 256,000 ranks."""
    pieces = list(base.vocab())
    seen = set(pieces)
    short = [p for p in pieces if 2 <= len(p) <= 4 and p.isalpha()][:200]
    for a in short:
        for b in short:
            if len(pieces) >= 256_000:
                break
            if a + b not in seen:
                seen.add(a + b)
                pieces.append(a + b)
    return tp.Tokenizer.from_ranks(pieces[:256_000], pattern="o200k")


def static_table() -> tuple[str, float, int]:
    """Static audit of Qwen3.5 (248,058 IDs) and of a synthetic 256,000-rank vocabulary."""
    rows = []
    times = []
    big = tp.Tokenizer.load(_peer_qwen35())
    for label, tok in (
        ("Qwen3.5 tokenizer.json", big),
        (
            "256,000 tiktoken ranks (Qwen3.5 pieces + letter pairs, o200k pattern)",
            _synthetic_256k(big),
        ),
    ):
        start = time.perf_counter()
        audit = audit_vocabulary(tok)
        seconds = time.perf_counter() - start
        times.append((seconds, tok.vocab_size))
        counts = audit.counts()
        rows.append(
            [
                label,
                f"{tok.vocab_size:,}",
                _common.fmt(seconds),
                f"{counts['alone']:,}",
                f"{counts['context']:,}",
                f"{counts['unreachable']:,}",
                f"{counts['undetermined']:,}",
                f"{counts['special']:,}",
            ]
        )
    table = _common.markdown_table(
        [
            "vocabulary",
            "IDs",
            "static audit s",
            "alone",
            "context",
            "unreachable",
            "undetermined",
            "special",
        ],
        rows,
    )
    slowest, size = max(times)
    return table, slowest, size


def _peer_qwen35() -> Path:
    _common.use_repo_tests()
    from conformance import peer_data

    return Path(peer_data.offline_counter_files("qwen-3.5").tokenizer_json)


if __name__ == "__main__":
    main()
