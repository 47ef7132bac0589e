"""What matching ordinary added tokens costs on the default encode path.

Tokenizers whose files declare ordinary (non-special) added tokens run every default
``encode`` through the added-token matcher (they match as in Hugging Face ``tokenizers``);
the others keep the matcher-free path. Same engine, same texts, one thread: the default
policy's matcher against no matcher at all (which no longer gives the right IDs when the
text holds those spellings; bench-mixed holds none, so both encode the same IDs here).

    python benchmarks/bench_added_tokens.py [--limit-mb 8] [--repeat 3] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

MODELS = ("qwen-3", "deepseek-v3", "llama-3.2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-mb", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    _common.use_repo_tests()
    import tokenpact as tp
    from conformance.shipped_files import shipped_tokenizer_jsons

    files = shipped_tokenizer_jsons()
    texts = _common.load_texts(_common.corpus_path(), int(args.limit_mb * 1e6))
    nbytes = _common.utf8_bytes(texts)
    rows = []
    for name in MODELS:
        tok = tp.Tokenizer.load(files[name])
        engine = tok.engine
        matcher = tok._default_matcher
        with_matcher, ids = _common.timed(
            lambda e=engine, m=matcher: e.encode_batch(texts, m, 1), args.repeat
        )
        without, plain = _common.timed(lambda e=engine: e.encode_batch(texts, None, 1), args.repeat)
        if ids != plain:
            raise SystemExit(f"{name}: the corpus holds an added-token spelling; pick other text")
        ordinary = len(set(tok.added_tokens) - set(tok.special_tokens))
        rows.append(
            [
                name,
                ordinary,
                _common.fmt(_common.mb_per_s(nbytes, with_matcher), 1),
                _common.fmt(_common.mb_per_s(nbytes, without), 1),
                _common.fmt(without / with_matcher, 3),
            ]
        )
    table = _common.markdown_table(
        ["tokenizer", "ordinary added tokens", "default policy MB/s", "no matcher MB/s", "ratio"],
        rows,
    )
    text = (
        "## Ordinary added tokens on the default encode path\n\n"
        f"bench-mixed, {nbytes / 1e6:.1f} MB, `encode_batch` on one thread, best of "
        f"{args.repeat}; {_common.machine_info()}.\n"
        "Command: `python benchmarks/bench_added_tokens.py --limit-mb "
        f"{args.limit_mb:g} --repeat {args.repeat}`.\n\n"
        f"{table}\n\n"
        "DeepSeek's ordinary tokens carry `normalized: true` next to raw-matched specials, so "
        "its texts take Hugging Face's two-pass split (each segment between raw matches "
        "searched again); Qwen 3's are plain (one automaton scan). Llama 3.2 declares none "
        "and keeps the matcher-free path.\n"
    )
    print(text)
    if args.write_docs:
        _common.update_performance_section("added_tokens", text)


if __name__ == "__main__":
    main()
