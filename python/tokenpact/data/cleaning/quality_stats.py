"""The text statistics behind the Gopher and C4 quality rules (pure functions, no state).

Definitions follow Rae et al. 2021 (MassiveText, appendix A.1.1) and Raffel et al. 2020
(C4, section 2.2): words are whitespace-separated tokens, lines split on ``\\n``,
paragraphs on blank lines. Each function returns a number the rule compares with its
threshold, so a report can show the statistic that made a document fail.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

BULLETS = ("•", "‣", "◦", "⁃", "∙", "·", "-", "*", "–", "—", "▪", "●", "○", "■", "□")
ELLIPSES = ("...", "…")
# C4 keeps lines ending in terminal punctuation; the CJK full stops are added so the
# rule, when enabled for such text, means the same thing there.
TERMINAL_PUNCTUATION = (".", "!", "?", '"', "。", "！", "？", "」", "』", "”", "’")
# C4 drops lines mentioning these (cookie banners, legal footers).
C4_POLICY_PHRASES = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"[.!?。！？]+(?=\s|$)")


def words(text: str) -> list[str]:
    return text.split()


def lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def paragraphs(text: str) -> list[str]:
    return [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def mean_word_length(ws: Sequence[str]) -> float:
    return sum(len(w) for w in ws) / len(ws) if ws else 0.0


def symbol_word_ratio(text: str, ws: Sequence[str]) -> float:
    """(hash symbols + ellipses) per word, Gopher's symbol-to-word ratio."""
    if not ws:
        return 0.0
    symbols = text.count("#") + text.count("...") + text.count("…")
    return symbols / len(ws)


def bullet_line_fraction(ls: Sequence[str]) -> float:
    if not ls:
        return 0.0
    return sum(1 for line in ls if line.lstrip().startswith(BULLETS)) / len(ls)


def ellipsis_line_fraction(ls: Sequence[str]) -> float:
    if not ls:
        return 0.0
    return sum(1 for line in ls if line.rstrip().endswith(ELLIPSES)) / len(ls)


def alpha_word_fraction(ws: Sequence[str]) -> float:
    """The share of words with at least one alphabetic character."""
    if not ws:
        return 0.0
    return sum(1 for w in ws if any(c.isalpha() for c in w)) / len(ws)


def stop_word_count(ws: Sequence[str], stop_words: frozenset[str]) -> int:
    return sum(1 for w in ws if w.lower().strip(".,;:!?\"'()") in stop_words)


def duplicate_counts(items: Sequence[str]) -> tuple[int, int]:
    """(items that repeat an earlier one, characters in those repeats)."""
    seen: set[str] = set()
    dup_items = dup_chars = 0
    for item in items:
        if item in seen:
            dup_items += 1
            dup_chars += len(item)
        else:
            seen.add(item)
    return dup_items, dup_chars


def duplicate_fractions(items: Sequence[str]) -> tuple[float, float]:
    """(share of items that repeat an earlier one, share of characters in those repeats)."""
    if not items:
        return 0.0, 0.0
    dup_items, dup_chars = duplicate_counts(items)
    total_chars = sum(len(i) for i in items)
    return dup_items / len(items), (dup_chars / total_chars if total_chars else 0.0)


def top_ngram_char_fraction(ws: Sequence[str], n: int) -> float:
    """Characters in the most frequent word ``n``-gram (all its occurrences) over the
    characters of all words; 0 when no ``n``-gram occurs twice."""
    total = sum(len(w) for w in ws)
    if len(ws) < n or not total:
        return 0.0
    counts = Counter(tuple(ws[i : i + n]) for i in range(len(ws) - n + 1))
    # Ties between equally frequent n-grams go to the one with the most characters.
    count, chars = max((c, sum(len(w) for w in gram)) for gram, c in counts.items())
    if count < 2:
        return 0.0
    return min(1.0, count * chars / total)


def duplicate_ngram_char_fraction(ws: Sequence[str], n: int) -> float:
    """Characters of words covered by any occurrence of a repeated ``n``-gram, each word
    counted once however many repeated ``n``-grams overlap it, over all word characters."""
    total = sum(len(w) for w in ws)
    if len(ws) < n or not total:
        return 0.0
    grams = [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]
    counts = Counter(grams)
    covered = [False] * len(ws)
    for i, gram in enumerate(grams):
        if counts[gram] > 1:
            for j in range(i, i + n):
                covered[j] = True
    return sum(len(w) for w, c in zip(ws, covered, strict=True) if c) / total


class NgramShares:
    """The two n-gram statistics for every ``n`` of one document, vectorized.

    Units (words, or characters of no-space text) become dense integer IDs; the n-grams
    of size ``n`` get dense IDs from the pair (ID of the ``n - 1``-gram, next unit) with
    one 1-D ``numpy.unique`` per size, so no n-gram is ever materialized. Same results
    as :func:`top_ngram_char_fraction` and :func:`duplicate_ngram_char_fraction` (the
    readable reference; tests/data/test_clean_properties.py checks they agree).
    """

    def __init__(self, units: Sequence[str]) -> None:
        index: dict[str, int] = {}
        ids = np.fromiter(
            (index.setdefault(u, len(index)) for u in units), dtype=np.int64, count=len(units)
        )
        self.lens = np.fromiter((len(u) for u in units), dtype=np.int64, count=len(units))
        self.total = int(self.lens.sum())
        self._unit_ids = ids
        self._vocab = max(1, len(index))
        self._levels: list[np.ndarray] = [ids]  # level k: dense IDs of the (k+1)-grams

    def _gram_ids(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(dense ID of each n-gram by start position, occurrences of each ID)."""
        while len(self._levels) < n:
            k = len(self._levels) + 1  # building k-grams from (k-1)-grams
            prev = self._levels[-1]
            # prev < len(prev) <= N and unit IDs < vocab <= N, so the key fits in int64.
            key = prev[:-1] * self._vocab + self._unit_ids[k - 1 :]
            _, inverse = np.unique(key, return_inverse=True)
            self._levels.append(inverse.reshape(-1).astype(np.int64))
        ids = self._levels[n - 1]
        return ids, np.bincount(ids)

    def top(self, n: int) -> float:
        if len(self.lens) < n or not self.total:
            return 0.0
        ids, counts = self._gram_ids(n)
        best = int(counts.max())
        if best < 2:
            return 0.0
        window_chars = np.convolve(self.lens, np.ones(n, dtype=np.int64), mode="valid")
        chars = int(window_chars[counts[ids] == best].max())
        return min(1.0, best * chars / self.total)

    def duplicate(self, n: int) -> float:
        if len(self.lens) < n or not self.total:
            return 0.0
        ids, counts = self._gram_ids(n)
        repeated = (counts[ids] > 1).astype(np.int64)
        # A unit is covered when any window starting at j - n + 1 .. j is repeated.
        covered = np.convolve(repeated, np.ones(n, dtype=np.int64))[: len(self.lens)] > 0
        return float(self.lens[covered].sum()) / self.total


def sentence_count(text: str) -> int:
    return len(_SENTENCE_END.findall(text))


def c4_filter_lines(
    text: str, *, min_words: int, javascript: bool, policy: bool, no_space: bool
) -> tuple[str, Counter[str]]:
    """C4's line filter: keep lines ending in terminal punctuation with at least
    ``min_words`` words (characters count for no-space text), optionally dropping lines
    that mention javascript or a cookie/terms policy. Returns the text and the counts of
    removed lines per rule."""
    kept: list[str] = []
    removed: Counter[str] = Counter()
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            kept.append(line)
            continue
        lowered = stripped.lower()
        if not stripped.endswith(TERMINAL_PUNCTUATION):
            removed["c4.line_terminal_punctuation"] += 1
        elif min_words and not no_space and len(stripped.split()) < min_words:
            removed["c4.line_min_words"] += 1
        elif javascript and "javascript" in lowered:
            removed["c4.line_javascript"] += 1
        elif policy and any(p in lowered for p in C4_POLICY_PHRASES):
            removed["c4.line_policy"] += 1
        else:
            kept.append(line)
    return "\n".join(kept).strip("\n"), removed
