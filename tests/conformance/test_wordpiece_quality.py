"""WordPiece training against Hugging Face's ``WordPieceTrainer``, per language (issue 12).

HF's WordPiece trainer is its BPE trainer with the ``##`` continuation prefix. Its
``limit_alphabet`` keeps the most frequent characters; another character is left out of
its word and the rest of the word still trains. Our trainer used to drop such words
whole, which starved scripts with large alphabets: in Japanese a "word" runs from
punctuation to punctuation, so most held a rare kanji, and Japanese needed 2.8% more
held-out tokens than HF (zh_CN 1.0%). One rule stays different: HF also adds a
word-initial piece for every kept character, also one only ever seen inside words; ours
holds the pieces the words show (docs/TRAINERS.md).

The per-language check trains both on the ``parallel-gettext`` mix
(tests/conformance/corpus_slices.py; skipped when the corpus is absent), vocab 8000,
``min_frequency=2``, ``limit_alphabet=1000``, and compares held-out tokens per byte.
"""

from __future__ import annotations

from typing import Any

import pytest

import tokenpact as tp

from .corpus_slices import multilingual_split, nbytes

tokenizers = pytest.importorskip("tokenizers")

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _hf_wordpiece(lines: list[str] | tuple[str, ...], **options: Any) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(special_tokens=SPECIALS, show_progress=False, **options)
    hf.train_from_iterator(lines, trainer)
    return hf


def test_a_rare_character_leaves_its_word_training_as_in_hf() -> None:
    # q is the rarest character, so limit_alphabet=4 leaves it out: "aqb" still teaches
    # a + ##b, which HF merges into "ab". Every count differs, so HF's tie order does not
    # matter, and every kept character starts some word (see the module docstring).
    lines = ["aqb"] * 5 + ["a", "b", "d"] + ["cd"] * 7
    options = {"vocab_size": 100, "min_frequency": 2, "limit_alphabet": 4}
    hf = _hf_wordpiece(lines, **options)
    ours = tp.train_wordpiece(lines, **options)  # default specials = SPECIALS
    assert {p.decode() for p in ours.vocab()} == set(hf.get_vocab())
    assert ours.training["dropped_word_occurrences"] == 5
    pieces = [p.decode() for p in ours.vocab()]
    for text in ["ab cd d", "aqb", "cdab"]:
        ours_pieces = [pieces[i] for i in ours.encode(text)]
        assert ours_pieces == hf.encode(text, add_special_tokens=False).tokens


@pytest.fixture(scope="module")
def trained() -> tuple[Any, Any, dict[str, tuple[str, ...]]]:
    train, held = multilingual_split()
    options = {"vocab_size": 8000, "min_frequency": 2, "limit_alphabet": 1000}
    ours = tp.train_wordpiece(train, **options)
    return ours, _hf_wordpiece(train, **options), held


def test_held_out_tokens_per_byte_per_language(
    trained: tuple[Any, Any, dict[str, tuple[str, ...]]],
) -> None:
    ours, hf, held = trained
    ratios = {}
    for lang, lines in held.items():
        size = nbytes(lines)
        mine = sum(map(len, ours.encode_batch(list(lines)))) / size
        peer = sum(len(e.ids) for e in hf.encode_batch(list(lines), add_special_tokens=False))
        ratios[lang] = mine / (peer / size)
    # At most 2% above HF in every language (below is fine); before the fix ja was 1.028.
    assert max(ratios.values()) <= 1.02, ratios
    # Not better by an implausible margin either: the two trainers follow the same rule.
    assert min(ratios.values()) >= 0.95, ratios
