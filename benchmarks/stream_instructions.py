"""Instruction counts (callgrind) of streaming encode against one-shot ``encode``.

Load on a shared machine does not change instruction counts, so this is the stable
measure of the streaming target (total cost <= 1.3x one-shot). For each model, one
valgrind run per mode counts only the measured call (it runs inside
``functools.reduce``: ``--collect-atstart=no --toggle-collect=functools_reduce``):

- ``encode``: ``tok.encode(text)`` on the calling thread (``RAYON_NUM_THREADS=1``);
- ``push``: the list-returning loop ``out += enc.push_bytes(c)``, then ``out += enc.finish()``;
- ``sink``: the sink API ``enc.push_bytes_into(c, out)``, then ``enc.finish_into(out)``.

Text: the first 200 kB of bench-mixed.jsonl.gz, 64-byte pushes, default ``scan_step``.
Models: Llama 3.2 (byte-level), Mistral v3 ``.model``, and a Unigram ``.model``
(``nmt_nfkc``, 8k pieces) trained here by sentencepiece on the first 1 MB (outside
valgrind).

Command: ``PYTHONPATH=python python benchmarks/stream_instructions.py`` (needs valgrind;
about 5 minutes).
``--scan-step N`` sets the streams' ``scan_step`` (the fixed cost per scan is the
difference between two steps); ``--allowed-special all`` recognizes every special and
added spelling in ``encode`` and in the stream alike (the stream's guards and matcher).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenpact as tp  # noqa: E402
from _common import corpus_path, load_texts, markdown_table, use_repo_tests  # noqa: E402
from tokenpact.runtime import StreamingEncoder  # noqa: E402
from tokenpact.runtime.stream_encode import DEFAULT_SCAN_STEP  # noqa: E402

MODES = ("encode", "push", "sink")
MODELS = ("llama3.2", "mistral-v3-model", "unigram-model")


def _text(limit: int) -> str:
    return "\n".join(load_texts(corpus_path(), limit_bytes=limit))


def _load(model: str, unigram_path: str | None) -> Any:
    if model == "unigram-model":
        assert unigram_path is not None
        return tp.Tokenizer.load(unigram_path)
    use_repo_tests()
    from conformance import peer_data

    if model == "llama3.2":
        return tp.Tokenizer.load(peer_data.llama3_hf_json())
    return tp.Tokenizer.load(
        next(m for m in peer_data.mistral_models() if m.name.endswith(".model.v3"))
    )


def _measured(
    model: str, mode: str, unigram_path: str | None, size: int, scan_step: int, specials: str
) -> None:
    """The child under valgrind: warm up, then run the counted call once."""
    tok = _load(model, unigram_path)
    text = _text(size)
    data = text.encode()
    chunks = [data[i : i + 64] for i in range(0, len(data), 64)]

    allowed: Any = "all" if specials == "all" else ()

    def encode(_: Any, __: Any) -> list[int]:
        return tok.encode(text, allowed_special=allowed)

    def push(_: Any, __: Any) -> list[int]:
        enc = StreamingEncoder(tok, scan_step=scan_step, allowed_special=allowed)
        out: list[int] = []
        push_bytes = enc.push_bytes
        for c in chunks:
            out += push_bytes(c)
        out += enc.finish()
        return out

    def sink(_: Any, __: Any) -> list[int]:
        enc = StreamingEncoder(tok, scan_step=scan_step, allowed_special=allowed)
        out: list[int] = []
        push_bytes_into = enc.push_bytes_into
        for c in chunks:
            push_bytes_into(c, out)
        enc.finish_into(out)
        return out

    fn = {"encode": encode, "push": push, "sink": sink}[mode]
    expected = tok.encode(text, allowed_special=allowed)
    assert fn(None, None) == expected  # warm: caches, the ints table, lazy tables
    result = functools.reduce(fn, [None], None)  # counted
    assert result == expected


def _count(
    model: str, mode: str, unigram_path: str | None, size: int, scan_step: int, specials: str
) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "RAYON_NUM_THREADS": "1"}
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            model,
            mode,
            "--size",
            str(size),
            "--scan-step",
            str(scan_step),
            "--allowed-special",
            specials,
        ]
        if unigram_path:
            cmd += ["--unigram-model", unigram_path]
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        summary = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert summary is not None, "no callgrind summary"
        return int(summary.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200_000, help="text bytes")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    parser.add_argument(
        "--scan-step", type=int, default=DEFAULT_SCAN_STEP, help="StreamingEncoder scan_step"
    )
    parser.add_argument(
        "--allowed-special",
        choices=("none", "all"),
        default="none",
        help="all: recognize every special and added spelling (encode and stream alike)",
    )
    parser.add_argument("--unigram-model", help="a trained .model (else trained here)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _measured(
            args.child[0],
            args.child[1],
            args.unigram_model,
            args.size,
            args.scan_step,
            args.allowed_special,
        )
        return
    unigram = args.unigram_model
    if "unigram-model" in args.models and unigram is None:
        from bench_runtime import train_unigram

        trained = train_unigram(_text(2_000_000))
        assert trained is not None, "sentencepiece is needed to train the Unigram model"
        unigram = str(trained.source.get("path") or "")
    rows = []
    for model in args.models:
        counts = {}
        for mode in MODES:
            counts[mode] = _count(
                model, mode, unigram, args.size, args.scan_step, args.allowed_special
            )
            print(f"{model} {mode}: {counts[mode] / 1e6:.2f} M", file=sys.stderr)
        one = counts["encode"]
        rows.append(
            [
                model,
                f"{one / 1e6:.2f} M",
                f"{counts['push'] / 1e6:.2f} M ({counts['push'] / one:.3f}x)",
                f"{counts['sink'] / 1e6:.2f} M ({counts['sink'] / one:.3f}x)",
                f"{(counts['push'] - counts['sink']) / 1e6:.2f} M",
            ]
        )
    print(
        markdown_table(
            ["model", "one-shot encode", "push loop", "sink loop", "saved by the sink"], rows
        )
    )


if __name__ == "__main__":
    main()
