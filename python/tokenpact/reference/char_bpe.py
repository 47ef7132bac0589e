"""Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06, seed 003).

Words are whitespace-separated; each starts as its characters plus the marker symbol,
so no merge can cross a word. Pair counts are weighted by word frequency. Ties go to
the lexicographically smallest pair (``tie_break="smallest"``, seed 003) or the largest
(``"largest"``, seed 004's ``max((count, pair))``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

EOW = "</w>"


def word_counts(texts: Iterable[str], lowercase: bool = False) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update((text.casefold() if lowercase else text).split())
    return counts


def merge_pair(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def pair_counts(words: Mapping[str, int], merges: list[tuple[str, str]], eow: str = EOW) -> Counter:
    """Weighted pair counts after applying ``merges`` to every word."""
    counts: Counter[tuple[str, str]] = Counter()
    for word, freq in words.items():
        symbols = list(word) + [eow]
        for pair in merges:
            symbols = merge_pair(symbols, pair)
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += freq
    return counts


def train_char_bpe_reference(
    words: Mapping[str, int],
    num_merges: int,
    *,
    eow: str = EOW,
    min_frequency: int = 1,
    tie_break: str = "smallest",
) -> tuple[list[tuple[str, str]], str]:
    """Return ``(merges, stop_reason)``."""
    units = [(list(w) + [eow], f) for w, f in sorted(words.items())]
    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges:
        counts: Counter[tuple[str, str]] = Counter()
        for symbols, f in units:
            for pair in zip(symbols, symbols[1:], strict=False):
                counts[pair] += f
        if not counts:
            return merges, "no_pairs_left"
        if tie_break == "smallest":
            best = min(counts, key=lambda p: (-counts[p], p))
        else:
            best = max(counts, key=lambda p: (counts[p], p))
        if counts[best] < min_frequency:
            return merges, "below_min_frequency"
        merges.append(best)
        units = [(merge_pair(symbols, best), f) for symbols, f in units]
    return merges, "vocab_size_reached"


def encode_word(word: str, merges: list[tuple[str, str]], eow: str = EOW) -> list[str]:
    """Apply the merges in rank order to one word (characters plus the marker)."""
    symbols = list(word) + [eow]
    for pair in merges:
        symbols = merge_pair(symbols, pair)
    return symbols
