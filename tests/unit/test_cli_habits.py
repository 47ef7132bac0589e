"""The command line meets users where they are: every trainer behind ``--model``,
``serve`` with no arguments, and errors that suggest the file the user meant."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli import cli

TEXTS = [
    "The cat sleeps on the mat.",
    "A quick brown fox jumps over the lazy dog.",
    "def encode(text):\n    return [ord(c) for c in text]",
    "Tokenizers are versioned contracts between text and models.",
] * 40


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(t.replace("\n", " ") for t in TEXTS) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("model", "options", "trainer"),
    [
        ("bpe", ["--vocab-size", "300"], "train_bpe"),
        ("unigram", ["--vocab-size", "80", "--keep-extra-whitespaces"], "train_unigram"),
        ("wordpiece", ["--vocab-size", "120", "--lowercase"], "train_wordpiece"),
        ("char-bpe", ["--num-merges", "40"], "train_char_bpe"),
    ],
)
def test_train_each_model(
    corpus: Path, tmp_path: Path, model: str, options: list[str], trainer: str
) -> None:
    out = tmp_path / model
    code, output = run("train", str(corpus), "-o", str(out), "--model", model, *options)
    assert code == 0, output
    tok = tp.Tokenizer.load(out)
    # The same trainer called from Python with the same options gives the same tokenizer.
    kwargs: dict[str, object] = {
        "bpe": {
            "vocab_size": 300,
            "min_frequency": 2,
            "special_tokens": tp.DEFAULT_SPECIAL_TOKENS,
        },
        "unigram": {"vocab_size": 80, "remove_extra_whitespaces": False},
        "wordpiece": {"vocab_size": 120, "lowercase": True},
        "char-bpe": {"num_merges": 40},
    }[model]
    texts = list(tp.TextFiles([str(corpus)]))  # the documents the command reads
    direct = getattr(tp, trainer)(texts, **kwargs)
    sample = "The  quick cat encodes text."
    assert tok.encode(sample) == direct.encode(sample)
    assert tok.training is not None


def test_train_model_options_are_checked(corpus: Path, tmp_path: Path) -> None:
    code, output = run(
        "train", str(corpus), "-o", str(tmp_path / "x"), "--model", "unigram",
        "--vocab-size", "80", "--pattern", "gpt2",
    )  # fmt: skip
    assert code == 2 and "--pattern applies to --model bpe" in output
    code, output = run("train", str(corpus), "-o", str(tmp_path / "x"), "--model", "wordpiece")
    assert code == 2 and "--vocab-size" in output
    code, output = run(
        "train", str(corpus), "-o", str(tmp_path / "x"), "--model", "char-bpe",
        "--num-merges", "5", "--tie-break", "subword_nmt",
    )  # fmt: skip
    assert code == 2 and "smallest, largest" in output


def test_serve_without_arguments(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    pytest.importorskip("starlette")
    calls: list[dict[str, object]] = []
    # The command runs uvicorn.Server on a socket it bound itself: record instead of serving.
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, sockets=None: calls.append({"sockets": sockets})
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    code, output = run("serve")
    assert code == 2 and "Usage: tokenpact serve" in output and "--tokenizer" in output
    assert not calls
    # A directory holding tokenizers: each is served.
    tp.train_bpe(TEXTS, vocab_size=300).save(tmp_path / "mine")
    monkeypatch.chdir(tmp_path)
    code, output = run("serve", "--port", "0")
    assert code == 0 and "(mine)" in output and calls
    # A tokenizer directory itself.
    monkeypatch.chdir(tmp_path / "mine")
    code, output = run("serve", "--port", "0")
    assert code == 0 and "(mine)" in output


def test_errors_suggest_the_file_meant(tmp_path: Path) -> None:
    tok = tp.train_bpe(TEXTS, vocab_size=300)
    tok.save_pretrained(tmp_path / "model")
    code, output = run("encode", "-t", str(tmp_path / "model" / "tokenizer_config.json"), "hi")
    assert code == 1
    assert "did you mean" in output and str(tmp_path / "model" / "tokenizer.json") in output
    code, output = run("encode", "-t", str(tmp_path / "modle"), "hi")
    assert code == 1 and f"did you mean {tmp_path / 'model'}?" in output
    with pytest.raises(tp.ArtifactError, match="holds no vocabulary"):
        tp.Tokenizer.load(tmp_path / "model" / "tokenizer_config.json")


def test_audit_sweep_reaches_the_candidates() -> None:
    from tokenpact.cli.audit_cmd import _sizes, auto_sweep_sizes

    assert auto_sweep_sizes([8_000, 32_000, 100_000, 151_665]) == [8192, 16384, 32768, 65536]
    assert auto_sweep_sizes([32_000]) == [4096, 8192, 16384, 32768]
    assert auto_sweep_sizes([300, 420]) == [1024, 2048, 4096]  # small candidates
    assert _sizes("1000, 2000") == [1000, 2000] and _sizes("") == []
