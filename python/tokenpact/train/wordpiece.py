"""WordPiece training by the likelihood ratio f(ab) / (f(a) f(b)) (seed 000, 0x08).

Example::

    tok = tp.train_wordpiece(texts, vocab_size=8000, lowercase=True)
    tok.encode("unwanted running")
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import _native
from ..errors import ConfigError
from ..special import SpecialToken
from ._words import check_int, count_words, special_config, specials_with_unk
from .trained import WordPieceTokenizer

SCORINGS = ("count", "likelihood_gain", "likelihood_ratio")
WORDPIECE_SPECIALS = (
    SpecialToken("[PAD]", "pad"),
    SpecialToken("[UNK]", "unk"),
    SpecialToken("[CLS]", "bos"),
    SpecialToken("[SEP]", "eos"),
    SpecialToken("[MASK]", "reserved"),
)


def train_wordpiece(
    texts: Iterable[str],
    *,
    vocab_size: int,
    special_tokens: Iterable[SpecialToken | str] = WORDPIECE_SPECIALS,
    continuing_subword_prefix: str = "##",
    min_frequency: int = 2,
    limit_alphabet: int | None = 1000,
    lowercase: bool = False,
    max_input_chars_per_word: int = 100,
    scoring: str = "count",
    threads: int | None = None,
) -> WordPieceTokenizer:
    """Train a WordPiece vocabulary; ``vocab_size`` counts specials and the alphabet.

    Words come from the BERT basic split (whitespace, each punctuation character alone),
    lowercased when ``lowercase``. A word starts as its first character plus
    ``continuing_subword_prefix`` + character for the rest. Each step merges the
    best-scoring pair among pairs seen ``min_frequency`` times (ties: higher count, then
    the smallest pair of strings). ``limit_alphabet`` keeps the most frequent characters;
    words with other characters encode to the unknown token.

    ``scoring`` (see docs/TRAINERS.md for the measurements behind the default):

    * ``"count"`` (default): f(ab), what HF's ``WordPieceTrainer`` does (BPE with
      continuation prefixes); held-out tokens within about 2% of HF's.
    * ``"likelihood_gain"``: f(ab) ln(N f(ab) / (f(a) f(b))), the unigram log-likelihood
      gained by the merge (the original WordPiece criterion, to first order); compresses
      like ``"count"`` but trains several times slower.
    * ``"likelihood_ratio"``: the seed's f(ab) / (f(a) f(b)); it favours pairs of rare
      pieces and needs about twice as many tokens on held-out text.

    Stop reasons: ``vocab_size_reached``, ``below_min_frequency``, ``no_pairs_left``.
    """
    if scoring not in SCORINGS:
        raise ConfigError(f"unknown scoring {scoring!r}; use one of {SCORINGS}")
    specials = specials_with_unk(special_tokens)
    check_int("vocab_size", vocab_size, 1)
    check_int("min_frequency", min_frequency, 1)
    check_int("max_input_chars_per_word", max_input_chars_per_word, 1)
    if limit_alphabet is not None:
        check_int("limit_alphabet", limit_alphabet, 1)
    counter, corpus = count_words(texts, split="bert", lowercase=lowercase, threads=threads)
    vocab, info = _native.train_wordpiece(
        counter,
        vocab_size,
        [t.content for t in specials],
        continuing_subword_prefix,
        min_frequency,
        limit_alphabet,
        scoring,
        threads,
    )
    training = {
        "algorithm": "wordpiece",
        "config": {
            "vocab_size": vocab_size,
            "special_tokens": special_config(specials),
            "continuing_subword_prefix": continuing_subword_prefix,
            "min_frequency": min_frequency,
            "limit_alphabet": limit_alphabet,
            "lowercase": lowercase,
            "max_input_chars_per_word": max_input_chars_per_word,
            "scoring": scoring,
            "split": "bert",
        },
        "seed": None,
        "corpus": corpus,
        "stop_reason": info["stop_reason"],
        "alphabet_size": info["alphabet"],
        "merges_learned": info["merges"],
        "dropped_word_occurrences": info["dropped_word_occurrences"],
    }
    return WordPieceTokenizer(
        vocab,
        specials,
        prefix=continuing_subword_prefix,
        lowercase=lowercase,
        max_input_chars_per_word=max_input_chars_per_word,
        training=training,
    )
