"""What the hardening costs, and SentencePiece ``encode_structured`` against ``encode``.

Run from the repository root::

    PYTHONPATH=python python benchmarks/bench_hardening.py

Part 1: load real ``tokenizer.json`` files (Llama 3.2, MiniLM) with tokenpact and with
Hugging Face ``tokenizers`` in the same process, and time tokenpact's structural
validation (``formats/hf_schema.py``) on its own. Part 2: load a saved artifact with and
without contract verification. Part 3: a real SentencePiece model (mistral-common) on
real text: ``sentencepiece``'s encode, tokenpact's ``encode`` and ``encode_structured``.
Prints markdown tables; asserts nothing about time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tokenpact as tp
from _common import use_repo_tests
from tokenpact.formats import hf_schema


def best(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    use_repo_tests()
    import tokenizers

    from conformance.peer_data import llama3_hf_json, minilm_tokenizer_json, mistral_models

    print(
        "| file | tokenizers load | tokenpact load | of which validation | "
        "saved, verify=True | saved, verify=False |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, path in (("Llama 3.2", llama3_hf_json()), ("MiniLM", minilm_tokenizer_json())):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        peer = best(lambda p=path: tokenizers.Tokenizer.from_file(str(p)))
        ours = best(lambda p=path: tp.Tokenizer.load(p))
        check = best(lambda p=path, d=data: hf_schema.validate(p, d))
        with tempfile.TemporaryDirectory() as scratch:
            saved = tp.Tokenizer.load(path).save(Path(scratch) / "a")
            verified = best(lambda s=saved: tp.Tokenizer.load(s), repeat=2)
            unverified = best(lambda s=saved: tp.Tokenizer.load(s, verify=False), repeat=2)
        print(
            f"| {name} | {peer:.3f} s | {ours:.3f} s | {check:.3f} s | "
            f"{verified:.3f} s | {unverified:.3f} s |"
        )

    import sentencepiece as spm

    model = mistral_models()[0]
    text = Path(tp.__file__).with_name("tokenizer.py").read_text(encoding="utf-8") * 8
    size = len(text.encode("utf-8")) / 1e6
    peer_sp = spm.SentencePieceProcessor(model_file=str(model))
    tok = tp.Tokenizer.load(model)
    tok.encode_structured("warm up the piece cache")
    rows = [
        ("sentencepiece encode", best(lambda: peer_sp.encode(text))),
        ("tokenpact encode", best(lambda: tok.encode(text))),
        ("tokenpact encode_structured", best(lambda: tok.encode_structured(text))),
    ]
    print(f"\n{model.name}, {size:.2f} MB of Python source\n")
    print("| call | MB/s |")
    print("|---|---:|")
    for label, seconds in rows:
        print(f"| {label} | {size / seconds:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
