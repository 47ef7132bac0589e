"""Small hostile inputs for the hardening tests and the fuzz suite, plus a subprocess
runner with a memory limit: a crash (abort, out-of-memory kill) must fail the test, not
the test process."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def package_root() -> str:
    """The directory holding the ``tokenpact`` this test process imported.

    Children must import the same build: the installed package in CI (the source tree has
    no compiled extension there), the source tree with its built extension when developing.
    """
    import tokenpact

    return str(Path(tokenpact.__file__).resolve().parent.parent)


# Address-space limit of a child: a 96 GB table fails fast instead of swapping.
MEMORY_LIMIT = 3 << 30


def byte_level_bpe(*, merges: bool = True) -> dict[str, Any]:
    """A minimal valid byte-level BPE ``tokenizer.json`` (256 bytes, a few merges)."""
    from tokenpact.formats.hf_json import byte_encoder

    enc = byte_encoder()
    vocab = {enc[b]: b for b in range(256)}
    merge_list: list[str] = []
    if merges:
        for left, right in (("h", "e"), ("l", "l"), ("he", "ll")):
            vocab[left + right] = len(vocab)
            merge_list.append(f"{left} {right}")
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {**level, "use_regex": True},
        "post_processor": None,
        "decoder": {**level, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "vocab": vocab, "merges": merge_list},
    }


def added_token(token_id: int, content: str, *, special: bool = True) -> dict[str, Any]:
    """An ``added_tokens`` entry with every field Hugging Face writes."""
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": not special,
        "special": special,
    }


def wordpiece() -> dict[str, Any]:
    """A minimal valid WordPiece ``tokenizer.json`` (seed 000's "unwanted" vocabulary)."""
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##want": 4, "##ed": 5, "a": 6}
    return {
        "version": "1.0",
        "added_tokens": [added_token(1, "[CLS]"), added_token(2, "[SEP]")],
        "normalizer": {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "BertProcessing",
            "sep": ["[SEP]", 2],
            "cls": ["[CLS]", 1],
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": vocab,
        },
    }


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_isolated(code: str, *, timeout: float = 120, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a fresh interpreter under the memory limit; return the
    CompletedProcess. A negative return code is a signal (abort, kill)."""
    environment = {
        **os.environ,
        "PYTHONPATH": package_root(),
        "RUST_BACKTRACE": "0",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        preexec_fn=_limit_memory,
        check=False,
    )
