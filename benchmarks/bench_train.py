"""Training benchmark: tokenpact vs rustbpe, HF tokenizers, SentencePiece and bpeasy.

Every trainer runs in its own child process (so peak RSS is its own) on the same corpus,
streamed from ``../shared/corpus/bench-mixed.jsonl.gz``: vocab 32,000, GPT-4 pattern,
min_frequency 2 where the trainer has it. Also checks that tokenpact's merges are
identical with 1 and 2 threads. Writes the table to docs/PERFORMANCE.md ("train").

    python benchmarks/bench_train.py [--vocab-size 32000] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

TRAINERS = [
    "tokenpact-files-2t",
    "tokenpact-iter-2t",
    "tokenpact-files-1t",
    "rustbpe",
    "sentencepiece-bpe",
    "hf-tokenizers",
    "bpeasy",
]


def iter_texts(path: Path) -> Iterator[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)["text"]


def iter_lines(path: Path) -> Iterator[str]:
    # SentencePiece is line-oriented and drops over-long sentences, so feed lines.
    for text in iter_texts(path):
        for line in text.split("\n"):
            if line.strip():
                yield line


def run_one(name: str, vocab: int, path: Path) -> dict[str, object]:
    from tokenpact.patterns import GPT4

    out: dict[str, object] = {}
    start = time.perf_counter()
    if name.startswith("tokenpact"):
        import tokenpact as tp

        threads = 1 if name.endswith("1t") else 2
        source = tp.TextFiles([path]) if "files" in name else iter_texts(path)
        tok = tp.train_bpe(
            source, vocab_size=vocab, pattern="gpt4", min_frequency=2, threads=threads
        )
        out["merges_sha"] = hashlib.sha256(repr(tok.merges).encode()).hexdigest()[:16]
        out["stop"] = tok.training["stop_reason"] if tok.training else "?"
        out["vocab"] = tok.vocab_size
    elif name == "rustbpe":
        import rustbpe

        rt = rustbpe.Tokenizer()
        rt.train_from_iterator(iter_texts(path), vocab, pattern=GPT4)
        out["vocab"] = rt.vocab_size
    elif name == "hf-tokenizers":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(GPT4), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab,
            min_frequency=2,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        hf.train_from_iterator(iter_texts(path), trainer)
        out["vocab"] = hf.get_vocab_size()
    elif name == "sentencepiece-bpe":
        import sentencepiece as spm

        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter_lines(path),
            model_writer=model,
            model_type="bpe",
            vocab_size=vocab,
            byte_fallback=True,
            num_threads=2,
            max_sentence_length=1 << 16,
            minloglevel=2,
        )
        out["vocab"] = vocab
    elif name == "bpeasy":
        import bpeasy

        ranks = bpeasy.train_bpe(iter_texts(path), GPT4, 128, vocab)
        out["vocab"] = len(ranks)
    else:
        raise SystemExit(f"unknown trainer {name}")
    out["train_seconds"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = _common.corpus_path()
    if args.child:
        print(json.dumps(run_one(args.child, args.vocab_size, path)))
        return
    rows = []
    results: dict[str, dict[str, object]] = {}
    for name in args.only or TRAINERS:
        child = _common.run_child(
            [sys.executable, __file__, "--child", name, "--vocab-size", str(args.vocab_size)],
            env={"RAYON_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "true"},
        )
        if child.returncode != 0:
            rows.append([name, "failed", "-", "-", "-"])
            continue
        info = json.loads(child.stdout.strip().splitlines()[-1])
        results[name] = info
        print(name, info, f"rss={child.peak_rss_bytes / 1e6:.0f} MB", file=sys.stderr)
        rows.append(
            [
                name,
                _common.fmt(float(info["train_seconds"])),  # type: ignore[arg-type]
                _common.fmt(child.seconds),
                _common.fmt(child.peak_rss_bytes / 1e6, 0),
                info.get("vocab", "-"),
            ]
        )
    ref = results.get("rustbpe")
    lines = [
        f"Training, vocab {args.vocab_size}, GPT-4 pattern, min_frequency 2, whole "
        f"bench-mixed corpus (52 M chars). Machine: {_common.machine_info()}.",
        "Each trainer runs in its own process; RSS is that process's peak. "
        "`files` = tokenpact reads the JSONL.gz in Rust; `iter` = a Python generator "
        "feeds strings, as for every peer.",
        "",
        _common.markdown_table(["trainer", "train s", "process s", "peak RSS MB", "vocab"], rows),
    ]
    if ref:
        for name in ("tokenpact-files-2t", "tokenpact-iter-2t"):
            if name in results:
                ratio = float(results[name]["train_seconds"]) / float(ref["train_seconds"])  # type: ignore[arg-type]
                lines.append(f"\n{name}: {ratio:.2f} x rustbpe's training time.")
    shas = {results[n]["merges_sha"] for n in results if n.startswith("tokenpact")}
    if shas:
        lines.append(
            f"\ntokenpact merges identical across 1 and 2 threads and input paths: "
            f"{'yes' if len(shas) == 1 else 'NO'} ({', '.join(sorted(shas))})."  # type: ignore[arg-type]
        )
    lines.append("\nCommand: `python benchmarks/bench_train.py`")
    table = "\n".join(lines)
    print(table)
    _common.update_performance_section("train", table)


if __name__ == "__main__":
    main()
