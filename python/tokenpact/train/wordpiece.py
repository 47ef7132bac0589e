"""WordPiece training by the likelihood ratio f(ab) / (f(a) f(b)).

Example::

    tok = tp.train_wordpiece(texts, vocab_size=8000, lowercase=True)
    tok.encode("unwanted running")
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import _native
from ..components import AddedToken, Pipeline, Regex, decoders, models, normalizers, pre_tokenizers
from ..core import Tokenizer
from ..errors import ConfigError
from ..special import SpecialToken
from ._pipeline import trained_pipeline
from ._words import check_int, count_words, special_config, specials_with_unk

SCORINGS = ("count", "likelihood_gain", "likelihood_ratio")
# The trainer's BERT split (src/words.rs `is_bert_punct`) as a regex: ASCII punctuation,
# or any non-ASCII character that is not a letter, number or mark. Hugging Face's
# BertPreTokenizer uses the Unicode P classes instead, so it is not used here.
BERT_PUNCT = r"[!-/:-@\[-`{-~]|[^\x00-\x7F\p{L}\p{N}\p{M}]"
# tokenizer_config.json keys that give the special tokens their roles.
ROLE_KEYS = {"unk": "unk_token", "bos": "bos_token", "eos": "eos_token", "pad": "pad_token"}
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
) -> Tokenizer:
    """Train a WordPiece vocabulary; ``vocab_size`` counts specials and the alphabet.

    Words come from the BERT basic split (whitespace, each punctuation character alone),
    lowercased when ``lowercase``. A word starts as its first character plus
    ``continuing_subword_prefix`` + character for the rest. Each step merges the
    best-scoring pair among pairs seen ``min_frequency`` times (ties: higher count, then
    the smallest pair of strings). ``limit_alphabet`` keeps the most frequent characters;
    another character is left out of its word, whose other characters still train (as in
    HF's trainer), though the word itself encodes to the unknown token.

    ``scoring`` (see docs/TRAINERS.md for the measurements behind the default):

    * ``"count"`` (default): f(ab), what HF's ``WordPieceTrainer`` does (BPE with
      continuation prefixes); held-out tokens within about 2% of HF's.
    * ``"likelihood_gain"``: f(ab) ln(N f(ab) / (f(a) f(b))), the unigram log-likelihood
      gained by the merge (the original WordPiece criterion, to first order); compresses
      like ``"count"`` but trains several times slower.
    * ``"likelihood_ratio"``: the textbook f(ab) / (f(a) f(b)); it favours pairs of rare
      pieces and needs about twice as many tokens on held-out text.

    Stop reasons: ``vocab_size_reached``, ``below_min_frequency``, ``no_pairs_left``.

    The result is a Hugging Face pipeline ``Tokenizer`` whose spec is built from the
    components of :func:`wordpiece_pipeline`; ``save`` and ``export_hf`` write their
    ``tokenizer.json``.
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
        # Word occurrences with a character outside the alphabet: they encode to the
        # unknown token, though their other characters train. The key keeps its old name
        # because the training record is part of the release hash.
        "dropped_word_occurrences": info["unknown_char_word_occurrences"],
    }
    return build_wordpiece(
        vocab,
        specials,
        prefix=continuing_subword_prefix,
        lowercase=lowercase,
        max_input_chars_per_word=max_input_chars_per_word,
        training=training,
    )


def wordpiece_pipeline(
    vocab: Sequence[str],
    specials: Sequence[SpecialToken],
    *,
    prefix: str = "##",
    lowercase: bool = False,
    max_input_chars_per_word: int = 100,
) -> Pipeline:
    """The components of a WordPiece vocabulary, split the way the trainer splits.

    Lowercase normalizer (when ``lowercase``), whitespace split then every BERT
    punctuation character alone, the WordPiece model with its prefix, unknown token and
    word-length limit, the WordPiece decoder, and the specials as added tokens.
    """
    ids = {p: i for i, p in enumerate(vocab)}
    unk = next((t.content for t in specials if t.role == "unk"), None)
    if unk is None or unk not in ids:
        raise ConfigError("a WordPiece tokenizer needs a special token with role 'unk'")
    missing = [t.content for t in specials if t.content not in ids]
    if missing:
        raise ConfigError(f"special tokens {missing} are not in the WordPiece vocabulary")
    return Pipeline(
        model=models.WordPiece(
            unk_token=unk,
            continuing_subword_prefix=prefix,
            max_input_chars_per_word=max_input_chars_per_word,
            vocab=ids,
        ),
        normalizer=normalizers.Lowercase() if lowercase else None,
        pre_tokenizer=pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(BERT_PUNCT))]
        ),
        decoder=decoders.WordPiece(prefix=prefix, cleanup=True),
        added_tokens=tuple(
            AddedToken(t.content, ids[t.content], special=True, normalized=False)
            for t in sorted(specials, key=lambda t: ids[t.content])
        ),
    )


def wordpiece_document(
    vocab: Sequence[str],
    specials: Sequence[SpecialToken],
    *,
    prefix: str = "##",
    lowercase: bool = False,
    max_input_chars_per_word: int = 100,
) -> dict[str, Any]:
    """The ``tokenizer.json`` of :func:`wordpiece_pipeline`."""
    return wordpiece_pipeline(
        vocab,
        specials,
        prefix=prefix,
        lowercase=lowercase,
        max_input_chars_per_word=max_input_chars_per_word,
    ).to_config()


def build_wordpiece(
    vocab: Sequence[str],
    special_tokens: Iterable[SpecialToken],
    *,
    prefix: str = "##",
    lowercase: bool = False,
    max_input_chars_per_word: int = 100,
    training: dict[str, Any] | None = None,
) -> Tokenizer:
    """A pipeline Tokenizer for a WordPiece vocabulary (IDs = positions in ``vocab``).

    The spec holds the components of :func:`wordpiece_pipeline` as its stages (no file is
    parsed); ``save`` writes their ``tokenizer.json`` (roles in ``tokenizer_config.json``)
    and ``export_hf`` returns it.
    """
    specials = tuple(special_tokens)
    pipeline = wordpiece_pipeline(
        vocab,
        specials,
        prefix=prefix,
        lowercase=lowercase,
        max_input_chars_per_word=max_input_chars_per_word,
    )
    config = {ROLE_KEYS[t.role]: t.content for t in specials if t.role in ROLE_KEYS}
    spec, provenance = trained_pipeline(pipeline, config, label="<train_wordpiece>")
    return Tokenizer(spec, provenance=provenance.with_training(training))
