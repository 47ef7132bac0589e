"""Character BPE with an end-of-word marker (Sennrich et al.).

Words are whitespace-separated; each starts as its characters plus the marker symbol,
so no merge can cross a word. Pair counts are weighted by word frequency. Ties go to
the lexicographically smallest pair (``tie_break="smallest"``) or the largest
(``"largest"``, ``max((count, pair))``).
"""

from __future__ import annotations

import re
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


def encode(
    text: str,
    pieces: list[str],
    merges: list[tuple[str, str]],
    *,
    unk_id: int,
    eow: str = EOW,
    lowercase: bool = False,
) -> list[int]:
    """IDs of ``text``: each word (split at Unicode White_Space) through :func:`encode_word`;
    a symbol outside ``pieces`` (an unseen character) is ``unk_id``."""
    ids = {p: i for i, p in enumerate(pieces)}
    ranks: dict[tuple[str, str], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    out: list[int] = []
    # Unicode White_Space: Python's \s also matches the separators U+001C..U+001F.
    words = re.split(r"[^\S\x1c-\x1f]+", text.lower() if lowercase else text)
    for word in filter(None, words):
        out += [ids.get(s, unk_id) for s in encode_word_ranked(word, ranks, eow)]
    return out


def encode_word_ranked(
    word: str, ranks: Mapping[tuple[str, str], int], eow: str = EOW
) -> list[str]:
    """:func:`encode_word` in time independent of the number of merges: merge every
    occurrence of the lowest-ranked pair present until none is left (the same result: a
    pair containing a piece always ranks after the merge that created it)."""
    symbols = list(word) + [eow]
    while True:
        pairs = zip(symbols, symbols[1:], strict=False)
        best = min(((ranks[p], p) for p in pairs if p in ranks), default=None)
        if best is None:
            return symbols
        symbols = merge_pair(symbols, best[1])


def decode(ids: list[int], pieces: list[str], *, unk_id: int, eow: str = EOW) -> str:
    """Pieces concatenated (unknown IDs skipped), the marker read as a word end."""
    text = "".join(pieces[i] for i in ids if i != unk_id)
    return text.replace(eow, " ").rstrip(" ")
