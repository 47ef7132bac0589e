"""CPU time of the native Parquet shard writer alone (no tokenizer), on synthetic
documents shaped like bench-mixed (13.9 M uint16 IDs below ``--vocab``, ~1 k tokens per
document, some empty and single-token documents). Thread CPU time
(``time.thread_time``), so a loaded machine does not inflate it; the best of
``--repeat`` runs is reported.

    PYTHONPATH=python python benchmarks/profile_parquet_writer.py [--tokens N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from tokenpact import _native


def synthetic_chunks(
    tokens: int, *, docs_per_chunk: int, seed: int, vocab: int = 65_536
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    lengths = rng.lognormal(mean=6.3, sigma=1.0, size=tokens // 500 + 16).astype(np.int64)
    lengths[::97] = 0
    lengths[1::89] = 1
    lengths = lengths[np.cumsum(lengths) <= tokens]
    chunks = []
    for start in range(0, len(lengths), docs_per_chunk):
        part = lengths[start : start + docs_per_chunk]
        offsets = np.concatenate([[0], np.cumsum(part)]).astype(np.int64)
        ids = rng.integers(0, vocab, size=int(offsets[-1]), dtype=np.uint16)
        chunks.append((ids, offsets, np.zeros(len(part), dtype=np.bool_)))
    return chunks


def writer_cpu(chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]], path: str) -> float:
    n_docs = sum(len(t) for _, _, t in chunks)
    doc_ids = [f"doc-{i:08d}" for i in range(n_docs)]
    start = time.thread_time()
    writer = _native.ParquetShardWriter(
        path,
        id_bits=16,
        doc_ids=doc_ids,
        metadata=[("k", "v")],
        created_by="profile",
    )
    for ids, offsets, truncated in chunks:
        writer.write_chunk(ids, offsets, truncated)
    writer.finish()
    return time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=13_900_000)
    parser.add_argument("--docs-per-chunk", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=16_384, help="IDs are below this")
    args = parser.parse_args()
    chunks = synthetic_chunks(
        args.tokens, docs_per_chunk=args.docs_per_chunk, seed=0, vocab=args.vocab
    )
    n_ids = sum(len(ids) for ids, _, _ in chunks)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "shard.parquet")
        times = [writer_cpu(chunks, path) for _ in range(args.repeat)]
        size = os.path.getsize(path)
    print(
        f"{n_ids / 1e6:.1f} M IDs, {size / 1e6:.1f} MB file: writer CPU best "
        f"{min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s"
    )


if __name__ == "__main__":
    main()
