"""Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06, seed 003).

Example::

    tok = tp.train_char_bpe(["low low low lo lower newest widest"], num_merges=8)
    tok.training["merges"][:2]   # [["l", "o"], ["lo", "w"]]
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import _native
from ..errors import ConfigError, TrainingError
from ..special import SpecialToken
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
) -> CharBpeTokenizer:
    """Train character BPE over whitespace-separated words; merges never cross a word.

    Give exactly one of ``num_merges`` or ``vocab_size`` (specials + alphabet + marker +
    merged pieces). Pair counts are weighted by word frequency; ties go to the
    lexicographically smallest pair (``tie_break="largest"``: the largest). Decoding
    returns the whitespace-normalized text (words joined by single spaces).
    """
    if (num_merges is None) == (vocab_size is None):
        raise ConfigError("give exactly one of num_merges or vocab_size")
    if tie_break not in TIE_BREAKS:
        raise ConfigError(f"unknown tie_break {tie_break!r}; use one of {TIE_BREAKS}")
    if not end_of_word:
        raise ConfigError("end_of_word must be a non-empty marker such as '</w>'")
    specials = specials_with_unk(special_tokens)
    check_int("min_frequency", min_frequency, 1)
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
        counter, end_of_word, num_merges, room, min_frequency, tie_break, threads
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
        },
        "seed": None,
        "corpus": corpus,
        "stop_reason": stop,
        "merges": [list(m) for m in merges],
        "merge_counts": list(counts),
    }
    return CharBpeTokenizer(
        pieces,
        merges,
        specials,
        end_of_word=end_of_word,
        lowercase=lowercase,
        training=training,
    )
