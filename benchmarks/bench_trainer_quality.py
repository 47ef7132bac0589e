"""Trainer quality against the peers, per language and per slice (issue 12).

Each of our character-level trainers and its peer learn from the same training lines,
same vocabulary size; the table is held-out tokens per UTF-8 byte, per language of a
``parallel-gettext`` mix (ja, zh_CN, ko, ru, ar, hi, de, en, fr) and per slice of a
shuffled 4 MB ``bench-mixed`` slice (tests/conformance/corpus_slices.py builds both).

* Unigram vs ``sentencepiece`` (vocab 8000, byte fallback, SentencePiece defaults:
  ``identity`` rule with whitespace cleanup);
* WordPiece vs HF ``WordPieceTrainer`` (BERT pre-tokenizer, min_frequency 2,
  limit_alphabet 1000);
* character BPE vs HF ``BpeTrainer`` (whitespace words, ``</w>`` end-of-word suffix).

Writes the "trainer-quality" section of docs/PERFORMANCE.md.

    python benchmarks/bench_trainer_quality.py [--vocab-size 8000] [--only unigram ...]
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.use_repo_tests()
from conformance.corpus_slices import bench_split, multilingual_split, nbytes  # noqa: E402

Encoder = Callable[[list[str]], list[list[int]]]
TRAINERS = ("unigram", "wordpiece", "char_bpe")


def unigram_pair(train: tuple[str, ...], vocab: int) -> tuple[Encoder, Encoder, float, float]:
    import sentencepiece as spm

    import tokenpact as tp

    start = time.perf_counter()
    ours = tp.train_unigram(train, vocab_size=vocab, byte_fallback=True)
    ours_s = time.perf_counter() - start
    model = io.BytesIO()
    start = time.perf_counter()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab,
        byte_fallback=True,
        normalization_rule_name="identity",
        max_sentence_length=1 << 16,
        num_threads=2,
        minloglevel=2,
    )
    peer_s = time.perf_counter() - start
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    return ours.encode_batch, sp.encode, ours_s, peer_s


def wordpiece_pair(train: tuple[str, ...], vocab: int) -> tuple[Encoder, Encoder, float, float]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import tokenpact as tp

    start = time.perf_counter()
    ours = tp.train_wordpiece(train, vocab_size=vocab, min_frequency=2, limit_alphabet=1000)
    ours_s = time.perf_counter() - start
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab,
        min_frequency=2,
        limit_alphabet=1000,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False,
    )
    start = time.perf_counter()
    hf.train_from_iterator(train, trainer)
    peer_s = time.perf_counter() - start

    def peer(lines: list[str]) -> list[list[int]]:
        return [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]

    return ours.encode_batch, peer, ours_s, peer_s


def char_bpe_pair(train: tuple[str, ...], vocab: int) -> tuple[Encoder, Encoder, float, float]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import tokenpact as tp

    # Resolved before the clock starts, as the peer's imports are: the first attribute
    # access imports tokenpact.train (a one-time cost, not training time).
    train_char_bpe = tp.train_char_bpe
    start = time.perf_counter()
    ours = train_char_bpe(train, vocab_size=vocab)
    ours_s = time.perf_counter() - start
    hf = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=["<unk>"],
        end_of_word_suffix="</w>",
        show_progress=False,
    )
    start = time.perf_counter()
    hf.train_from_iterator(train, trainer)
    peer_s = time.perf_counter() - start

    def peer(lines: list[str]) -> list[list[int]]:
        return [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]

    return ours.encode_batch, peer, ours_s, peer_s


PAIRS = {"unigram": unigram_pair, "wordpiece": wordpiece_pair, "char_bpe": char_bpe_pair}
PEERS = {
    "unigram": "sentencepiece",
    "wordpiece": "HF WordPieceTrainer",
    "char_bpe": "HF BpeTrainer",
}


def compare(trainer: str, corpus: str, vocab: int) -> tuple[list[list[object]], str]:
    train, held = bench_split() if corpus == "bench-mixed" else multilingual_split()
    ours, peer, ours_s, peer_s = PAIRS[trainer](train, vocab)
    rows: list[list[object]] = []
    totals = [0, 0, 0]
    for name, lines in held.items():
        size = nbytes(lines)
        a = sum(map(len, ours(list(lines))))
        b = sum(map(len, peer(list(lines))))
        totals = [totals[0] + a, totals[1] + b, totals[2] + size]
        rows.append([name, f"{a / size:.4f}", f"{b / size:.4f}", f"{a / b:.3f}"])
    a, b, size = totals
    rows.append(["all", f"{a / size:.4f}", f"{b / size:.4f}", f"{a / b:.3f}"])
    note = (
        f"{trainer} on {corpus} ({nbytes(train) / 1e6:.1f} MB of training lines): "
        f"train {ours_s:.1f} s vs {PEERS[trainer]} {peer_s:.1f} s"
    )
    return rows, note


def previous_blocks(done: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """The section's (note, table) blocks of the runs not redone, so --only keeps them."""
    path = _common.PERFORMANCE_MD
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    found = re.search(
        r"<!-- begin trainer-quality -->\n(.*?)\n<!-- end trainer-quality -->", text, re.S
    )
    blocks: dict[tuple[str, str], list[str]] = {}
    parts = found.group(1).split("\n\n") if found else []
    for note, table in zip(parts, parts[1:], strict=False):
        run = re.match(r"\*\*(\w+) on ([\w-]+) ", note)
        if run and table.startswith("|") and (run[1], run[2]) not in done:
            blocks[(run[1], run[2])] = [note, table]
    return blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--only", nargs="*", choices=TRAINERS, default=list(TRAINERS))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    runs = [(t, "multilingual") for t in args.only]
    if "unigram" in args.only:
        runs.insert(0, ("unigram", "bench-mixed"))
    parts = [
        f"Held-out tokens per byte, ours vs the peer trained on the same lines, vocab "
        f"{args.vocab_size:,}. Machine: {_common.machine_info()} (shared with other agents "
        "during the run). Command: `python benchmarks/bench_trainer_quality.py`."
    ]
    blocks = previous_blocks(runs)
    for trainer, corpus in runs:
        rows, note = compare(trainer, corpus, args.vocab_size)
        headers = ["language / slice", "tokenpact", PEERS[trainer], "ratio"]
        table = _common.markdown_table(headers, rows)
        print(note, table, sep="\n", flush=True)
        blocks[(trainer, corpus)] = [f"**{note}**", table]
    order = [("unigram", "bench-mixed")] + [(t, "multilingual") for t in TRAINERS]
    for run in sorted(blocks, key=order.index):
        parts += blocks[run]
    if not args.no_write:
        _common.update_performance_section("trainer-quality", "\n\n".join(parts))


if __name__ == "__main__":
    main()
