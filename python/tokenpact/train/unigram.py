"""Unigram language-model training (seed 000, 0x08; Kudo 2018).

Example::

    tok = tp.train_unigram(texts, vocab_size=8000)
    tok.encode("New York"), tok.sample("New York", alpha=0.5, key=tp.SampleKey(seed=1))
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import _native
from ..errors import TrainingError
from ..special import SpecialToken
from ._words import (
    check_fraction,
    check_int,
    count_words,
    special_config,
    specials_with_unk,
)
from .trained import UnigramTokenizer

UNIGRAM_SPECIALS = (
    SpecialToken("<unk>", "unk"),
    SpecialToken("<s>", "bos"),
    SpecialToken("</s>", "eos"),
)
M_STEPS = ("digamma", "simple")


def train_unigram(
    texts: Iterable[str],
    *,
    vocab_size: int,
    special_tokens: Iterable[SpecialToken | str] = UNIGRAM_SPECIALS,
    byte_fallback: bool = False,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    seed_size: int = 1_000_000,
    shrinking_factor: float = 0.75,
    em_sub_iterations: int = 2,
    m_step: str = "digamma",
    threads: int | None = None,
) -> UnigramTokenizer:
    """Train a Unigram LM tokenizer; ``vocab_size`` counts specials and byte pieces.

    Text is split SentencePiece-style (spaces -> ``▁``, one ``▁`` prepended, a word per
    ``▁``). Seeds: the characters covering ``character_coverage`` of the corpus (always
    kept) plus the ``seed_size`` best substrings (count x length, up to
    ``max_piece_length`` characters, seen at least twice). EM uses exact forward-backward
    marginals; ``m_step="digamma"`` is SentencePiece's update (drops pieces expected
    under 0.5 times), ``"simple"`` the maximum-likelihood p = c / sum c. Each round runs
    ``em_sub_iterations`` EM steps, then keeps ``max(target, shrinking_factor x size)``
    pieces by estimated loss increase. IDs: specials first, then ``<0x00>..<0xFF>`` when
    ``byte_fallback``, then pieces by descending probability. The result depends on
    neither ``threads`` nor document order. The trainer draws no random numbers.
    """
    specials = specials_with_unk(special_tokens)
    check_int("vocab_size", vocab_size, 1)
    check_fraction("character_coverage", character_coverage, 0.0, 1.0)
    check_int("max_piece_length", max_piece_length, 1)
    check_int("seed_size", seed_size, 1)
    shrinking = check_fraction("shrinking_factor", shrinking_factor, 0.0, 1.0)
    check_int("em_sub_iterations", em_sub_iterations, 1)
    if m_step not in M_STEPS:
        from ..errors import ConfigError

        raise ConfigError(f"unknown m_step {m_step!r}; use one of {M_STEPS}")
    reserved = len(specials) + (256 if byte_fallback else 0)
    if vocab_size <= reserved:
        raise TrainingError(
            f"vocab_size={vocab_size} leaves no room for pieces after {len(specials)} special "
            f"tokens{' and 256 byte pieces' if byte_fallback else ''}; "
            f"use vocab_size > {reserved}"
        )
    counter, corpus = count_words(texts, split="metaspace", lowercase=False, threads=threads)
    learned, info = _native.train_unigram(
        counter,
        vocab_size - reserved,
        max_piece_length,
        seed_size,
        character_coverage,
        shrinking,
        em_sub_iterations,
        m_step,
        threads,
    )
    pieces = [t.content for t in specials]
    scores = [float("-inf")] * len(specials)
    if byte_fallback:
        pieces += [f"<0x{b:02X}>" for b in range(256)]
        scores += [float("-inf")] * 256
    taken = set(pieces)
    for piece, score in learned:
        if piece not in taken:
            pieces.append(piece)
            scores.append(score)
    training = {
        "algorithm": "unigram",
        "config": {
            "vocab_size": vocab_size,
            "special_tokens": special_config(specials),
            "byte_fallback": byte_fallback,
            "character_coverage": character_coverage,
            "max_piece_length": max_piece_length,
            "seed_size": seed_size,
            "shrinking_factor": shrinking,
            "em_sub_iterations": em_sub_iterations,
            "m_step": m_step,
            "split": "metaspace",
        },
        "seed": None,
        "corpus": corpus,
        "stop_reason": info["stop_reason"],
        "required_chars": info["required_chars"],
        "dropped_chars": info["dropped_chars"],
        "seed_pieces": info["seed_pieces"],
        "prune_rounds": info["rounds"],
        "em_trace": [list(x) for x in info["em_trace"]],
        "sampling_rng": _native.RNG_NAME,
    }
    return UnigramTokenizer(
        pieces, scores, specials, byte_fallback=byte_fallback, training=training
    )
