"""Issue 13 section 3: results that used to be silently wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.contract.semantics import max_id, required_rows
from tokenpact.errors import ArtifactError, ConfigError, InvalidInputError

from .hostile import added_token, byte_level_bpe, wordpiece, write_json

runner = CliRunner()


def test_vocab_size_and_max_id_count_added_tokens_beyond_the_model(tmp_path: Path) -> None:
    # Qwen3's shape: special tokens right after the model vocabulary, then non-special
    # added tokens (<think>) above them.
    tokenizers = pytest.importorskip("tokenizers")
    data = byte_level_bpe()
    size = len(data["model"]["vocab"])
    data["added_tokens"] = [
        added_token(size, "<|endoftext|>"),
        added_token(size + 1, "<think>", special=False),
        added_token(size + 2, "</think>", special=False),
    ]
    path = write_json(tmp_path / "tokenizer.json", data)
    tok = tp.Tokenizer.load(path)
    peer = tokenizers.Tokenizer.from_file(str(path))
    text = "<think>hello</think>"
    assert tok.encode(text, allowed_special="all") == peer.encode(text).ids
    assert tok.vocab_size == peer.get_vocab_size(with_added_tokens=True) == size + 3
    assert max_id(tok) == size + 2 and required_rows(tok) == size + 3
    assert tok.manifest["compatibility"]["required_rows"] == size + 3


def test_saving_another_kind_over_a_directory_removes_the_stale_files(tmp_path: Path) -> None:
    target = tmp_path / "art"
    native = tp.Tokenizer.from_merges([(104, 101)])
    native.save(target)
    assert (target / "tokenpact.json").exists()
    hf = tp.Tokenizer.load(write_json(tmp_path / "tokenizer.json", wordpiece()))
    hf.save(target)
    assert not (target / "tokenpact.json").exists()
    assert tp.Tokenizer.load(target).encode("unwanted") == hf.encode("unwanted")
    native.save(target)
    assert not (target / "tokenizer.json").exists()
    assert tp.Tokenizer.load(target).encode("hello") == native.encode("hello")


def test_convert_refuses_an_inexact_tiktoken_conversion(tmp_path: Path) -> None:
    source = write_json(tmp_path / "tokenizer.json", wordpiece())
    target = tmp_path / "out.tiktoken"
    result = runner.invoke(cli, ["convert", str(source), str(target), "--to", "tiktoken"])
    assert result.exit_code == 1
    assert "cannot convert to tiktoken exactly" in result.output
    assert not target.exists()
    with pytest.raises(ConfigError, match="WordPiece"):
        tp.Tokenizer.load(source).export_tiktoken(target)


def test_exact_tiktoken_conversion_still_works(tmp_path: Path) -> None:
    tok = tp.Tokenizer.from_merges([(104, 101), (108, 108)])
    tok.export_tiktoken(tmp_path / "x.tiktoken")
    back = tp.Tokenizer.from_tiktoken(tmp_path / "x.tiktoken", pattern="gpt4")
    assert back.encode("hello there") == tok.encode("hello there")


@pytest.mark.parametrize("texts", ["hello", b"hello"])
def test_encode_batch_of_one_string_is_a_typed_error(texts: object) -> None:
    tok = tp.Tokenizer.from_merges([(104, 101)])
    with pytest.raises(InvalidInputError, match=r"pass \[text\]"):
        tok.encode_batch(texts)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        tok.encode_batch_flat(texts)  # type: ignore[arg-type]


def test_unigram_training_record_with_minus_infinity_saves(tmp_path: Path) -> None:
    from tokenpact.corpus import builtin_corpus

    texts = [d.text for d in builtin_corpus(max_bytes=400_000)]
    tok = tp.train_unigram(texts, vocab_size=400)
    trace = [v for row in tok.training["em_trace"] for v in row]
    saved = tok.save(tmp_path / "uni")
    back = tp.Tokenizer.load(saved)
    assert back.encode("import os") == tok.encode("import os")
    if any(isinstance(v, float) and not math.isfinite(v) for v in trace):
        assert "-inf" in json.dumps(back.training["em_trace"])


def test_a_failed_save_leaves_no_empty_directory(tmp_path: Path) -> None:
    tok = tp.Tokenizer.from_merges([(104, 101)], training={"not json": object()})
    target = tmp_path / "new" / "dir"
    with pytest.raises(ArtifactError):
        tok.save(target)
    assert not target.exists()


def test_saving_over_a_file_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArtifactError, match="is a file"):
        tp.Tokenizer.from_merges([(104, 101)]).save(tmp_path / "file")


def test_saved_files_honour_the_umask(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        saved = tp.Tokenizer.from_merges([(104, 101)]).save(tmp_path / "art")
    finally:
        os.umask(old)
    for name in ("tokenpact.json", "manifest.json", "golden.json"):
        assert stat.S_IMODE((saved / name).stat().st_mode) == 0o644
