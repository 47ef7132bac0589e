"""Trainer benchmark: tokenpact Unigram vs SentencePiece, tokenpact WordPiece vs HF.

Every trainer runs in its own child process (peak RSS is its own) on the same corpus,
``../shared/corpus/bench-mixed.jsonl.gz``, fed as non-empty lines (SentencePiece is
line-oriented): vocab 32,000. Unigram: byte fallback on both sides, 2 threads,
both with the identity rule and SentencePiece's default whitespace cleanup (tokenpact's
defaults are SentencePiece's). WordPiece: BERT basic split, lowercase off, min_frequency 2,
limit_alphabet 1000 on both. Writes the table to docs/PERFORMANCE.md ("trainers").

    python benchmarks/bench_trainers.py [--vocab-size 32000] [--only NAME ...] [--limit-mb N]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

TRAINERS = [
    "tokenpact-unigram",
    "sentencepiece-unigram",
    "tokenpact-wordpiece",
    "hf-wordpiece",
]
PAIRS = {"tokenpact-unigram": "sentencepiece-unigram", "tokenpact-wordpiece": "hf-wordpiece"}


def iter_lines(path: Path, limit_bytes: int | None) -> Iterator[str]:
    total = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for record in handle:
            for line in json.loads(record)["text"].split("\n"):
                if line.strip():
                    total += len(line)
                    yield line
            if limit_bytes is not None and total >= limit_bytes:
                return


def run_one(name: str, vocab: int, path: Path, limit: int | None) -> dict[str, object]:
    out: dict[str, object] = {}
    lines = iter_lines(path, limit)
    start = time.perf_counter()
    if name == "tokenpact-unigram":
        import tokenpact as tp

        tok = tp.train_unigram(lines, vocab_size=vocab, byte_fallback=True, threads=2)
        out["vocab"] = tok.vocab_size
        out["stop"] = tok.training["stop_reason"] if tok.training else "?"
    elif name == "sentencepiece-unigram":
        import sentencepiece as spm

        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=lines,
            model_writer=model,
            model_type="unigram",
            vocab_size=vocab,
            byte_fallback=True,
            num_threads=2,
            normalization_rule_name="identity",
            max_sentence_length=1 << 16,
            minloglevel=2,
        )
        out["vocab"] = vocab
    elif name == "tokenpact-wordpiece":
        import tokenpact as tp

        wp = tp.train_wordpiece(
            lines, vocab_size=vocab, min_frequency=2, threads=2, scoring=WORDPIECE_SCORING
        )
        out["vocab"] = wp.vocab_size
        out["stop"] = wp.training["stop_reason"] if wp.training else "?"
    elif name == "hf-wordpiece":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab,
            min_frequency=2,
            limit_alphabet=1000,
            special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            show_progress=False,
        )
        hf.train_from_iterator(lines, trainer)
        out["vocab"] = hf.get_vocab_size()
    else:
        raise SystemExit(f"unknown trainer {name}")
    out["train_seconds"] = time.perf_counter() - start
    return out


WORDPIECE_SCORING = "count"  # set from --wordpiece-scoring (the library default)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--limit-mb", type=float, default=None, help="corpus prefix, MB")
    parser.add_argument(
        "--wordpiece-scoring",
        default="count",
        choices=["likelihood_gain", "likelihood_ratio", "count"],
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global WORDPIECE_SCORING
    WORDPIECE_SCORING = args.wordpiece_scoring
    path = _common.corpus_path()
    limit = int(args.limit_mb * 1e6) if args.limit_mb else None
    if args.child:
        print(json.dumps(run_one(args.child, args.vocab_size, path, limit)))
        return
    rows = []
    results: dict[str, tuple[float, float]] = {}
    for name in args.only or TRAINERS:
        argv = [sys.executable, __file__, "--child", name, "--vocab-size", str(args.vocab_size)]
        argv += ["--wordpiece-scoring", args.wordpiece_scoring]
        if args.limit_mb:
            argv += ["--limit-mb", str(args.limit_mb)]
        child = _common.run_child(
            argv, env={"RAYON_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "true"}
        )
        if child.returncode != 0:
            rows.append([name, "failed", "-", "-", "-"])
            continue
        info = json.loads(child.stdout.strip().splitlines()[-1])
        seconds = float(info["train_seconds"])
        results[name] = (seconds, child.peak_rss_bytes / 1e6)
        print(name, info, f"rss={child.peak_rss_bytes / 1e6:.0f} MB", file=sys.stderr)
        rows.append(
            [
                name,
                _common.fmt(seconds),
                _common.fmt(child.seconds),
                _common.fmt(child.peak_rss_bytes / 1e6, 0),
                info.get("vocab", "-"),
            ]
        )
    corpus = "whole bench-mixed corpus" if limit is None else f"first {args.limit_mb} MB"
    lines = [
        f"Trainer comparison, vocab {args.vocab_size}, {corpus} fed as non-empty lines. "
        f"Machine: {_common.machine_info()}.",
        "Each trainer runs in its own process; RSS is that process's peak. Unigram: byte "
        "fallback, 2 threads, identity rule with SentencePiece's default whitespace cleanup on "
        "both sides. WordPiece: BERT "
        "basic split, min_frequency 2, limit_alphabet 1000.",
        "",
        _common.markdown_table(["trainer", "train s", "process s", "peak RSS MB", "vocab"], rows),
    ]
    for ours, peer in PAIRS.items():
        if ours in results and peer in results:
            t = results[ours][0] / results[peer][0]
            m = results[ours][1] / results[peer][1]
            lines.append(f"\n{ours}: {t:.2f} x {peer}'s time, {m:.2f} x its peak RSS.")
    lines.append("\nCommand: `python benchmarks/bench_trainers.py`")
    table = "\n".join(lines)
    print(table)
    _common.update_performance_section("trainers", table)


if __name__ == "__main__":
    main()
