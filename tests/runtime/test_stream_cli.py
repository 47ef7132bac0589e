"""``tokenpact stream``: the demo shows committed/provisional IDs and the stop decision."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import tokenpact as tp
from tokenpact.chat import SEED_SPECIAL_TOKENS
from tokenpact.cli.main import cli


def output_vocab():
    # The seed's byte tokenizer (bytes are IDs, controls 256..265): savable as an artifact.
    return tp.Tokenizer.from_merges([(79, 75)], special_tokens=SEED_SPECIAL_TOKENS)


def test_stream_demo_json(tmp_path: Path) -> None:
    tok = output_vocab()
    path = tok.save(tmp_path / "tok")
    text = "OK € STOP!"
    result = CliRunner().invoke(
        cli, ["stream", "-t", str(path), text, "--chunk-bytes", "2", "--stop", "STOP", "--json"]
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["ids"] == tok.encode(text)
    committed = [i for row in record["inbound"] for i in row["committed"]]
    assert committed == record["ids"]
    assert (record["visible_text"], record["finish_reason"], record["matched_stop"]) == (
        "OK € ",
        "stop",
        "STOP",
    )


def test_stream_demo_table(tmp_path: Path) -> None:
    path = output_vocab().save(tmp_path / "tok")
    result = CliRunner().invoke(cli, ["stream", "-t", str(path), "abc", "--max-new-tokens", "2"])
    assert result.exit_code == 0, result.output
    assert "commit rule: pretokens" in result.output and "length" in result.output
