"""Stochastic segmentation with a replay contract.

Every random decision is a pure function of ``(seed, epoch, sample_id, view,
occurrence)`` through a counter-based generator (SplitMix64 finalizer chained over the
key fields), so worker count, prefetch depth and restarts never change the segmentation
a sample receives. The Rust side (``src/rng.rs``) computes the same bits, and BPE-dropout
runs in Rust (``src/bpe/dropout.rs``) with ``bpe_dropout_reference`` as its reference.

>>> key = SampleKey(seed=7, epoch=0, sample_id=3)
>>> 0.0 <= uniform(key.stream(), 0) < 1.0
True
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from ._text import _surrogate_error, _text_arg, _texts_arg, _threads_arg
from .errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from .core import Tokenizer

RNG_NAME = "splitmix64-counter/1"
# How a SampleKey becomes a stream (recorded in segmentation manifests); bump the version
# if stream_key or sample_number ever changes.
KEY_DERIVATION = (
    "stream = splitmix64 chain over (seed, epoch, sample_id, view); a string sample_id is "
    "the first 8 bytes (little-endian) of its UTF-8 SHA-256; draw k = "
    "splitmix64(stream ^ splitmix64(k)) >> 11 / 2**53/1"
)
_MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def stream_key(seed: int, epoch: int, sample: int, view: int) -> int:
    h = 0
    for field in (seed, epoch, sample, view):
        h = splitmix64(h ^ (field & _MASK))
    return h


def uniform(key: int, occurrence: int) -> float:
    """The ``occurrence``-th draw of a stream: 53 random bits in [0, 1)."""
    return (splitmix64(key ^ splitmix64(occurrence & _MASK)) >> 11) * (1.0 / (1 << 53))


def sample_number(sample_id: int | str) -> int:
    """Sample IDs may be strings (document keys); they map to 64 bits via SHA-256."""
    if isinstance(sample_id, int) and not isinstance(sample_id, bool):
        if sample_id < 0:
            raise ConfigError(f"sample_id must be >= 0, got {sample_id}")
        return sample_id & _MASK
    if isinstance(sample_id, str):
        return int.from_bytes(hashlib.sha256(sample_id.encode()).digest()[:8], "little")
    raise ConfigError(f"sample_id must be an int or str, got {sample_id!r}")


@dataclass(frozen=True)
class SampleKey:
    """Which draw a sample gets: recorded with the data so the draw can be replayed."""

    seed: int
    epoch: int = 0
    sample_id: int | str = 0
    view: int = 0

    def fields(self) -> tuple[int, int, int, int]:
        for name in ("seed", "epoch", "view"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be an int >= 0, got {value!r}")
        return (self.seed, self.epoch, sample_number(self.sample_id), self.view)

    def stream(self) -> int:
        return stream_key(*self.fields())


class DropoutDecision(NamedTuple):
    """One draw of BPE-dropout: the eligible occurrence (merge ``rank`` at symbol
    ``position``), its draw and whether the merge was applied (``draw >= p``)."""

    rank: int
    position: int
    draw: float
    merged: bool


def bpe_dropout_piece(
    symbols: Sequence[int],
    ranks: dict[tuple[int, int], tuple[int, int]],
    p: float,
    stream: int,
    first_occurrence: int = 0,
    trace: list[DropoutDecision] | None = None,
) -> tuple[list[int], int]:
    """BPE-dropout on one pre-token; returns (IDs, next unused occurrence).

    Policy (the replay contract): at each step the eligible occurrences (adjacent pairs
    with a rank) are ordered by (rank, position); each gets one draw in that order and is
    dropped when the draw is below ``p``; the first survivor is merged and the step
    repeats. When every eligible occurrence is dropped, the pre-token is final. So p=0
    is deterministic BPE (lowest rank, leftmost) and p=1 leaves the base symbols.
    ``trace`` (a list) receives every decision in draw order.
    """
    ids = list(symbols)
    occurrence = first_occurrence
    while True:
        eligible = sorted(
            (ranks[(ids[i], ids[i + 1])][0], i)
            for i in range(len(ids) - 1)
            if (ids[i], ids[i + 1]) in ranks
        )
        chosen = None
        for rank, i in eligible:
            u = uniform(stream, occurrence)
            occurrence += 1
            if trace is not None:
                trace.append(DropoutDecision(rank, i, u, u >= p))
            if u >= p:
                chosen = i
                break
        if chosen is None:
            return ids, occurrence
        ids[chosen : chosen + 2] = [ranks[(ids[chosen], ids[chosen + 1])][1]]


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"dropout probability p must be in [0, 1], got {p}")


def _merges(tokenizer: Tokenizer) -> list[tuple[int, int]]:
    merges: list[tuple[int, int]] = tokenizer.merges
    if not merges:
        raise ConfigError("BPE-dropout needs a merge table; this tokenizer has none")
    return merges


# One engine per tokenizer (merge table and pre-tokenizer built once); tokenizers are
# immutable, so an engine never goes stale, and it goes away with its tokenizer.
_ENGINES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _engine(tokenizer: Tokenizer) -> Any:
    engine = _ENGINES.get(tokenizer)
    if engine is None:
        from . import _native
        from .patterns import resolve_pattern

        name, source = resolve_pattern(tokenizer.pattern)
        engine = _native.BpeDropoutCore(_merges(tokenizer), source, name)
        _ENGINES[tokenizer] = engine
    return engine


def bpe_dropout(tokenizer: Tokenizer, text: str, *, p: float, key: SampleKey) -> list[int]:
    """Encode ``text`` with BPE-dropout under a trained byte-level BPE ``Tokenizer``.

    Pre-tokens are processed in text order and draws are numbered across the whole text,
    so the result depends only on (text, tokenizer, p, key). Runs in the Rust engine
    (``src/bpe/dropout.rs``); ``bpe_dropout_reference`` is the same contract in Python.
    """
    _check_p(p)
    text = _text_arg(text)
    stream = key.stream()
    try:
        ids: list[int] = _engine(tokenizer).encode(text, p, stream)
    except UnicodeEncodeError as exc:
        raise _surrogate_error(text, exc) from None
    return ids


def bpe_dropout_batch(
    tokenizer: Tokenizer,
    texts: Sequence[str],
    *,
    p: float,
    keys: Sequence[SampleKey],
    threads: int | None = None,
) -> list[list[int]]:
    """``bpe_dropout`` of each text with its own key, in parallel (GIL released).

    The result is the same for any ``threads``: each text's draws depend only on its key.
    """
    _check_p(p)
    texts = _texts_arg(texts, "bpe_dropout_batch")
    keys = list(keys)
    if len(texts) != len(keys):
        raise ConfigError(
            f"bpe_dropout_batch: {len(texts)} texts but {len(keys)} keys; pass one key per text"
        )
    streams = [k.stream() for k in keys]
    try:
        out: list[list[int]] = _engine(tokenizer).encode_batch(
            texts, p, streams, _threads_arg(threads)
        )
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"a text contains a lone surrogate: {exc}") from None
    return out


def bpe_dropout_reference(
    tokenizer: Tokenizer, text: str, *, p: float, key: SampleKey
) -> list[int]:
    """The Python reference of ``bpe_dropout`` (the replay contract, spelled out)."""
    _check_p(p)
    merges = _merges(tokenizer)
    ranks = {pair: (rank, 256 + rank) for rank, pair in enumerate(merges)}
    from . import pretokenize

    stream = key.stream()
    out: list[int] = []
    occurrence = 0
    for start, end in pretokenize(text, pattern=tokenizer.pattern):
        piece = list(text[start:end].encode("utf-8"))
        ids, occurrence = bpe_dropout_piece(piece, ranks, p, stream, occurrence)
        out.extend(ids)
    return out


# ----------------------------------------------------------------------------- lcg64_v1
LCG64_NAME = "lcg64_v1"
# Knuth's MMIX constants: state' = state * A + C (mod 2**64); a draw is the top 53 bits of
# the new state over 2**53.
LCG64_MULTIPLIER = 6364136223846793005
LCG64_INCREMENT = 1442695040888963407


class Lcg64:
    """The ``lcg64_v1`` generator: a 64-bit linear congruential sequence (Knuth's MMIX
    constants) started at ``seed``; :meth:`next_bits` steps it and returns the top 53
    bits. A small, fully specified generator for replayable worked examples (sequential:
    for training data use the counter-based :class:`SampleKey` streams, which need no
    state to resume)."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"seed must be an int >= 0, got {seed!r}")
        self.state = seed & _MASK

    def next_bits(self) -> int:
        """Step the state; its top 53 bits (a draw is ``bits / 2**53``)."""
        self.state = (self.state * LCG64_MULTIPLIER + LCG64_INCREMENT) & _MASK
        return self.state >> 11

    def uniform(self) -> float:
        """The next draw in [0, 1)."""
        return self.next_bits() * (1.0 / (1 << 53))

    def draws(self, n: int) -> Iterator[Fraction]:
        """The next ``n`` draws as exact fractions ``bits / 2**53``."""
        for _ in range(n):
            yield Fraction(self.next_bits(), 1 << 53)


RNGS = (LCG64_NAME, RNG_NAME)


def sample_enumerated(
    weights: Sequence[Fraction | int],
    *,
    draws: int,
    seed: int,
    rng: str = LCG64_NAME,
) -> list[int]:
    """Indices drawn from an explicitly enumerated distribution, by exact inverse CDF.

    ``weights`` are the unnormalized weights of candidates in a declared order (the
    lexicographic ID-path order of a Unigram lattice's segmentations, each ``P(z)**alpha``);
    draw ``u`` picks the first candidate whose cumulative share exceeds ``u``. ``rng`` is
    ``"lcg64_v1"`` (one sequential stream from ``seed``) or ``"splitmix64-counter/1"``
    (draw ``k`` of ``SampleKey(seed=seed)``'s stream). Exact arithmetic: the choice never
    depends on float rounding.
    """
    exact = [Fraction(w) for w in weights]
    if not exact or any(w < 0 for w in exact) or sum(exact) <= 0:
        raise ConfigError("weights must be non-negative with a positive sum")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 0:
        raise ConfigError(f"draws must be an int >= 0, got {draws!r}")
    if rng == LCG64_NAME:
        us = list(Lcg64(seed).draws(draws))
    elif rng == RNG_NAME:
        stream = SampleKey(seed=seed).stream()
        us = [Fraction(uniform(stream, k)) for k in range(draws)]
    else:
        raise ConfigError(f"unknown rng {rng!r}; use one of {', '.join(RNGS)}")
    total = sum(exact)
    cumulative = []
    acc = Fraction(0)
    for w in exact:
        acc += w / total
        cumulative.append(acc)
    out = []
    for u in us:
        out.append(next(i for i, c in enumerate(cumulative) if u < c))
    return out
