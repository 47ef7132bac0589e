"""Pure-Python reference for continuing BPE training (the executable spec of extend_bpe).

Not on any hot path: ``extend_bpe`` runs the Rust trainer seeded with the old merges; the
property tests check both produce the same merges.

1. Count the pre-tokens of the corpus (their UTF-8 bytes).
2. Segment every pre-token with the old merges, in rank order (this *is* the old
   tokenizer's encoding of that pre-token).
3. Learn new merges exactly as fresh training would: the most frequent adjacent pair
   (weighted by pre-token count) wins, ties go to the smallest canonical pair; stop
   after ``add_merges`` merges, or when the best count is below ``min_frequency``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..core import Tokenizer
from .layout import canonical_layout, check_extensible


def count_pretokens(tok: Tokenizer, texts: Iterable[str]) -> Counter[bytes]:
    counts: Counter[bytes] = Counter()
    for text in texts:
        for start, end in tok.pretokenize(text):
            counts[text[start:end].encode("utf-8")] += 1
    return counts


def merge_word(word: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace non-overlapping occurrences of ``pair``, left to right."""
    out: list[int] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def segment(piece: bytes, ranks: dict[tuple[int, int], int]) -> list[int]:
    """The old segmentation of one pre-token: repeatedly merge the lowest-rank pair."""
    word = list(piece)
    while len(word) > 1:
        best = min(
            ((ranks[p], p) for p in zip(word, word[1:], strict=False) if p in ranks),
            default=None,
        )
        if best is None:
            break
        rank, pair = best
        word = merge_word(word, pair, 256 + rank)
    return word


def extend_merges_reference(
    tok: Tokenizer, texts: Iterable[str], *, add_merges: int, min_frequency: int = 2
) -> list[tuple[int, int]]:
    """New merges, as canonical ID pairs, that continue ``tok``'s training on ``texts``."""
    check_extensible(tok)
    layout = canonical_layout(tok)
    ranks = {pair: r for r, pair in enumerate(layout.merges)}
    words = [(segment(piece, ranks), count) for piece, count in count_pretokens(tok, texts).items()]
    next_id = 256 + len(layout.merges)
    new: list[tuple[int, int]] = []
    while len(new) < add_merges:
        pairs: Counter[tuple[int, int]] = Counter()
        for word, count in words:
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += count
        if not pairs:
            break
        # Highest count first, then the smallest pair: train_bpe's rule.
        pair, score = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if score < min_frequency:
            break
        words = [(merge_word(w, pair, next_id), c) for w, c in words]
        new.append(pair)
        next_id += 1
    return new
