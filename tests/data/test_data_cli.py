"""The encode-dataset and data CLI commands, end to end on files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.data import Document, open_dataset


@pytest.fixture()
def corpus(tmp_path: Path, real_docs: list[Document]) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": d.doc_id, "text": d.text, "src": d.source} for d in real_docs[:80]]
    rows.append({"id": "dup", "text": real_docs[0].text + "  ", "src": "x"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_encode_dataset_command(tmp_path: Path, corpus: Path, real_docs: list[Document]) -> None:
    tok = tp.train_bpe([d.text for d in real_docs], vocab_size=400, special_tokens=())
    tok.save(tmp_path / "tok")
    args = ["encode-dataset", "-t", str(tmp_path / "tok"), str(corpus), "-o", str(tmp_path / "ds")]
    result = CliRunner().invoke(cli, [*args, "--shard-format", "megatron", "--source-field", "src"])
    assert result.exit_code == 0, result.output
    assert "81 records" in result.output
    ds = open_dataset(tmp_path / "ds", tokenizer=tok)
    assert len(ds) == 81
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and "already holds a dataset" in again.output


def test_dedup_and_split_commands(tmp_path: Path, corpus: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "kept.jsonl"
    result = runner.invoke(
        cli, ["data", "dedup", str(corpus), "-o", str(out), "--report", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert "dup" not in kept and len(kept) <= 80
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["exact_removed"] >= 1
    result = runner.invoke(
        cli,
        [
            "data",
            "split",
            str(out),
            "-o",
            str(tmp_path / "splits"),
            "--role",
            "fit=0.8",
            "--role",
            "test=0.2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "splits" / "fit.jsonl").exists()
    bad = runner.invoke(cli, ["data", "split", str(out), "-o", str(tmp_path), "--role", "fit=0.5"])
    assert bad.exit_code == 1 and "sum to 1" in bad.output


@pytest.mark.parametrize("command", ["dedup", "split"])
def test_non_utf8_input_is_named_as_such(tmp_path: Path, command: str) -> None:
    """Latin-1 bytes in an input file are an input problem, not an 'argument' problem."""
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\u00e9 cr\u00e8me\n".encode("latin-1"))
    extra = ["--role", "fit=1.0"] if command == "split" else []
    out = tmp_path / ("kept.jsonl" if command == "dedup" else "splits")
    result = CliRunner().invoke(cli, ["data", command, str(path), "-o", str(out), *extra])
    assert result.exit_code == 1, result.output
    assert "not UTF-8 text" in result.output and "argument" not in result.output
    assert "Traceback" not in result.output
