"""Hugging Face tokenizer.json: load time and structured encoding vs `tokenizers`.

Same run, same machine: `Tokenizer.load` of DeepSeek-V3's tokenizer.json vs HF
`Tokenizer.from_file`; `encode_structured` (IDs, offsets, masks, origins) with Llama 3.2's
tokenizer.json vs HF `encode` (which computes offsets), single thread, on
../shared/corpus/bench-mixed.jsonl.gz, counting documents whose IDs or offsets differ.
Writes the "hf" section of docs/PERFORMANCE.md.

    python benchmarks/bench_hf.py [--limit-mb 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-mb", type=float, default=8.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    _common.use_repo_tests()
    from tokenizers import Tokenizer as HF

    import tokenpact as tp
    from conformance import peer_data

    deepseek = peer_data.deepseek_v3_files().tokenizer_json
    llama = peer_data.llama3_hf_json()
    tp.Tokenizer.load(deepseek)  # warm the file cache for both sides
    ours_load = best_of(lambda: tp.Tokenizer.load(deepseek))
    hf_load = best_of(lambda: HF.from_file(str(deepseek)))

    texts = _common.load_texts(_common.corpus_path(), int(args.limit_mb * 1e6))
    nbytes = _common.utf8_bytes(texts)
    ours, peer = tp.Tokenizer.load(llama), HF.from_file(str(llama))
    ours.encode_structured(texts[0])
    hf_s = best_of(lambda: [peer.encode(t, add_special_tokens=False) for t in texts], 1)
    ours_s = best_of(lambda: [ours.encode_structured(t) for t in texts], 1)
    differ = 0
    for text in texts:
        a = ours.encode_structured(text, allowed_special="all")
        b = peer.encode(text, add_special_tokens=False)
        if a.ids != b.ids or a.offsets != [tuple(o) for o in b.offsets]:
            differ += 1
    rows = [
        [
            "load DeepSeek-V3 tokenizer.json (s)",
            _common.fmt(ours_load, 3),
            _common.fmt(hf_load, 3),
            f"{ours_load / hf_load:.2f}x time",
        ],
        [
            "encode with offsets, Llama 3.2 (MB/s)",
            _common.fmt(nbytes / 1e6 / ours_s),
            _common.fmt(nbytes / 1e6 / hf_s),
            f"{hf_s / ours_s:.2f}x speed",
        ],
    ]
    table = "\n".join(
        [
            f"Hugging Face tokenizer.json files, single thread, {nbytes / 1e6:.1f} MB of "
            f"bench-mixed. Machine: {_common.machine_info()}.",
            "",
            _common.markdown_table(["measure", "tokenpact", "HF tokenizers", "ratio"], rows),
            "",
            f"Documents whose IDs or offsets differ from HF (allowed_special='all'): "
            f"{differ} of {len(texts)}.",
            "",
            "Command: `python benchmarks/bench_hf.py`",
        ]
    )
    print(table)
    if not args.no_write:
        _common.update_performance_section("hf", table)


if __name__ == "__main__":
    main()
