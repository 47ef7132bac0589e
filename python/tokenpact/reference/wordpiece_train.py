"""WordPiece reference: training and longest-match encoding.

Training grows a vocabulary from characters. ``limit_alphabet`` keeps the most frequent
characters; the others are left out of their words (which still train, as in Hugging
Face's trainer). A word starts as its first character plus continuation pieces
(``##c``); each round merges the adjacent pair with the highest score among pairs seen
at least ``min_frequency`` times: the likelihood ratio ``f(ab) / (f(a) f(b))``
(weighted pair count over the product of the weighted symbol counts), the likelihood
gain, or the count (see ``_rank``). Ties go to the higher pair count, then to the
lexicographically smallest ``(a, b)``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction


def encode_word(
    word: str,
    vocab: Mapping[str, int],
    unk_id: int,
    prefix: str = "##",
    max_chars: int = 100,
) -> list[int]:
    """Longest match first; one ``unk_id`` for the whole word when any position fails."""
    if len(word) > max_chars:
        return [unk_id]
    out: list[int] = []
    start = 0
    while start < len(word):
        found = None
        for end in range(len(word), start, -1):
            surface = word[start:end] if start == 0 else prefix + word[start:end]
            if surface in vocab:
                found = (end, vocab[surface])
                break
        if found is None:
            return [unk_id]
        start, token = found
        out.append(token)
    return out


def join(left: str, right: str, prefix: str) -> str:
    return left + (right[len(prefix) :] if right.startswith(prefix) else right)


@dataclass(frozen=True)
class WordPieceTraining:
    vocab: list[str]
    merges: list[tuple[str, str]]
    stop_reason: str


def train_wordpiece_reference(
    words: Mapping[str, int],
    vocab_size: int,
    *,
    special_tokens: tuple[str, ...] = ("[UNK]",),
    prefix: str = "##",
    min_frequency: int = 2,
    limit_alphabet: int | None = None,
    scoring: str = "likelihood_ratio",
) -> WordPieceTraining:
    """Train on ``{word: count}``; ``vocab_size`` counts specials and the alphabet."""
    chars: Counter[str] = Counter()
    for word, freq in words.items():
        for c in word:
            chars[c] += freq
    alphabet = sorted(chars, key=lambda c: (-chars[c], c))
    if limit_alphabet is not None:
        alphabet = alphabet[:limit_alphabet]
    allowed = set(alphabet)
    # A character outside the kept alphabet is left out of its word (Hugging Face's
    # BpeTrainer); the rest of the word still trains, its neighbours now adjacent.
    units = []
    for w, f in sorted(words.items()):
        symbols = [c if i == 0 else prefix + c for i, c in enumerate(w) if c in allowed]
        if symbols:
            units.append((symbols, f))
    vocab = list(special_tokens)
    seen = set(vocab)
    for symbols, _ in units:
        seen.update(symbols)
    # Alphabet rows in a fixed order: unit symbols sorted, so the IDs do not depend on input order.
    vocab += sorted(seen - set(special_tokens))
    merges: list[tuple[str, str]] = []
    ln_total = math.log(max(1, sum(len(symbols) * f for symbols, f in units)))
    while True:
        if len(vocab) >= vocab_size:
            return WordPieceTraining(vocab, merges, "vocab_size_reached")
        symbol_counts: Counter[str] = Counter()
        pair_counts: Counter[tuple[str, str]] = Counter()
        for symbols, f in units:
            for s in symbols:
                symbol_counts[s] += f
            for pair in zip(symbols, symbols[1:], strict=False):
                pair_counts[pair] += f
        if not pair_counts:
            return WordPieceTraining(vocab, merges, "no_pairs_left")
        eligible = [p for p, c in pair_counts.items() if c >= min_frequency]
        if not eligible:
            return WordPieceTraining(vocab, merges, "below_min_frequency")

        best = min(
            eligible, key=lambda p: (_rank(p, pair_counts, symbol_counts, scoring, ln_total), p)
        )
        merged = join(best[0], best[1], prefix)
        merges.append(best)
        if merged not in seen:
            seen.add(merged)
            vocab.append(merged)
        units = [(_merge(symbols, best, merged), f) for symbols, f in units]


def _rank(
    pair: tuple[str, str],
    pairs: Counter[tuple[str, str]],
    symbols: Counter[str],
    scoring: str,
    ln_total: float,
) -> tuple[Fraction | float, int]:
    """Sort key: highest score first, then the higher pair count.

    ``likelihood_ratio``: f(ab) / (f(a) f(b)) as an exact fraction. ``likelihood_gain``:
    f(ab) ln(N f(ab) / (f(a) f(b))), N = the initial number of symbols, the log-likelihood
    a unigram model gains by the merge (to first order), in the engine's float operation
    order. ``count``: f(ab).
    """
    c, fa, fb = pairs[pair], symbols[pair[0]], symbols[pair[1]]
    if scoring == "count":
        return (-c, -c)
    if scoring == "likelihood_gain":
        return (-(c * (math.log(c) + ln_total - math.log(fa) - math.log(fb))), -c)
    return (-Fraction(c, fa * fb), -c)


def _merge(symbols: list[str], pair: tuple[str, str], merged: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out
