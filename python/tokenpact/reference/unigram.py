"""Unigram language-model tokenizer reference.

Exact rational arithmetic (``fractions.Fraction``) so that the worked example
(``abab``, in the tests) is reproduced digit for digit and mathematical errors cannot hide behind
rounding. Only tests use this module; the Rust engine is the fast implementation.

>>> probs = {"a": Fraction(1, 4), "b": Fraction(1, 4), "ab": Fraction(7, 20)}
>>> marginal("abab", probs)
Fraction(1089, 6400)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

Edge = tuple[int, str, int]


def lattice_edges(text: str, probs: Mapping[str, Fraction]) -> list[Edge]:
    """Every ``(start, piece, end)`` with ``text[start:end] == piece`` and piece in vocab."""
    longest = max((len(p) for p in probs), default=0)
    edges: list[Edge] = []
    for start in range(len(text)):
        for end in range(start + 1, min(len(text), start + longest) + 1):
            if text[start:end] in probs:
                edges.append((start, text[start:end], end))
    return edges


def forward(text: str, probs: Mapping[str, Fraction]) -> list[Fraction]:
    """alpha[j]: total probability of all segmentations of ``text[:j]``."""
    alpha = [Fraction(0)] * (len(text) + 1)
    alpha[0] = Fraction(1)
    for start, piece, end in sorted(lattice_edges(text, probs), key=lambda e: e[2]):
        alpha[end] += alpha[start] * probs[piece]
    return alpha


def backward(text: str, probs: Mapping[str, Fraction]) -> list[Fraction]:
    """beta[i]: total probability of all segmentations of ``text[i:]``."""
    beta = [Fraction(0)] * (len(text) + 1)
    beta[len(text)] = Fraction(1)
    for start, piece, end in sorted(lattice_edges(text, probs), key=lambda e: -e[0]):
        beta[start] += probs[piece] * beta[end]
    return beta


def marginal(text: str, probs: Mapping[str, Fraction]) -> Fraction:
    """P(x): the sum over every segmentation (alpha[n] == beta[0])."""
    return forward(text, probs)[-1]


def edge_posteriors(text: str, probs: Mapping[str, Fraction]) -> dict[Edge, Fraction]:
    """gamma(i, z, j) = alpha[i] p(z) beta[j] / P(x) for every lattice edge."""
    alpha, beta = forward(text, probs), backward(text, probs)
    total = alpha[-1]
    if total == 0:
        return {}
    return {
        (i, z, j): alpha[i] * probs[z] * beta[j] / total for i, z, j in lattice_edges(text, probs)
    }


def expected_counts(
    corpus: Mapping[str, int], probs: Mapping[str, Fraction]
) -> dict[str, Fraction]:
    """c_hat(z) = sum_x c(x) sum_{edges of z in x} gamma (the E-step)."""
    counts = {piece: Fraction(0) for piece in probs}
    for text, freq in corpus.items():
        for (_, piece, _), gamma in edge_posteriors(text, probs).items():
            counts[piece] += freq * gamma
    return counts


def m_step(counts: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """The maximum-likelihood M-step: p_new(z) = c_hat(z) / sum_u c_hat(u)."""
    total = sum(counts.values(), Fraction(0))
    return {piece: count / total for piece, count in counts.items()}


def em_step(corpus: Mapping[str, int], probs: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """One EM iteration with the simple M-step."""
    return m_step(expected_counts(corpus, probs))


def log_likelihood(corpus: Mapping[str, int], probs: Mapping[str, Fraction]) -> float:
    """sum_x c(x) log P(x); -inf when some text has no segmentation."""
    total = 0.0
    for text, freq in corpus.items():
        p = marginal(text, probs)
        if p == 0:
            return -math.inf
        total += freq * math.log(p)
    return total


def segmentations(text: str, probs: Mapping[str, Fraction]) -> list[tuple[str, ...]]:
    """Every piece sequence that concatenates to ``text``, in lexicographic ID-path order."""
    if not text:
        return [()]
    out: list[tuple[str, ...]] = []
    for end in range(1, len(text) + 1):
        head = text[:end]
        if head in probs:
            out.extend((head, *rest) for rest in segmentations(text[end:], probs))
    return out


def path_probability(path: Iterable[str], probs: Mapping[str, Fraction]) -> Fraction:
    result = Fraction(1)
    for piece in path:
        result *= probs[piece]
    return result


def viterbi(text: str, probs: Mapping[str, Fraction]) -> tuple[str, ...]:
    """The most probable segmentation (ties: the lexicographically first path)."""
    paths = segmentations(text, probs)
    if not paths:
        raise ValueError(f"{text!r} has no segmentation under this vocabulary")
    return max(paths, key=lambda p: (path_probability(p, probs), [-len(z) for z in p]))


def nbest(text: str, probs: Mapping[str, Fraction], n: int) -> list[tuple[str, ...]]:
    """The ``n`` most probable segmentations, best first."""
    paths = segmentations(text, probs)
    return sorted(paths, key=lambda p: -path_probability(p, probs))[:n]


def tempered_distribution(
    text: str, probs: Mapping[str, Fraction], alpha: int = 1
) -> dict[tuple[str, ...], Fraction]:
    """q_alpha(z | x) = P(z)^alpha / sum_z' P(z')^alpha (integer alpha keeps it exact)."""
    weights = {p: path_probability(p, probs) ** alpha for p in segmentations(text, probs)}
    total = sum(weights.values(), Fraction(0))
    return {p: w / total for p, w in weights.items()}


def removal_loss(corpus: Mapping[str, int], probs: Mapping[str, Fraction], piece: str) -> float:
    """Exact increase of the negative log-likelihood when ``piece`` is removed.

    The remaining probabilities are not renormalized: this is the one-string
    calculation log(P_V(x) / P_{V without z}(x)), weighted by corpus counts.
    """
    rest = {z: p for z, p in probs.items() if z != piece}
    return log_likelihood(corpus, probs) - log_likelihood(corpus, rest)


@dataclass(frozen=True)
class PruneStep:
    removed: str
    loss: float
    losses: dict[str, float]


def prune_exact(
    corpus: Mapping[str, int],
    probs: Mapping[str, Fraction],
    required: Iterable[str],
    target_size: int,
) -> tuple[dict[str, Fraction], list[PruneStep]]:
    """Remove the exact minimum-loss piece until ``target_size`` pieces remain.

    Required pieces (character coverage) are never candidates. No EM between removals,
    so each step is the exact one-piece calculation.
    """
    keep = set(required)
    current = dict(probs)
    steps: list[PruneStep] = []
    while len(current) > target_size:
        losses = {z: removal_loss(corpus, current, z) for z in sorted(current) if z not in keep}
        if not losses:
            break
        piece = min(losses, key=lambda z: (losses[z], z))
        steps.append(PruneStep(piece, losses[piece], losses))
        del current[piece]
    return current, steps


def candidate_substrings(words: Mapping[str, int], max_piece_length: int) -> dict[str, int]:
    """Weighted occurrence counts of every substring up to ``max_piece_length`` characters."""
    counts: dict[str, int] = {}
    for word, freq in words.items():
        for i in range(len(word)):
            for j in range(i + 1, min(len(word), i + max_piece_length) + 1):
                counts[word[i:j]] = counts.get(word[i:j], 0) + freq
    return counts


def train_unigram_reference(
    words: Mapping[str, int],
    vocab_size: int,
    *,
    max_piece_length: int = 16,
    em_iterations: int = 2,
) -> dict[str, Fraction]:
    """A tiny exact trainer: seed all substrings, EM, then exact one-at-a-time pruning.

    Every character is required. Intended for corpora of a few short words.
    """
    seeds = candidate_substrings(words, max_piece_length)
    total = sum(seeds.values())
    probs = {z: Fraction(c, total) for z, c in seeds.items()}
    required = {z for z in probs if len(z) == 1}
    while True:
        for _ in range(em_iterations):
            # Exact EM denominators grow exponentially; rounding each probability to a
            # 1e-12 grid keeps the toy trainer tractable without changing its decisions.
            probs = {z: p.limit_denominator(10**12) for z, p in em_step(words, probs).items()}
        if len(probs) <= vocab_size:
            return probs
        probs, _ = prune_exact(words, probs, required, len(probs) - 1)
