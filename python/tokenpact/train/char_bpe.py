"""Character BPE with an end-of-word marker (Sennrich et al.).

Example::

    tok = tp.train_char_bpe(["low low low lo lower newest widest"], num_merges=8)
    tok.training["merges"][:2]   # [["l", "o"], ["lo", "w"]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import _native
from ..components import AddedToken, Pipeline, Regex, decoders, models, normalizers, pre_tokenizers
from ..core import TrainedSpellings
from ..errors import ConfigError, TrainingError
from ..special import SpecialToken
from ._pipeline import trained_pipeline
from ._words import check_int, count_words, special_config, specials_with_unk
from .trained import CharBpeTokenizer

CHAR_BPE_SPECIALS = (SpecialToken("<unk>", "unk"),)
TIE_BREAKS = ("smallest", "largest")


def train_char_bpe(
    texts: Iterable[str],
    *,
    num_merges: int | None = None,
    vocab_size: int | None = None,
    special_tokens: Iterable[SpecialToken | str] = CHAR_BPE_SPECIALS,
    end_of_word: str = "</w>",
    min_frequency: int = 1,
    lowercase: bool = False,
    tie_break: str = "smallest",
    threads: int | None = None,
    initial_alphabet: Iterable[str] = (),
    limit_alphabet: int | None = None,
) -> CharBpeTokenizer:
    """Train character BPE over whitespace-separated words; merges never cross a word.

    Give exactly one of ``num_merges`` or ``vocab_size`` (specials + alphabet + marker +
    merged pieces). Pair counts are weighted by word frequency; ties go to the
    lexicographically smallest pair (``tie_break="largest"``: the largest). Decoding
    returns the whitespace-normalized text (words joined by single spaces).

    ``initial_alphabet`` and ``limit_alphabet`` are Hugging Face ``BpeTrainer``'s: the
    characters of ``initial_alphabet`` (single characters) join the alphabet even when
    the corpus lacks them; ``limit_alphabet`` keeps only that many characters, initial
    ones first, then by word-weighted count (ties at the cut keep the smaller code
    point). A character outside the kept alphabet is dropped from its training word and
    encodes as the unknown token.

    The result is a full :class:`~tokenpact.Tokenizer` (a Hugging Face pipeline whose
    ``tokenizer.json`` spells the marker as the space ending each word, with the IDs of
    the merges applied in rank order); ``save`` and ``export_hf`` write that file.
    """
    if (num_merges is None) == (vocab_size is None):
        raise ConfigError("give exactly one of num_merges or vocab_size")
    if tie_break not in TIE_BREAKS:
        raise ConfigError(f"unknown tie_break {tie_break!r}; use one of {TIE_BREAKS}")
    if not end_of_word:
        raise ConfigError("end_of_word must be a non-empty marker such as '</w>'")
    specials = specials_with_unk(special_tokens)
    check_int("min_frequency", min_frequency, 1)
    initial = _initial_alphabet(initial_alphabet)
    if limit_alphabet is not None:
        check_int("limit_alphabet", limit_alphabet, 1)
    counter, corpus = count_words(texts, split="whitespace", lowercase=lowercase, threads=threads)
    room = None
    if num_merges is not None:
        check_int("num_merges", num_merges, 0)
    else:
        check_int("vocab_size", vocab_size, 1)
        assert vocab_size is not None
        room = vocab_size - len(specials)
        if room < 1:
            raise TrainingError(
                f"vocab_size={vocab_size} cannot hold the {len(specials)} special tokens and "
                "an alphabet; raise vocab_size"
            )
    alphabet, merges, counts, stop = _native.train_char_bpe(
        counter,
        end_of_word,
        num_merges,
        room,
        min_frequency,
        tie_break,
        threads,
        initial,
        limit_alphabet,
    )
    pieces = [t.content for t in specials] + list(alphabet)
    seen = set(pieces)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            pieces.append(a + b)
    training = {
        "algorithm": "char_bpe",
        "config": {
            "num_merges": num_merges,
            "vocab_size": vocab_size,
            "special_tokens": special_config(specials),
            "end_of_word": end_of_word,
            "min_frequency": min_frequency,
            "lowercase": lowercase,
            "tie_break": tie_break,
            "split": "whitespace",
            # Listed only when set, so the records of earlier trainings keep their bytes.
            **({"initial_alphabet": initial} if initial else {}),
            **({"limit_alphabet": limit_alphabet} if limit_alphabet is not None else {}),
        },
        "seed": None,
        "corpus": corpus,
        "stop_reason": stop,
        "merges": [list(m) for m in merges],
        "merge_counts": list(counts),
    }
    return build_char_bpe_tokenizer(
        pieces, merges, specials, end_of_word=end_of_word, lowercase=lowercase, training=training
    )


def _initial_alphabet(chars: Iterable[str]) -> list[str]:
    """The distinct characters of ``initial_alphabet``, sorted (each entry one character,
    as Hugging Face requires)."""
    if isinstance(chars, str):
        chars = list(chars)
    result: set[str] = set()
    for c in chars:
        if not isinstance(c, str) or len(c) != 1:
            raise ConfigError(f"initial_alphabet holds {c!r}; each entry must be one character")
        result.add(c)
    return sorted(result)


def build_char_bpe_tokenizer(
    pieces: Sequence[str],
    merges: Sequence[tuple[str, str]],
    specials: Sequence[SpecialToken],
    *,
    end_of_word: str = "</w>",
    lowercase: bool = False,
    training: dict[str, Any] | None = None,
) -> CharBpeTokenizer:
    """The tokenizer of a character BPE model (``pieces`` by ID, spelled as trained),
    its spec holding the components of :func:`char_bpe_pipeline` as its stages."""
    pipeline = char_bpe_pipeline(
        pieces, merges, specials, end_of_word=end_of_word, lowercase=lowercase
    )
    unk = next(t.content for t in specials if t.role == "unk")  # the pipeline checked it
    spec, provenance = trained_pipeline(pipeline, {"unk_token": unk}, label="<train_char_bpe>")
    spellings = TrainedSpellings(tuple(pieces), tuple(merges), end_of_word)
    return CharBpeTokenizer(
        spec, provenance=provenance.with_training(training).with_spellings(spellings)
    )


def char_bpe_pipeline(
    pieces: Sequence[str],
    merges: Sequence[tuple[str, str]],
    specials: Sequence[SpecialToken],
    *,
    end_of_word: str,
    lowercase: bool,
) -> Pipeline:
    """The components of a character BPE model, with identical IDs.

    The trainer's marker is a symbol of its own after each word's characters (merges
    like ``("low", "</w>")``, a lone ``</w>`` token); Hugging Face's
    ``end_of_word_suffix`` glues it to the last character instead, which changes the IDs.
    So the marker is written as a space that ends every word: the normalizer collapses
    whitespace runs to one space, strips both ends and appends a space after the last
    word; ``Split(" ", MergedWithPrevious)`` makes the words ``"low "``; the ``BPE``
    model's vocabulary and merges spell the marker as that space. The ``BPEDecoder``
    with suffix ``" "`` joins words with single spaces.
    """
    spelled = {t.content: t.content for t in specials}
    spelled.update({p: p for p in pieces if p not in spelled and len(p) == 1})
    spelled[end_of_word] = " "
    for a, b in merges:
        # The first merge that makes a string defines its piece, as in train_char_bpe.
        spelled.setdefault(a + b, spelled[a] + spelled[b])
    ids = {spelled[p]: i for i, p in enumerate(pieces)}
    if len(ids) != len(pieces):
        raise ConfigError(
            "two pieces spell the same string once the end-of-word marker is a space; "
            "use an end_of_word marker that does not occur in the training text"
        )
    unk = next((t.content for t in specials if t.role == "unk"), None)
    if unk is None:
        raise ConfigError("a character BPE tokenizer needs a special token with role 'unk'")
    whitespace: list[normalizers.Normalizer] = [
        normalizers.Replace(Regex(r"\s+"), " "),
        normalizers.Strip(strip_left=True, strip_right=True),
        normalizers.Replace(Regex(r"(?<=\S)\z"), " "),
    ]
    lower: list[normalizers.Normalizer] = [normalizers.Lowercase()] if lowercase else []
    return Pipeline(
        model=models.BPE(
            unk_token=unk,
            vocab=ids,
            merges=[(spelled[a], spelled[b]) for a, b in merges],
        ),
        normalizer=normalizers.Sequence(lower + whitespace),
        pre_tokenizer=pre_tokenizers.Split(" ", behavior="MergedWithPrevious"),
        decoder=decoders.BPEDecoder(suffix=" "),
        added_tokens=tuple(
            AddedToken(t.content, ids[t.content], special=True, normalized=False)
            for t in sorted(specials, key=lambda t: ids[t.content])
        ),
    )


def char_bpe_document(
    pieces: Sequence[str],
    merges: Sequence[tuple[str, str]],
    specials: Sequence[SpecialToken],
    *,
    end_of_word: str,
    lowercase: bool,
) -> dict[str, Any]:
    """The ``tokenizer.json`` of :func:`char_bpe_pipeline`."""
    pipeline = char_bpe_pipeline(
        pieces, merges, specials, end_of_word=end_of_word, lowercase=lowercase
    )
    return pipeline.to_config()
