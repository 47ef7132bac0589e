"""Entropy patcher throughput (fast table lookup vs the readable reference) and patch
statistics per domain and per language (tokenpact.bytes).

Run from the repository root::

    PYTHONPATH=python:tests python benchmarks/bench_bytes.py              # full run
    PYTHONPATH=python:tests python benchmarks/bench_bytes.py --limit-mb 8 # a quick look

A byte n-gram model (additive smoothing alpha=0.1, backoff) is trained on every tenth
record of ``../shared/corpus/bench-mixed.jsonl.gz``; the patcher runs over the other
records concatenated. The global threshold is the 75th percentile of the training
entropies (about one patch start per four bytes). Side by side in the same process:
the readable reference on a slice, the whitespace and fixed-stride patchers, and
tiktoken's cl100k_base encode (BPE-shaped boundaries from a peer) when available.
Per language, ``parallel-gettext.jsonl.gz`` gives the same messages in many languages:
global positions (patches) per message relative to English. Prints tables, writes the
``bytes`` section of docs/PERFORMANCE.md and docs/img/bytes_patches.svg; asserts nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from tokenpact.bytes import (  # noqa: E402
    ByteNGramModel,
    EntropyPatcher,
    EntropyRule,
    FixedStridePatcher,
    WhitespacePatcher,
    reference_starts,
)

LANGUAGES = ("en", "de", "fr", "es", "ru", "uk", "el", "ar", "he", "hi", "ta", "ja", "zh_CN", "ko")
SVG = _common.REPO_ROOT / "docs" / "img" / "bytes_patches.svg"


def _tiktoken_encoder():  # type: ignore[no-untyped-def]
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        _common.use_repo_tests()
        from conformance import peer_data

        ranks = load_tiktoken_bpe(str(peer_data.cl100k_tiktoken()))
        pattern = (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
            r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        )
        return tiktoken.Encoding(
            "cl100k_base", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
    except Exception as exc:  # noqa: BLE001 - the peer is optional in a benchmark
        print(f"tiktoken peer unavailable: {exc}", file=sys.stderr)
        return None


def _parallel(limit: int) -> dict[str, list[bytes]]:
    path = _common.corpus_path("parallel-gettext.jsonl.gz")
    out: dict[str, list[bytes]] = {lang: [] for lang in LANGUAGES}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if all(record.get(lang) for lang in LANGUAGES):
                for lang in LANGUAGES:
                    out[lang].append(record[lang].encode("utf-8"))
                if len(out["en"]) >= limit:
                    break
    return out


def _svg(rows: list[tuple[str, float]], title: str) -> str:
    width, bar, gap = 640, 18, 6
    top = 30
    height = top + len(rows) * (bar + gap) + 10
    scale = (width - 200) / max(v for _, v in rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<text x="10" y="18" font-weight="bold">{title}</text>',
    ]
    for i, (label, value) in enumerate(rows):
        y = top + i * (bar + gap)
        parts.append(f'<text x="10" y="{y + 13}">{label}</text>')
        parts.append(
            f'<rect x="120" y="{y}" width="{value * scale:.1f}" height="{bar}" fill="#4c72b0"/>'
        )
        parts.append(f'<text x="{125 + value * scale:.1f}" y="{y + 13}">{value:.2f}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit-mb", type=float, default=64.0, help="corpus MB to read")
    parser.add_argument("--reference-kb", type=float, default=16.0)
    parser.add_argument("--messages", type=int, default=2000, help="parallel messages")
    parser.add_argument("--no-write", action="store_true", help="do not update docs")
    args = parser.parse_args()

    records = _common.load_records(_common.corpus_path(), int(args.limit_mb * _common.MB))
    train = [r["text"] for i, r in enumerate(records) if i % 10 == 0]
    held = [r for i, r in enumerate(records) if i % 10 != 0]
    data = "\n".join(r["text"] for r in held).encode("utf-8")
    print(f"{len(records)} records; training {_common.utf8_bytes(train) / 1e6:.1f} MB, "
          f"patching {len(data) / 1e6:.1f} MB")  # fmt: skip

    rows = []
    patchers: dict[int, EntropyPatcher] = {}
    for k in tqdm((1, 2, 3), desc="context sizes"):
        model = ByteNGramModel.train(train, context_bytes=k)
        sample = "\n".join(train).encode("utf-8")[: 4 * _common.MB]
        threshold = float(np.quantile(EntropyPatcher(model).entropies(sample), 0.75))
        patcher = EntropyPatcher(model, EntropyRule(kind="global", threshold=threshold))
        patchers[k] = patcher
        _ = model.entropy_table  # built once per model, not per call
        seconds, starts = _common.timed(lambda p=patcher: p.starts(data), repeat=5)
        rows.append((f"entropy, {k}-byte context (fast)", _common.mb_per_s(len(data), seconds),
                     len(data) / len(starts)))  # fmt: skip
        relative = EntropyPatcher(model, EntropyRule(kind="relative", threshold=1.0))
        seconds, starts = _common.timed(lambda p=relative: p.starts(data), repeat=5)
        rows.append((f"entropy relative jump, {k}-byte context (fast)",
                     _common.mb_per_s(len(data), seconds), len(data) / len(starts)))  # fmt: skip
    piece = data[: int(args.reference_kb * 1000)]
    ref = patchers[2]
    seconds, ref_starts = _common.timed(lambda: reference_starts(ref.model, ref.rule, piece))
    same = ref_starts == ref.starts(piece).tolist()
    rows.append((f"entropy, 2-byte context (reference, {len(piece) // 1000} kB; equal: {same})",
                 _common.mb_per_s(len(piece), seconds), len(piece) / len(ref_starts)))  # fmt: skip
    for name, other in (
        ("whitespace", WhitespacePatcher()),
        ("fixed stride 4", FixedStridePatcher(stride=4)),
    ):
        seconds, starts = _common.timed(lambda o=other: o.starts(data), repeat=5)
        rows.append((name, _common.mb_per_s(len(data), seconds), len(data) / len(starts)))
    enc = _tiktoken_encoder()
    if enc is not None:
        text = data.decode("utf-8")
        seconds, ids = _common.timed(lambda: enc.encode_ordinary(text))
        rows.append((f"tiktoken {_common.package_version('tiktoken')} cl100k encode (BPE-shaped)",
                     _common.mb_per_s(len(data), seconds), len(data) / len(ids)))  # fmt: skip
    speed = _common.markdown_table(
        ["patcher", "MB/s", "bytes per patch"],
        [(n, _common.fmt(v, 1 if v >= 1 else 4), _common.fmt(b, 2)) for n, v, b in rows],
    )

    # Per domain: bytes per patch of the 2-byte-context entropy patcher on held-out text.
    patcher = patchers[2]
    slices: dict[str, list[str]] = {}
    for r in held:
        slices.setdefault(r["slice"], []).append(r["text"])
    domain_rows = []
    for name in sorted(slices):
        blob = "\n".join(slices[name]).encode("utf-8")
        n = len(patcher.starts(blob))
        ws = len(WhitespacePatcher().starts(blob))
        domain_rows.append((name, _common.fmt(len(blob) / 1e6, 1), _common.fmt(len(blob) / n),
                            _common.fmt(len(blob) / ws)))  # fmt: skip
    domains = _common.markdown_table(
        ["slice", "MB", "bytes/patch (entropy)", "bytes/patch (whitespace)"], domain_rows
    )

    # Per language: the same messages; global positions relative to English, under the
    # bench-mixed model (A) and under one trained on the other half of the messages (B).
    parallel = _parallel(2 * args.messages)
    heldout = {lang: msgs[::2] for lang, msgs in parallel.items()}
    multi_train = [m for msgs in parallel.values() for m in msgs[1::2]]
    multi_model = ByteNGramModel.train(multi_train, context_bytes=2)
    multi_h = EntropyPatcher(multi_model).entropies(b"\n".join(multi_train))
    multi = EntropyPatcher(multi_model, EntropyRule(threshold=float(np.quantile(multi_h, 0.75))))
    sizes = {lang: sum(len(m) for m in msgs) for lang, msgs in heldout.items()}
    counts = {lang: sum(len(patcher.starts(m)) for m in msgs) for lang, msgs in heldout.items()}
    mcounts = {lang: sum(len(multi.starts(m)) for m in msgs) for lang, msgs in heldout.items()}
    lang_rows = [
        (lang, _common.fmt(sizes[lang] / sizes["en"]),
         _common.fmt(counts[lang] / counts["en"]), _common.fmt(sizes[lang] / counts[lang]),
         _common.fmt(mcounts[lang] / mcounts["en"]), _common.fmt(sizes[lang] / mcounts[lang]))
        for lang in LANGUAGES
    ]  # fmt: skip
    languages = _common.markdown_table(
        ["language", "bytes vs en", "patches vs en (A)", "bytes/patch (A)",
         "patches vs en (B)", "bytes/patch (B)"],
        lang_rows,
    )  # fmt: skip
    markdown = (
        "## Byte models: entropy patching (`tokenpact.bytes`)\n\n"
        f"Machine: {_common.machine_info()}; shared with other agents while measured (load "
        f"average {os.getloadavg()[0]:.1f} at the end of the run), so figures are noisy. "
        "Patcher throughput on held-out bench-mixed text "
        f"({len(data) / 1e6:.1f} MB; model trained on every tenth record; global threshold = "
        "75th percentile of training entropies). Target: >= 50 MB/s.\n\n"
        f"{speed}\n\nBytes per patch per bench-mixed slice (2-byte context, global rule):\n\n"
        f"{domains}\n\nThe same {len(heldout['en'])} gettext messages per language: global "
        "positions a model would process, relative to English. (A) the bench-mixed model "
        "(English, German, French, Python): scripts it never saw get one-byte patches; "
        "(B) a 2-byte-context model trained on the other half of the parallel messages, "
        "all languages. One global threshold spends global positions very unevenly across "
        "scripts (the seed's language bias of a space-like or entropy rule, measured):\n\n"
        f"{languages}\n\n![bytes per patch per language](img/bytes_patches.svg)\n"
    )
    print(markdown)
    if not args.no_write:
        _common.update_performance_section("bytes", markdown)
        SVG.parent.mkdir(parents=True, exist_ok=True)
        chart = [(lang, sizes[lang] / mcounts[lang]) for lang in LANGUAGES]
        title = "Entropy patcher (multilingual model B): bytes per patch per language"
        SVG.write_text(_svg(chart, title), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
