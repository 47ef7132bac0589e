"""Pre-token counts as a value: count on many workers, add, train once.

Byte-level BPE training reads the corpus once, to count pre-tokens; the merges depend
only on those counts. :func:`count_pretokens` counts one part of a corpus (in Rust, GIL
released); counts of disjoint parts add up (:meth:`PretokenCounts.merge`, commutative);
:func:`tokenpact.train.bpe.train_bpe_from_counts` trains from the sum. The corpus digest
is a multiset digest (sum of document SHA-256 values mod 2**256), so it adds up too.

>>> a = count_pretokens(["low lower"]); b = count_pretokens(["newest"])
>>> a.merge(b).documents
2
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..errors import ConfigError, InvalidInputError
from ..patterns import resolve_pattern

_MOD = 1 << 256


@dataclass(frozen=True, eq=False)
class PretokenCounts:
    """Distinct pre-tokens (sorted byte strings) with their counts, and corpus totals."""

    pattern: str
    pieces: tuple[bytes, ...]
    counts: NDArray[np.uint64]
    documents: int
    bytes: int
    digest: str

    def merge(self, other: PretokenCounts) -> PretokenCounts:
        """The counts of both corpora together (order does not matter)."""
        if resolve_pattern(self.pattern) != resolve_pattern(other.pattern):
            raise ConfigError("cannot add counts made with different pre-tokenizer patterns")
        totals: dict[bytes, int] = dict(zip(self.pieces, self.counts.tolist(), strict=True))
        for piece, count in zip(other.pieces, other.counts.tolist(), strict=True):
            totals[piece] = totals.get(piece, 0) + count
        pieces = tuple(sorted(totals))
        digest = (int(self.digest, 16) + int(other.digest, 16)) % _MOD
        return PretokenCounts(
            pattern=self.pattern,
            pieces=pieces,
            counts=np.fromiter((totals[p] for p in pieces), dtype=np.uint64, count=len(pieces)),
            documents=self.documents + other.documents,
            bytes=self.bytes + other.bytes,
            digest=f"{digest:064x}",
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PretokenCounts)
            and self.pieces == other.pieces
            and np.array_equal(self.counts, other.counts)
            and (self.documents, self.bytes, self.digest)
            == (other.documents, other.bytes, other.digest)
        )

    __hash__ = None  # type: ignore[assignment]


def count_pretokens(
    texts: Iterable[str], *, pattern: str = "gpt4", threads: int | None = None
) -> PretokenCounts:
    """Count the pre-tokens of ``texts`` (one document each) under ``pattern``."""
    if isinstance(texts, (str, bytes)):
        raise ConfigError("texts must be an iterable of strings, not a single string")
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise ConfigError(f"document {i} is {type(t).__name__}, not str")
    name, source = resolve_pattern(pattern)
    try:
        pieces, counts, documents, nbytes, digest = _native.count_pretokens(
            items, source, name, threads
        )
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"a training document contains a lone surrogate ({exc.object[exc.start]!r}); "
            "decode the source with errors='replace' or clean it"
        ) from None
    return PretokenCounts(
        pattern=pattern,
        pieces=tuple(pieces),
        counts=np.asarray(counts, dtype=np.uint64),
        documents=int(documents),
        bytes=int(nbytes),
        digest=str(digest),
    )
