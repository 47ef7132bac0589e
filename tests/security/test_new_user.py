"""Issue 13 section 5: what a new user hit. Familiar names with their peers' meanings,
clear messages."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.errors import UnknownTokenError

from .hostile import added_token, byte_level_bpe, wordpiece, write_json


@pytest.mark.parametrize("make", [byte_level_bpe, wordpiece])
def test_hf_names_match_tokenizers(tmp_path: Path, make) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    data = make()
    if make is byte_level_bpe:
        data["added_tokens"] = [added_token(259, "<|endoftext|>")]
    path = write_json(tmp_path / "tokenizer.json", data)
    tok = tp.Tokenizer.load(path)
    peer = tokenizers.Tokenizer.from_file(str(path))
    assert tok.get_vocab() == peer.get_vocab()
    for token, i in peer.get_vocab().items():
        assert tok.token_to_id(token) == i and tok.id_to_token(i) == token
    assert tok.token_to_id("not a token at all") is None
    assert tok.id_to_token(10**6) is None
    text = "hello [CLS] world <|endoftext|>"
    ids = tok.encode(text, allowed_special="all")
    assert ids == peer.encode(text, add_special_tokens=False).ids
    for skip in (True, False):
        assert tok.decode(ids, skip_special_tokens=skip) == peer.decode(
            ids, skip_special_tokens=skip
        )
    assert tok.decode_batch([ids, ids[:2]], skip_special_tokens=True) == peer.decode_batch(
        [ids, ids[:2]], skip_special_tokens=True
    )


def test_tiktoken_names() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    tok = tp.Tokenizer.from_merges([(104, 101)], special_tokens=["<|bos|>"])
    assert tok.n_vocab == tok.vocab_size == 258
    assert tiktoken  # n_vocab is tiktoken's Encoding.n_vocab: max token value + 1


def test_decoding_a_huge_number_names_it() -> None:
    tok = tp.Tokenizer.from_merges([(104, 101)])
    with pytest.raises(UnknownTokenError, match=r"^1180591620717411303424 is not a token ID"):
        tok.decode([1, 2**70])
    with pytest.raises(UnknownTokenError, match="not a string"):
        tok.decode("123")  # type: ignore[arg-type]


def test_quickstart_without_output_leaves_no_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(
        cli, ["quickstart", "--max-bytes", "200000", "--vocab-size", "400", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("harvesting")
    assert "pass --output DIR to keep it" in result.output
    assert list(tmp_path.iterdir()) == []


def test_empty_pattern_is_refused_before_training() -> None:
    from tokenpact.errors import ConfigError

    with pytest.raises(ConfigError, match="non-empty regex"):
        tp.train_bpe(["hello world"], vocab_size=300, pattern="")


def test_sentencepiece_structured_tokens_are_the_piece_texts(tmp_path: Path) -> None:
    # encode_structured of SentencePiece tokenizers builds piece texts from a per-ID cache
    # (a validated call per token made it run at about 1 MB/s).
    from tokenpact.corpus import builtin_corpus

    texts = [d.text for d in builtin_corpus(max_bytes=200_000)]
    tok = tp.Tokenizer.load(tp.train_unigram(texts, vocab_size=300).save(tmp_path / "sp"))
    assert tok.semantics == "sentencepiece"
    enc = tok.encode_structured("The cat sleeps. naïve 🙂")
    assert enc.tokens == [tok.token_bytes(i).decode("utf-8", "replace") for i in enc.ids]
