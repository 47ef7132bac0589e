"""Provenance on every record: what it costs per call and what replay costs.

Same run, same machine, Llama 3.2's tokenizer.json: per-call ``encode_structured`` of short
texts from ../shared/corpus/bench-mixed.jsonl.gz next to HF ``tokenizers`` ``encode``; the
cost of attaching the provenance (one attribute read, timed alone) as a share of a call;
the one-time semantic hash that the first *read* of ``enc.tokenizer_hash`` pays (an eager
hash would put it on the first encode); and replaying a BPE-dropout segmentation manifest
and a bucketed distributed assignment against computing them directly.
Writes the "provenance" section of docs/PERFORMANCE.md.

    python benchmarks/bench_provenance.py [--docs 400] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def per_call(fn: Callable[[], object], calls: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds per call."""
    return min(timeit.repeat(fn, number=calls, repeat=repeat)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=400, help="short documents to encode")
    parser.add_argument("--no-write", action="store_true", help="do not update PERFORMANCE.md")
    args = parser.parse_args()
    _common.use_repo_tests()
    import numpy as np
    from tokenizers import Tokenizer as HF

    import tokenpact as tp
    from conformance import peer_data
    from tokenpact.batch import BucketingPolicy, DistributedSampler, replay_assignment
    from tokenpact.contract import replay_segmentation, segmentation_manifest, template_hash
    from tokenpact.encoding import SHARED_PROVENANCE, provenance_of

    llama = peer_data.llama3_hf_json()
    ours, peer = tp.Tokenizer.load(llama), HF.from_file(str(llama))
    texts = [t[:200] for t in _common.load_texts(_common.corpus_path(), 4_000_000)][: args.docs]
    nbytes = _common.utf8_bytes(texts)

    first = ours.encode_structured(texts[0])
    start = time.perf_counter()
    assert first.tokenizer_hash == ours.semantic_hash  # the first read computes it
    hash_s = time.perf_counter() - start
    ours_call = per_call(lambda: [ours.encode_structured(t) for t in texts], 1) / len(texts)
    peer_call = per_call(lambda: [peer.encode(t, add_special_tokens=False) for t in texts], 1)
    peer_call /= len(texts)
    attach = per_call(lambda: getattr(ours, SHARED_PROVENANCE, None) or provenance_of(ours), 20000)
    empty = per_call(lambda: None, 20000)
    attach_net = max(attach - empty, 0.0)

    # Replays: a BPE-dropout sample, and a bucketed epoch assignment of 1M records.
    key = tp.SampleKey(seed=7, epoch=1, sample_id="doc-1")
    record = segmentation_manifest(ours, method="bpe_dropout", parameter=0.1, key=key).to_json()
    direct = per_call(lambda: [tp.bpe_dropout(ours, t, p=0.1, key=key) for t in texts], 1)
    replayed = per_call(lambda: [replay_segmentation(ours, t, record) for t in texts], 1)
    lengths = np.random.default_rng(0).integers(1, 2048, size=1_000_000)
    ids = {
        "dataset_hash": "sha256:" + "d" * 64,
        "tokenizer_hash": ours.semantic_hash,
        "template_hash": template_hash(None),
    }
    sampler = DistributedSampler(
        len(lengths),
        world_size=8,
        rank=3,
        **ids,
        lengths=lengths,
        bucketing=BucketingPolicy(max_tokens=65536, boundaries=(128, 512, 1024)),
    )
    assign_s = per_call(lambda: sampler.assignment(1), 1, repeat=2)
    epoch = sampler.assignment(1).to_record()
    replay_s = per_call(lambda: replay_assignment(epoch, lengths=lengths, **ids), 1, repeat=2)

    rows = [
        [
            "encode_structured per call (us)",
            _common.fmt(ours_call * 1e6, 2),
            _common.fmt(peer_call * 1e6, 2),
            f"{peer_call / ours_call:.2f}x speed",
        ],
        [
            "  of which: attaching the provenance (ns)",
            _common.fmt(attach_net * 1e9, 0),
            "-",
            f"{attach_net / ours_call:.2%} of a call",
        ],
        [
            "first read of enc.tokenizer_hash, once per tokenizer (s)",
            _common.fmt(hash_s, 3),
            "-",
            "not paid by encode",
        ],
        [
            "BPE-dropout p=0.1, per document (us)",
            _common.fmt(direct / len(texts) * 1e6, 1),
            "-",
            "-",
        ],
        [
            "  replayed from its manifest, per document (us)",
            _common.fmt(replayed / len(texts) * 1e6, 1),
            "-",
            f"{replayed / direct:.2f}x time",
        ],
        ["bucketed assignment, 1M records, 8 ranks (s)", _common.fmt(assign_s, 3), "-", "-"],
        [
            "  replay_assignment of its record (s)",
            _common.fmt(replay_s, 3),
            "-",
            f"{replay_s / assign_s:.2f}x time",
        ],
    ]
    table = "\n".join(
        [
            f"Provenance on every record: {len(texts)} bench-mixed documents cut to 200 "
            f"characters ({nbytes / 1e3:.0f} kB), Llama 3.2 tokenizer.json, single thread; peer "
            f"HF tokenizers. Machine: {_common.machine_info()} (shared with other agents "
            "while measured, so absolute times are noisy; the ratios are same-run).",
            "",
            _common.markdown_table(["measure", "tokenpact", "HF tokenizers", "note"], rows),
            "",
            "Command: `python benchmarks/bench_provenance.py`",
        ]
    )
    print(table)
    if not args.no_write:
        _common.update_performance_section("provenance", table)


if __name__ == "__main__":
    main()
