"""The transformers adapter against transformers' own tokenizer, on training-pipeline calls.

Same run, same machine, same directory loaded by both: ``tp.TransformersTokenizer`` vs
``transformers.AutoTokenizer`` (a ``PreTrainedTokenizerFast``/``TokenizersBackend``).
Rows are the calls Trainer, TRL's SFTTrainer and ``datasets.map`` make: a ``map`` batch
of 1000 documents with truncation; a collate batch of 64 with padding, truncation and
numpy tensors; ``pad`` of 64 collator features; ``apply_chat_template`` of 256
conversations (tokenized, padded, with the assistant mask on our side). Texts are the
documents of ../shared/corpus/bench-mixed.jsonl.gz without control spellings (the
trust rule is the one documented difference); each row also counts batches whose
outputs differ. Both sides use their default threading. Best of ``--repeat``.
Writes the "hf_adapter" section of docs/PERFORMANCE.md with ``--write-docs``.

    python benchmarks/bench_hf_adapter.py [--limit-mb 4] [--repeat 5] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def same(a: Any, b: Any) -> bool:
    import numpy as np

    keys = sorted(b)
    if sorted(a) != keys:
        return False
    for key in keys:
        x, y = a[key], b[key]
        if isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size) if len(items[i : i + size])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit-mb", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", nargs="*", default=["qwen-2.5", "llama-3.2"])
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()

    _common.use_repo_tests()
    import transformers

    import tokenpact as tp
    from conformance import peer_data

    texts_all = _common.load_texts(_common.corpus_path(), int(args.limit_mb * _common.MB))
    rows: list[list[object]] = []
    for model in args.models:
        if model == "llama-3.2":
            folder = peer_data.llama3_hf_json().parent
        else:
            folder = peer_data.offline_counter_files(model).tokenizer_json.parent
        ours = tp.TransformersTokenizer.from_pretrained(folder)
        peer = transformers.AutoTokenizer.from_pretrained(str(folder))
        if peer.pad_token is None:
            peer.pad_token = peer.eos_token
            ours.pad_token = peer.eos_token
        spellings = [str(s) for s in peer.added_tokens_decoder.values() if s.special]
        texts = [t for t in texts_all if not any(s in t for s in spellings)]

        def row(
            name: str,
            batches: list[Any],
            call: Callable[[Any, Any], Any],
            count: int,
            pair: tuple[Any, Any, str] = (ours, peer, model),
        ) -> None:
            mine, theirs, label = pair
            t_ours, got = best_of(lambda: [call(mine, b) for b in batches], args.repeat)
            t_peer, want = best_of(lambda: [call(theirs, b) for b in batches], args.repeat)
            differing = sum(not same(g, w) for g, w in zip(got, want, strict=True))
            rows.append(
                [
                    label,
                    name,
                    count,
                    _common.fmt(t_ours * 1000, 1),
                    _common.fmt(t_peer * 1000, 1),
                    f"{t_peer / t_ours:.2f}x",
                    differing,
                ]
            )

        mapped = chunks(texts, 1000)
        row(
            "map: 1000 docs, truncation 512",
            mapped,
            lambda tok, b: tok(b, truncation=True, max_length=512),
            len(texts),
        )
        collate = chunks(texts, 64)
        row(
            "collate: 64 docs, pad + truncate 512, np",
            collate,
            lambda tok, b: tok(
                b, padding=True, truncation=True, max_length=512, return_tensors="np"
            ),
            len(texts),
        )
        features = [
            [{"input_ids": ids} for ids in peer(b, truncation=True, max_length=512)["input_ids"]]
            for b in collate
        ]
        row(
            "pad: 64 features, np",
            features,
            lambda tok, f: tok.pad(f, return_tensors="np"),
            len(texts),
        )
        if peer.chat_template is not None:
            convs = [
                [
                    {"role": "user", "content": texts[i][:600]},
                    {"role": "assistant", "content": texts[i + 1][:600]},
                ]
                for i in range(0, min(len(texts) - 1, 512), 2)
            ]
            row(
                "apply_chat_template: 256 conversations, padded",
                [convs],
                lambda tok, c: tok.apply_chat_template(c, padding=True, return_tensors="np"),
                len(convs),
            )

    table = _common.markdown_table(
        [
            "model",
            "call",
            "items",
            "tokenpact ms",
            "transformers ms",
            "speedup",
            "batches differing",
        ],
        rows,
    )
    caption = (
        f"Adapter vs transformers {_common.package_version('transformers')} "
        f"(tokenizers {_common.package_version('tokenizers')}), same directory, best of "
        f"{args.repeat}; {args.limit_mb:g} MB of bench-mixed; {_common.machine_info()}.\n"
        "Command: `python benchmarks/bench_hf_adapter.py"
        f" --limit-mb {args.limit_mb:g} --repeat {args.repeat}`."
    )
    markdown = f"## transformers adapter (`TransformersTokenizer`)\n\n{caption}\n\n{table}\n"
    print(markdown)
    if args.write_docs:
        _common.update_performance_section("hf_adapter", markdown)


if __name__ == "__main__":
    main()
