"""Trainer options against Hugging Face's BpeTrainer where the algorithms coincide.

* ``train_bpe(normalizer=...)``: normalization runs before pre-tokenization in training
  and in the trained tokenizer. On a corpus without count ties the byte-level merges are
  those ``tokenizers`` learns with the same normalizer, Split regex and ByteLevel
  alphabet; the trained tokenizer encodes raw text as its normalized form.
* ``train_char_bpe(initial_alphabet=..., limit_alphabet=...)``: the kept alphabet is
  ``BpeTrainer``'s (initial characters always, then the most frequent ones).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.components import normalizers as N
from tokenpact.errors import ConfigError

tokenizers = pytest.importorskip("tokenizers")

WORDS = ["Über", "ÜBER", "ﬁne", "Fine", "hello", "HELLO", "world", "lower", "Lowest", "newest"]
# Distinct frequencies: no two candidate pairs tie, so tie-break rules cannot differ.
CORPUS = [w for i, w in enumerate(WORDS) for _ in range(3 + 5 * i)]
SPECIALS = ["<|bos|>", "<|eos|>", "<|pad|>", "<|unk|>", "<|eot|>"]
CHAR_CORPUS = ["low low low lower lowest newest widest wider zebra qi ñu"] * 3 + [
    "newer wide low"
] * 2


def _hf_byte_bpe_merges(corpus: list[str], vocab_size: int) -> list[list[str]]:
    from tokenizers import Regex, models, normalizers, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(tp.PATTERNS["gpt2"]), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    hf.train_from_iterator(corpus, trainer)
    return list(json.loads(hf.to_str())["model"]["merges"])


def _exported(tok: tp.Tokenizer, tmp_path: Path) -> dict[str, Any]:
    path = tok.export_hf(tmp_path / "tokenizer.json")
    return dict(json.loads(Path(path).read_text(encoding="utf-8")))


def test_byte_bpe_with_a_normalizer_learns_huggingface_merges(tmp_path: Path) -> None:
    normalizer = N.Sequence([N.NFKC(), N.Lowercase()])
    tok = tp.train_bpe(CORPUS, vocab_size=280, pattern="gpt2", normalizer=normalizer)
    exported = _exported(tok, tmp_path)
    assert exported["normalizer"] == normalizer.to_config()
    merges = exported["model"]["merges"]
    assert len(merges) == 280 - 256 - len(SPECIALS)
    assert merges == _hf_byte_bpe_merges(CORPUS, 280)
    # The exported file encodes as the trained tokenizer does.
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ["ÜBER ﬁne", "Hello WORLD, lowest!", "ﬁﬁ newest"]:
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text)


def test_the_normalizer_runs_in_training_and_in_encode(tmp_path: Path) -> None:
    normalizer = N.Sequence([N.NFKC(), N.Lowercase()])
    tok = tp.train_bpe(CORPUS, vocab_size=280, normalizer=normalizer)
    # Training on raw text with the normalizer = training on normalized text without it.
    plain = tp.train_bpe([tok.normalize(t) for t in CORPUS], vocab_size=280)
    pieces = tok.vocab()
    assert [(pieces[a], pieces[b]) for a, b in tok.merges] == [
        (plain.vocab()[a], plain.vocab()[b]) for a, b in plain.merges
    ]
    assert tok.encode("ÜBER ﬁne") == plain.encode("über fine")
    assert tok.decode(tok.encode("ÜBER ﬁne")) == "über fine"
    assert tok.training["config"]["normalizer"] == normalizer.to_config()
    assert "normalizer" not in plain.training["config"]
    # Save and load keep the normalizer, the IDs and the special roles.
    back = tp.Tokenizer.load(tok.save(tmp_path / "art"))
    assert back.encode("ÜBER ﬁne") == tok.encode("ÜBER ﬁne")
    assert back.special_token_roles == tok.special_token_roles
    assert back.semantic_hash == tok.semantic_hash
    with pytest.raises(ConfigError, match="normalizers node"):
        tp.train_bpe(CORPUS, vocab_size=280, normalizer="NFKC")  # type: ignore[arg-type]


# Limits whose cut falls between two different counts: tokenizers orders tied counts
# arbitrarily (an unstable sort over a hash map), so a cut inside a tie is not comparable.
@pytest.mark.parametrize(
    ("initial", "limit"),
    [((), None), ((), 8), (("x", "y", "é"), None), (("x", "y", "é"), 9)],
)
def test_char_bpe_alphabet_is_huggingface_bpetrainers(
    initial: tuple[str, ...], limit: int | None
) -> None:
    from tokenizers import models, pre_tokenizers, trainers

    tok = tp.train_char_bpe(
        CHAR_CORPUS, num_merges=0, initial_alphabet=initial, limit_alphabet=limit
    )
    hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    extra = {} if limit is None else {"limit_alphabet": limit}
    trainer = trainers.BpeTrainer(
        vocab_size=1,
        special_tokens=["<unk>"],
        initial_alphabet=list(initial),
        show_progress=False,
        **extra,
    )
    hf.train_from_iterator(CHAR_CORPUS, trainer)
    expected = sorted(p for p in hf.get_vocab() if len(p) == 1)
    assert sorted(p for p in tok.char_pieces if len(p) == 1) == expected


def test_char_bpe_limit_alphabet_drops_rare_characters() -> None:
    tok = tp.train_char_bpe(CHAR_CORPUS, num_merges=5, limit_alphabet=8)
    kept = {p for p in tok.char_pieces if len(p) == 1}
    assert kept == set("eilorstw")
    assert tok.training["config"]["limit_alphabet"] == 8
    unk = tok.unk_id
    ids = tok.encode("zebra")
    assert ids.count(unk) == 3  # z, b, a are outside the alphabet
    # initial_alphabet wins over counts: 'q' and 'x' survive a limit of 3 beside the
    # most frequent character ('w', 30 occurrences).
    small = tp.train_char_bpe(CHAR_CORPUS, num_merges=0, initial_alphabet="qx", limit_alphabet=3)
    assert {p for p in small.char_pieces if len(p) == 1} == {"q", "x", "w"}
    with pytest.raises(ConfigError, match="one character"):
        tp.train_char_bpe(CHAR_CORPUS, num_merges=0, initial_alphabet=["ab"])
    with pytest.raises(ConfigError, match="limit_alphabet"):
        tp.train_char_bpe(CHAR_CORPUS, num_merges=0, limit_alphabet=0)


def test_cli_trainer_options(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS + CHAR_CORPUS) + "\n", encoding="utf-8")
    runner = CliRunner()
    args = ["train", str(corpus), "-o", str(tmp_path / "bpe"), "--vocab-size", "280"]
    result = runner.invoke(cli, [*args, "--normalizer", "nfkc-lowercase"])
    assert result.exit_code == 0, result.output
    tok = tp.Tokenizer.load(tmp_path / "bpe")
    assert tok.encode("ÜBER ﬁne") == tok.encode("über fine")
    args = ["train", str(corpus), "-o", str(tmp_path / "cb"), "--model", "char-bpe"]
    args += ["--num-merges", "3", "--limit-alphabet", "6", "--initial-alphabet", "qx"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    config = tp.Tokenizer.load(tmp_path / "cb").training["config"]
    assert config["limit_alphabet"] == 6 and config["initial_alphabet"] == ["q", "x"]
    bad = ["train", str(corpus), "-o", str(tmp_path / "u"), "--model", "unigram"]
    result = runner.invoke(cli, [*bad, "--vocab-size", "300", "--normalizer", "nfc"])
    assert result.exit_code != 0 and "--normalizer applies to --model bpe" in result.output
