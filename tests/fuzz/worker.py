"""The fuzz worker: loads a batch of mutants in this (sandboxed) process and prints one
JSON line per mutant. Run by :mod:`tests.fuzz.harness`; never imported by pytest.

Outcomes: ``ok`` (accepted and usable), ``typed`` (a TokenpactError), ``untyped`` (any
other exception: a bug), ``fail_open`` (a tampered artifact loaded with verification on
and behaves differently). A crash or hang shows as a missing line (the harness notices).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

try:  # the data surfaces' runners sit beside this file (run as a script by the harness)
    from . import data_worker
except ImportError:
    import data_worker  # type: ignore[import-not-found, no-redef]

PROBES = (
    "hello world",
    "The cat sleeps. <|endoftext|> [CLS] <s>",
    "naïve café 日本語 🙂 \r\n\t  x",
    "1234567 ++ ((x))",
)


def _probe(tok: Any) -> list[Any]:
    """Exercise the loaded tokenizer the way a user would; return comparable outputs."""
    out: list[Any] = []
    for text in PROBES:
        ids = tok.encode(text, allowed_special="all")
        out.append(ids)
        tok.encode(text)
        tok.decode(ids, errors="replace")
    out.append(tok.encode_batch(list(PROBES), threads=2))
    tok.encode_structured(PROBES[1])
    tok.encode(PROBES[0], add_special_tokens=True)
    out.append(tok.vocab_size)
    return out


def _run_tokenizer(kind: str, path: str, spec: dict[str, Any]) -> str:
    import tokenpact as tp

    if kind == "tiktoken":
        tok = tp.Tokenizer.from_tiktoken(path, pattern="gpt4")
    else:
        tok = tp.Tokenizer.load(path)  # verify=True: the default
    outputs = _probe(tok)
    if kind == "artifact":
        expected = spec["expected"]
        same = tok.semantic_hash == expected["semantic_hash"] and (
            json.loads(json.dumps(outputs)) == expected["outputs"]
        )
        if not same:
            return "fail_open"
    return "ok"


def _read_values(path: str) -> Any:
    """The Python values a chat or CLI mutant carries (lone surrogates included)."""
    return json.loads(Path(path).read_bytes().decode("utf-8", "surrogatepass"))


def _run_chat(path: str) -> str:
    import tokenpact as tp

    doc = _read_values(path)
    if not isinstance(doc, dict):
        doc = {"messages": doc}  # the mutant replaced the whole request
    tok = _chat_tokenizer()
    messages, mode = doc.get("messages"), doc.get("mode", "generation")
    compiler = tp.chat.SequenceCompiler(tok)
    conv = compiler.format(messages, mode=mode)
    _no_forged_control(conv, messages)
    template = tp.chat.ChatTemplate(doc.get("template", _TEMPLATE), tok)
    rendered = template.render(messages, add_generation_prompt=True)
    _no_forged_control(rendered, messages)
    tp.chat.truncate(compiler, messages, limit=doc.get("limit", 64), mode=mode)
    return "ok"


_TEMPLATE = (
    "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>{% endif %}"
)
_CHAT_TOK: list[Any] = []


def _chat_tokenizer() -> Any:
    import tokenpact as tp

    if not _CHAT_TOK:
        _CHAT_TOK.append(tp.Tokenizer.from_merges([], special_tokens=tp.chat.SEED_SPECIAL_TOKENS))
    return _CHAT_TOK[0]


def _no_forged_control(conv: Any, messages: Any) -> None:
    """A special-token ID not marked ``control`` came from content: a forged control."""
    specials = set(_chat_tokenizer().special_tokens.values())
    for token_id, origin in zip(conv.input_ids, conv.origin, strict=True):
        if token_id in specials and origin != "control":
            raise AssertionError(f"content produced control ID {token_id}")


def _run_cli(path: str) -> str:
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    argv = _read_values(path)
    argv = argv if isinstance(argv, list) else [argv]
    result = CliRunner().invoke(cli, [str(a) for a in argv], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code not in (0, 1, 2):
        raise AssertionError(f"exit code {result.exit_code}")
    if "Traceback" in result.output:
        raise AssertionError("a traceback was printed")
    return "ok"


# Issue 43's surfaces live in their own module (serving_worker.py).
_SERVING_KINDS = ("safetensors", "release", "pointer", "serve", "runtime")


def _serving() -> Any:
    sys.path.insert(0, str(Path(__file__).parent))
    import serving_worker

    return serving_worker


def run_one(kind: str, path: str, spec: dict[str, Any]) -> dict[str, Any]:
    from tokenpact.errors import TokenpactError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind in _SERVING_KINDS:
                outcome = _serving().run(kind, path, spec)
            elif kind == "chat":
                outcome = _run_chat(path)
            elif kind == "cli":
                outcome = _run_cli(path)
            elif kind in data_worker.KINDS:  # datasets, corpora, doctor inputs (issue 43)
                outcome = data_worker.run(kind, path, spec)
            else:
                outcome = _run_tokenizer(kind, path, spec)
        return {"outcome": outcome}
    except TokenpactError as exc:
        return {"outcome": "typed", "error": type(exc).__name__}
    except Exception as exc:  # noqa: BLE001 - classifying every escape is the point
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
        return {
            "outcome": "untyped",
            "error": f"{type(exc).__name__}: {str(exc)[:200]}",
            "where": where,
        }


def main() -> None:
    job = json.loads(sys.stdin.read())
    import tokenpact  # noqa: F401 - import once, outside the first mutant's timing

    for index, path in job["items"]:
        print(json.dumps({"start": index}), flush=True)
        result = run_one(job["kind"], path, job.get("spec", {}))
        print(json.dumps({"index": index, **result}), flush=True)
    if "pyarrow" in sys.modules:  # skip the teardown pyarrow can abort in (SECURITY.md)
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
