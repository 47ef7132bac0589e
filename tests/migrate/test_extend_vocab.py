"""WordPiece and Unigram extension: appended pieces get new IDs, old IDs stay put."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact import migrate
from tokenpact.errors import ConfigError

tokenizers = pytest.importorskip("tokenizers")
TEXTS = ["the unwanted running jumper", "wanted runs jump the"] * 10


def _wordpiece(path: Path) -> tp.Tokenizer:
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator(
        TEXTS, trainers.WordPieceTrainer(vocab_size=45, special_tokens=["[UNK]"])
    )
    hf.save(str(path))
    return tp.Tokenizer.from_hf(path)


def _unigram(path: Path) -> tp.Tokenizer:
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.Unigram())
    hf.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=40, special_tokens=["<unk>"], unk_token="<unk>")
    hf.train_from_iterator(TEXTS, trainer)
    hf.save(str(path))
    return tp.Tokenizer.from_hf(path)


def test_wordpiece_extension_keeps_old_ids(tmp_path: Path) -> None:
    old = _wordpiece(tmp_path / "wp.json")
    new = migrate.extend_vocab(old, ["unwanted", "##ning"])
    assert migrate.prefix_problems(old, new) == []
    assert new.token_id("unwanted") == old.vocab_size
    assert new.encode("unwanted") == [old.vocab_size]
    assert migrate.diff(old, new, TEXTS).transition == "append-only"
    with pytest.raises(ConfigError, match="already in the vocabulary"):
        migrate.extend_vocab(new, ["unwanted"])


def test_unigram_extension_appends_with_scores(tmp_path: Path) -> None:
    old = _unigram(tmp_path / "uni.json")
    new = migrate.extend_vocab(old, ["\u2581unwanted"], scores=[0.0])
    assert migrate.prefix_problems(old, new) == []
    assert new.encode("unwanted") == [old.vocab_size]  # score 0.0 beats any split
    low = migrate.extend_vocab(old, ["\u2581jumpe"])  # default: the lowest old score
    assert low.vocab_size == old.vocab_size + 1


def test_extend_vocab_refuses_bpe() -> None:
    tok = tp.train_bpe(TEXTS, vocab_size=270)
    with pytest.raises(ConfigError, match="extend_bpe"):
        migrate.extend_vocab(tok, ["abc"])
