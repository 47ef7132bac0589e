"""SentencePiece encoding speed: tokenpact vs ``sentencepiece`` on the same ``.model``.

Run from the repository root (needs ../shared/corpus/bench-mixed.jsonl.gz and
``sentencepiece`` installed)::

    python benchmarks/bench_sentencepiece.py            # whole corpus, writes docs/PERFORMANCE.md
    python benchmarks/bench_sentencepiece.py --limit-mb 5 --no-write   # a quick look

Models: a Unigram model of 32,000 pieces trained by ``sentencepiece`` on the first
``--train-mb`` of the corpus (cached under ``~/.cache/tokenpact-test-data``), and
Mistral's v3 SentencePiece BPE model (mistral-common). Single thread means one
``encode`` call per document, each library returning a Python list of ints. Every
document must get sentencepiece's IDs; the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

VOCAB_SIZE = 32_000


def unigram_model(corpus: Path, train_mb: int) -> Path:
    """The cached Unigram model trained on the corpus's first ``train_mb`` megabytes."""
    import sentencepiece as spm

    common.use_repo_tests()
    from conformance import peer_data

    texts = common.load_texts(corpus, limit_bytes=train_mb * common.MB)
    lines = [line for t in texts for line in t.splitlines() if line.strip()]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    key = hashlib.sha256(data + spm.__version__.encode()).hexdigest()[:16]
    cache = peer_data.cache_dir() / "sentencepiece"
    model = cache / f"bench-unigram-{VOCAB_SIZE}-{key}.model"
    if model.is_file():
        return model
    cache.mkdir(parents=True, exist_ok=True)
    source = cache / f"bench-train-{key}.txt"
    source.write_bytes(data)
    print(f"training a {VOCAB_SIZE}-piece Unigram model on {len(data) / 1e6:.1f} MB ...")
    spm.SentencePieceTrainer.train(
        input=str(source),
        model_prefix=str(model.with_suffix("")),
        model_type="unigram",
        vocab_size=VOCAB_SIZE,
        num_threads=2,
        input_sentence_size=400_000,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    source.unlink()
    return model


def bench_model(name: str, path: Path, texts: list[str], repeat: int) -> tuple[list[object], int]:
    import sentencepiece as spm

    import tokenpact as tp

    ours = tp.Tokenizer.load(path)
    peer = spm.SentencePieceProcessor(model_file=str(path))
    nbytes = common.utf8_bytes(texts)
    # As timeit does, the cyclic GC is off while timing: otherwise the millions of ID
    # lists kept alive trigger collections whose cost grows with the heap and lands on
    # whichever library happens to run when one starts.
    gc.collect()
    gc.disable()
    try:
        peer_s, ref = common.timed(lambda: [peer.encode(t) for t in texts], repeat)
        ours_s, ids = common.timed(lambda: [ours.encode(t) for t in texts], repeat)
        batch_s, batch = common.timed(lambda: ours.encode_batch(texts, threads=2), repeat)
    finally:
        gc.enable()
    differ = sum(1 for a, b in zip(ids, ref, strict=True) if a != b)
    differ += sum(1 for a, b in zip(batch, ref, strict=True) if a != b)
    peer_mb, ours_mb = common.mb_per_s(nbytes, peer_s), common.mb_per_s(nbytes, ours_s)
    row: list[object] = [
        name,
        common.fmt(peer_mb),
        common.fmt(ours_mb),
        common.fmt(ours_mb / peer_mb) + "x",
        common.fmt(common.mb_per_s(nbytes, batch_s)),
        differ,
    ]
    return row, differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit-mb", type=float, default=None, help="encode this much text")
    parser.add_argument("--train-mb", type=int, default=12, help="Unigram training text")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="do not update PERFORMANCE.md")
    args = parser.parse_args(argv)
    corpus = common.corpus_path()
    limit = int(args.limit_mb * common.MB) if args.limit_mb else None
    texts = common.load_texts(corpus, limit_bytes=limit)
    common.use_repo_tests()
    from conformance import peer_data

    mistral = next(p for p in peer_data.mistral_models() if p.name.endswith(".model.v3"))
    models: dict[str, Any] = {
        f"Unigram {VOCAB_SIZE:,} (trained, nmt_nfkc)": unigram_model(corpus, args.train_mb),
        "BPE 32,768 (Mistral v3, byte fallback)": mistral,
    }
    rows, differ = [], 0
    for name, path in models.items():
        row, bad = bench_model(name, path, texts, args.repeat)
        rows.append(row)
        differ += bad
        print(row)
    headers = [
        "model",
        "sentencepiece MB/s",
        "tokenpact MB/s",
        "speed-up",
        "tokenpact batch (2 threads) MB/s",
        "documents differing",
    ]
    table = common.markdown_table(headers, rows)
    print(table)
    nbytes = common.utf8_bytes(texts)
    section = (
        "## SentencePiece encoding\n\n"
        f"`benchmarks/bench_sentencepiece.py`, {datetime.date.today()}: {len(texts):,} "
        f"documents, {nbytes / common.MB:.1f} MB of `bench-mixed.jsonl.gz`; single thread "
        "is one `encode` call per document (Python list of ints; cyclic GC off while timing, "
        "as timeit does), same `.model` file for "
        f"both (sentencepiece {common.package_version('sentencepiece')}). "
        f"{common.machine_info()}.\n\n{table}\n"
    )
    if not args.no_write:
        common.update_performance_section("sentencepiece", section)
    if differ:
        print(f"tokenpact differs from sentencepiece on {differ} documents", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
