"""The ``tokenpact`` command line: every command, exit codes and the quickstart job."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import tokenpact
from tokenpact.cli import cli
from tokenpact.cli._common import escape_piece
from tokenpact.formats.native import FILENAME

# Subprocesses must import the same tokenpact as this process (installed or in place).
PYTHON_SRC = Path(tokenpact.__file__).resolve().parent.parent

LINES = [
    "The cat sleeps on the mat.",
    "The dog sleeps in the sun.",
    "A cat and a dog: naïve café, €5 and 12345 apples.",
    "def encode(text):\n    return [ord(c) for c in text]",
    "Здравствуй, мир! 你好，世界。",
]


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("corpus")
    text = root / "a.txt"
    text.write_text("\n".join(LINES * 20) + "\n", encoding="utf-8")
    jsonl = root / "b.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as handle:
        for line in LINES * 10:
            handle.write(json.dumps({"body": line, "id": 1}) + "\n")
    return [text, jsonl]


@pytest.fixture(scope="module")
def tok_dir(corpus_files: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "artifact"
    result = CliRunner().invoke(
        cli,
        ["train", *map(str, corpus_files), "--output", str(out), "--vocab-size", "300"]
        + ["--text-field", "body", "--threads", "2", "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    return out


def run(*args: str, input: str | bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    # Result.stdout folds "\r\n" into "\n"; the raw bytes show what a pipe would get.
    return result.exit_code, result.stdout_bytes.decode("utf-8"), result.stderr


# --------------------------------------------------------------------------- help and usage


@pytest.mark.parametrize("command", [[], ["train"], ["encode"], ["decode"], ["inspect"]])
def test_help(command: list[str]) -> None:
    code, out, _ = run(*command, "--help")
    assert code == 0
    assert "Usage: tokenpact" in out


def test_quickstart_help() -> None:
    code, out, _ = run("quickstart", "--help")
    assert code == 0 and "--vocab-size" in out and "--max-bytes" in out


def test_help_in_subprocess() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_SRC), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "tokenpact.cli", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("quickstart", "train", "encode", "decode", "inspect"):
        assert name in proc.stdout


def test_bad_option_is_usage_error(tok_dir: Path) -> None:
    code, _, err = run("encode", "--tokenizer", str(tok_dir), "--bogus", "x")
    assert code == 2 and "No such option" in err
    code, _, err = run("decode", "--tokenizer", str(tok_dir), "1", "--errors", "ignore")
    assert code == 2 and "--errors" in err
    code, _, err = run("train", "--output", "x")  # no inputs, no --vocab-size
    assert code == 2


def test_text_and_file_together_is_usage_error(tok_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("hi", encoding="utf-8")
    code, _, err = run("encode", "-t", str(tok_dir), "hi", "--file", str(path))
    assert code == 2 and "not both" in err


# --------------------------------------------------------------------------- error exits


def test_missing_tokenizer_is_error_exit(tmp_path: Path) -> None:
    for command in (["encode", "hi"], ["decode", "1"], ["inspect", "hi"]):
        code, out, err = run(command[0], "--tokenizer", str(tmp_path / "nope"), *command[1:])
        assert code == 1
        assert err.startswith("error: tokenizer path") and "does not exist" in err
        assert "Traceback" not in err and out == ""


def test_damaged_artifact_is_error_exit(tok_dir: Path, tmp_path: Path) -> None:
    damaged = tmp_path / FILENAME
    damaged.write_text((tok_dir / FILENAME).read_text(encoding="utf-8")[:100], encoding="utf-8")
    code, _, err = run("encode", "-t", str(damaged), "hi")
    assert code == 1 and err.startswith("error: ") and "invalid JSON" in err


def test_unknown_id_and_strict_decode_are_error_exits(tok_dir: Path) -> None:
    code, _, err = run("decode", "-t", str(tok_dir), "99999")
    assert code == 1 and err.startswith("error: ") and "99999" in err
    # 0xE2 alone is the first byte of a three-byte character.
    code, _, err = run("decode", "-t", str(tok_dir), "226")
    assert code == 1 and err.startswith("error: ")
    code, out, _ = run("decode", "-t", str(tok_dir), "226", "--errors", "replace")
    assert code == 0 and out == "\ufffd\n"


def test_train_errors(corpus_files: list[Path], tmp_path: Path) -> None:
    code, _, err = run("train", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "o"))
    assert code == 2  # --vocab-size missing
    code, _, err = run(
        "train", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "o"), "--vocab-size", "300"
    )
    assert code == 1 and err.startswith("error: ") and "missing.txt" in err
    code, _, err = run(
        "train", str(corpus_files[1]), "-o", str(tmp_path / "o"), "--vocab-size", "300"
    )
    assert code == 1 and err.startswith("error: ")  # the JSONL field is "body", not "text"
    code, _, err = run(
        "train", str(corpus_files[0]), "-o", str(tmp_path / "o"), "--vocab-size", "3"
    )
    assert code == 1 and err.startswith("error: ")


# --------------------------------------------------------------------------- commands


def test_train_output(corpus_files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "tok"
    code, stdout, _ = run(
        "train", str(corpus_files[0]), "-o", str(out), "--vocab-size", "280",
        "--pattern", "gpt2", "--min-frequency", "3", "--tie-break", "subword_nmt",
        "--max-token-length", "8", "--no-special-tokens", "--no-progress",
    )  # fmt: skip
    assert code == 0
    for label in ("stop reason", "merges learned", "vocab size", "elapsed", "saved to"):
        assert label in stdout
    assert (out / FILENAME).is_file()
    artifact = json.loads((out / FILENAME).read_text(encoding="utf-8"))
    assert artifact["special_tokens"] == []
    assert artifact["pre_tokenizer"]["name"] == "gpt2"
    assert all(len(bytes.fromhex(p)) <= 8 for p in artifact["model"]["vocab"])


def test_encode_decode_round_trip(tok_dir: Path, tmp_path: Path) -> None:
    text = "The cat sleeps. naïve €5\r\n"
    code, out, _ = run("encode", "-t", str(tok_dir), text)
    assert code == 0
    ids = [int(v) for v in out.split()]
    code, out, _ = run("encode", "-t", str(tok_dir), text, "--json")
    assert code == 0 and json.loads(out) == ids
    code, out, _ = run("decode", "-t", str(tok_dir), *map(str, ids), "--no-newline")
    assert code == 0 and out == text

    # --file and stdin give the same IDs; bytes are kept exactly.
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    assert run("encode", "-t", str(tok_dir), "--file", str(path))[1].split() == list(map(str, ids))
    assert run("encode", "-t", str(tok_dir), input=text.encode("utf-8"))[1].split() == list(
        map(str, ids)
    )
    # decode reads what encode printed, in either form.
    assert run("decode", "-t", str(tok_dir), "-n", input=" ".join(map(str, ids)))[1] == text
    assert run("decode", "-t", str(tok_dir), "-n", input=json.dumps(ids))[1] == text
    code, _, err = run("decode", "-t", str(tok_dir), input="1 two 3")
    assert code == 2 and "token IDs" in err


def test_encode_invalid_utf8_file(tok_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok \xff")
    code, _, err = run("encode", "-t", str(tok_dir), "--file", str(path))
    assert code == 1 and "not valid UTF-8" in err


def test_special_tokens_are_text_unless_allowed(tok_dir: Path) -> None:
    specials = json.loads((tok_dir / FILENAME).read_text(encoding="utf-8"))["special_tokens"]
    ids_of = {t["content"]: t["id"] for t in specials}
    text = "hi <|eot|>"
    plain = [int(v) for v in run("encode", "-t", str(tok_dir), text)[1].split()]
    assert ids_of["<|eot|>"] not in plain
    allowed = [
        int(v)
        for v in run("encode", "-t", str(tok_dir), text, "--allowed-special", "<|eot|>")[1].split()
    ]
    assert allowed[-1] == ids_of["<|eot|>"]
    assert run("encode", "-t", str(tok_dir), text, "--allowed-special", "all")[1].split() == list(
        map(str, allowed)
    )
    with_bos = run("encode", "-t", str(tok_dir), "hi", "--add-special-tokens", "--json")[1]
    assert json.loads(with_bos)[0] == ids_of["<|bos|>"]


def test_inspect_text(tok_dir: Path) -> None:
    code, out, _ = run("inspect", "-t", str(tok_dir), "The cat €5")
    assert code == 0
    for label in ("text", "ids", "index", "hex", "piece", "decoded", "round trip", "bytes/token"):
        assert label in out
    assert "'The cat €5'" in out
    assert re.search(r"round trip +yes", out)
    assert re.search(r"special ids +bos=", out) and "stop ids" in out


def test_inspect_json(tok_dir: Path) -> None:
    code, out, _ = run(
        "inspect", "-t", str(tok_dir), "hi <|eot|>", "--allowed-special", "all", "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["text"] == "hi <|eot|>" and report["round_trip"] is True
    assert report["token_count"] == len(report["ids"]) == len(report["tokens"])
    last = report["tokens"][-1]
    assert last["special"] is True and last["piece"] == "<|eot|>"
    assert b"".join(bytes.fromhex(t["hex"]) for t in report["tokens"]) == b"hi <|eot|>"
    assert report["bytes_per_token"] == pytest.approx(10 / len(report["ids"]), abs=1e-3)
    assert report["stop_ids"] == [
        report["special_tokens"]["<|eos|>"],
        report["special_tokens"]["<|eot|>"],
    ]
    code, out, _ = run("inspect", "-t", str(tok_dir), "", "--json")
    assert code == 0 and json.loads(out)["bytes_per_token"] is None


def test_escape_piece() -> None:
    assert escape_piece(b" cat") == " cat"
    assert escape_piece("€".encode()[:2]) == "\\xe2\\x82"
    assert escape_piece(b"\n\t\\") == "\\n\\t\\\\"
    assert escape_piece("é".encode()) == "é"


# --------------------------------------------------------------------------- quickstart


def test_quickstart_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "qs"
    code, stdout, err = run(
        "quickstart", "--max-bytes", "300000", "--vocab-size", "512", "--output", str(out),
        "--threads", "2", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert "harvested" in stdout and "code-py" in stdout
    for label in (
        "vocab size",
        "merges",
        "stop reason",
        "corpus digest",
        "sha256-multiset:",
        "bytes/token all",
        "training time",
        "encode throughput",
        "total time",
    ):
        assert label in stdout
    assert re.search(r"round trip +ok", stdout)
    assert re.search(r"reload identical +ok", stdout)
    assert (out / FILENAME).is_file()
    artifact = json.loads((out / FILENAME).read_text(encoding="utf-8"))
    assert len(artifact["model"]["vocab"]) + len(artifact["special_tokens"]) <= 512
