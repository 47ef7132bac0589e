"""``tokenpact convert`` writes each format and the results encode identically."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli.main import cli

TEXTS = ["The cat sleeps. The dog barks, 123 times!"] * 30
PROBE = "The cat barks 12345 times."


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_convert_round_trips_through_every_format(tmp_path: Path) -> None:
    tok = tp.train_bpe(TEXTS, vocab_size=300)
    tok.save(tmp_path / "art")
    want = tok.encode(PROBE)
    _run("convert", str(tmp_path / "art"), str(tmp_path / "t.json"), "--to", "hf")
    assert tp.Tokenizer.load(tmp_path / "t.json").encode(PROBE) == want
    _run("convert", str(tmp_path / "t.json"), str(tmp_path / "hf-art"), "--to", "native")
    assert tp.Tokenizer.load(tmp_path / "hf-art").encode(PROBE) == want
    _run("convert", str(tmp_path / "art"), str(tmp_path / "x.tiktoken"), "--to", "tiktoken")
    out = _run(
        "convert",
        str(tmp_path / "x.tiktoken"),
        str(tmp_path / "tt"),
        "--to",
        "native",
        "--pattern",
        "gpt4",
    )
    assert "semantic hash sha256:" in out
    assert (tmp_path / "tt" / "manifest.json").exists()


def test_convert_unigram_between_sentencepiece_hf_and_native(tmp_path: Path) -> None:
    uni = tp.train_unigram(TEXTS * 3, vocab_size=40)
    uni.save(tmp_path / "art")
    want = uni.encode(PROBE)
    _run("convert", str(tmp_path / "art"), str(tmp_path / "u.model"), "--to", "sentencepiece")
    assert tp.Tokenizer.load(tmp_path / "u.model").encode(PROBE) == want
    _run("convert", str(tmp_path / "u.model"), str(tmp_path / "u.json"), "--to", "hf")
    assert tp.Tokenizer.load(tmp_path / "u.json").encode(PROBE) == want
    _run("convert", str(tmp_path / "u.model"), str(tmp_path / "sp-art"), "--to", "native")
    assert tp.Tokenizer.load(tmp_path / "sp-art").encode(PROBE) == want


def test_convert_byte_level_bpe_to_sentencepiece_is_refused(tmp_path: Path) -> None:
    tp.train_bpe(TEXTS, vocab_size=300).save(tmp_path / "art")
    result = CliRunner().invoke(
        cli, ["convert", str(tmp_path / "art"), str(tmp_path / "x.model"), "--to", "sentencepiece"]
    )
    assert result.exit_code != 0
    assert "sentencepiece" in result.output.lower()


def test_convert_missing_source_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["convert", str(tmp_path / "nope"), str(tmp_path / "o"), "--to", "hf"]
    )
    assert result.exit_code == 1
    assert "does not exist" in result.output
