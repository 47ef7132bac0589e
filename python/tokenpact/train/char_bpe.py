"""Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06, seed 003).

Example::

    tok = tp.train_char_bpe(["low low low lo lower newest widest"], num_merges=8)
    tok.training["merges"][:2]   # [["l", "o"], ["lo", "w"]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import _native
from ..errors import ConfigError, TrainingError
from ..special import SpecialToken
from ..tokenizer import Tokenizer
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


def build_char_bpe_tokenizer(
    tok: CharBpeTokenizer,
) -> Tokenizer:
    """The pipeline :class:`~tokenpact.Tokenizer` for a trained character BPE model,
    built from :func:`char_bpe_document` by the Hugging Face loader.

    Raises ArtifactError until the loader handles BPE with ``end_of_word_suffix`` and the
    ``BPEDecoder``; ``train_char_bpe`` returns the :class:`CharBpeTokenizer` until then.
    """
    from ..formats.hf_json import load_hf_data

    config = {"unk_token": tok.id_to_piece(tok.unk_id)} if tok.unk_id is not None else None
    full = load_hf_data(tok.hf_document(), label="<train_char_bpe>", config=config)
    full._training = tok.training
    return full


def char_bpe_document(
    pieces: Sequence[str],
    merges: Sequence[tuple[str, str]],
    specials: Sequence[SpecialToken],
    *,
    end_of_word: str,
    lowercase: bool,
) -> dict[str, Any]:
    """The ``tokenizer.json`` of a character BPE model.

    Lowercase normalizer (when ``lowercase``), WhitespaceSplit (the trainer's
    ``str.split()`` words), a ``BPE`` model over characters with ``end_of_word_suffix``
    set to the marker, the unknown token, and a ``BPEDecoder`` that turns the marker back
    into a space. Hugging Face glues the suffix to a word's last character, where the
    trainer keeps the marker a symbol of its own: see docs/TRAINERS.md for what that
    changes.
    """
    ids = {p: i for i, p in enumerate(pieces)}
    unk = next(t.content for t in specials if t.role == "unk")
    added = [
        {
            "id": ids[t.content],
            "content": t.content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t in sorted(specials, key=lambda t: ids[t.content])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Lowercase"} if lowercase else None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": {"type": "BPEDecoder", "suffix": end_of_word},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": end_of_word,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": ids,
            "merges": [[a, b] for a, b in merges],
        },
    }
