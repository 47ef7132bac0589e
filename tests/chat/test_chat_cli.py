"""``tokenpact chat render``: IDs, pieces, the origin view, JSON, truncation, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tokenpact.cli.chat_cmd import chat

from .chat_data import model_dir


@pytest.fixture(scope="module")
def conv_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chat") / "conv.json"
    messages = [{"role": "user", "content": "The cat sleeps."}]
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def run(*args: Any) -> Any:
    return CliRunner().invoke(chat, ["render", *map(str, args)], catch_exceptions=False)


def test_render_ids_of_deepseek(deepseek: Any, conv_file: Path) -> None:
    result = run("--tokenizer", model_dir("deepseek-v3"), "--messages", conv_file)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "0 128803 671 7539 114896 16 128804"
    assert "# prompt boundary  7" in result.output


def test_render_views(deepseek: Any, conv_file: Path) -> None:
    directory = model_dir("deepseek-v3")
    pieces = run("-t", directory, "--messages", conv_file, "--show", "pieces")
    assert pieces.exit_code == 0
    assert "128803  control" in pieces.output and "messages[0].content" in pieces.output
    origins = run("-t", directory, "--messages", conv_file, "--show", "origins", "--color")
    assert "\x1b[" in origins.output and "legend:" in origins.output
    data = json.loads(run("-t", directory, "--messages", conv_file, "--show", "json").output)
    assert data["input_ids"] == [0, 128803, 671, 7539, 114896, 16, 128804]
    assert data["origin"][2:6] == ["content"] * 4


def test_render_with_the_seed_grammar_and_limit(tmp_path: Path, tp: Any, seed_tok: Any) -> None:
    seed_tok.save(tmp_path / "tok")
    messages = [
        {"role": "system", "content": "s" * 10},
        {"role": "user", "content": "q" * 23},
        {"role": "assistant", "content": "b" * 21},
        {"role": "user", "content": "c" * 15},
        {"role": "assistant", "content": "d" * 19},
        {"role": "user", "content": "e" * 8},
    ]
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    args = ["-t", tmp_path / "tok", "--messages", path, "--grammar", "seed"]
    result = CliRunner().invoke(chat, ["render", *map(str, [*args, "--limit", "130"])])
    assert result.exit_code == 0, result.output
    assert "dropped messages [1, 2] (user, assistant): 67 tokens" in result.output
    assert "# tokens           109" in result.output


def test_errors_exit_1(tmp_path: Path, seed_tok: Any, conv_file: Path) -> None:
    seed_tok.save(tmp_path / "tok")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    for args in (
        ["-t", tmp_path / "tok", "--messages", bad, "--grammar", "seed"],
        ["-t", tmp_path / "tok", "--messages", conv_file],  # no chat template saved
        [
            "-t",
            tmp_path / "tok",
            "--messages",
            conv_file,
            "--grammar",
            "seed",
            "--mode",
            "training",
        ],
    ):
        result = CliRunner().invoke(chat, ["render", *map(str, args)])
        assert result.exit_code == 1, result.output
        assert "error:" in result.output
