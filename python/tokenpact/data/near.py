"""Near-duplicate detection: MinHash + LSH banding, Jaccard verification, union-find.

Bands and rows are chosen from the Jaccard threshold the way ``datasketch.MinHashLSH``
does (minimise the equal-weighted false-positive plus false-negative probability mass).
Every candidate pair is verified by the true Jaccard similarity of its shingle sets, so
LSH can only miss a pair, never invent one. Clusters are connected components; each keeps
its smallest ``doc_id``. :func:`brute_force_clusters` is the all-pairs reference.

>>> docs = [Document("a", "The cat sleeps on the mat today"),
...         Document("b", "The cat sleeps on the mat today!")]
>>> near_dedup(docs, threshold=0.5, params=MinHashParams(n=2)).duplicate_of
{'b': 'a'}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _native
from ..errors import ConfigError
from .documents import Document, sort_by_id
from .minhash import MinHashParams, jaccard, minhash_signatures, shingles

_MIN_NODES = 96  # Gauss-Legendre with n nodes is exact for polynomials of degree <= 2n - 1
MAX_NUM_PERM = 8192  # the tuning's node count and candidate table grow with num_perm


@cache
def _nodes(count: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    nodes, weights = np.polynomial.legendre.leggauss(count)
    return nodes, weights


def _integrals(
    threshold: float, b: NDArray[np.float64], r: NDArray[np.float64], num_perm: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    # The integrands have degree b * r <= num_perm: num_perm // 2 + 1 nodes integrate them
    # exactly, so any num_perm is tuned exactly (not only those up to 191).
    nodes, weights = _nodes(max(_MIN_NODES, num_perm // 2 + 1))

    def integrate(lo: float, hi: float, false_positive: bool) -> NDArray[np.float64]:
        s = (nodes * (hi - lo) + (hi + lo)) / 2.0
        p = 1.0 - (1.0 - s[None, :] ** r[:, None]) ** b[:, None]
        values = p if false_positive else 1.0 - p
        out: NDArray[np.float64] = values @ weights * (hi - lo) / 2.0
        return out

    return integrate(0.0, threshold, True), integrate(threshold, 1.0, False)


@cache
def optimal_bands(
    threshold: float, num_perm: int, false_positive_weight: float = 0.5
) -> tuple[int, int]:
    """``(bands, rows)`` minimising the weighted error, as ``datasketch._optimal_param``.

    The integrands are polynomials of degree ``b * r <= num_perm``, integrated exactly by
    Gauss-Legendre quadrature; candidates are scanned in datasketch's order (``b`` then
    ``r``, first minimum wins).
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"threshold must be in [0, 1], got {threshold}")
    if num_perm < 1 or num_perm > MAX_NUM_PERM:
        raise ConfigError(f"num_perm must be in 1..{MAX_NUM_PERM} for LSH tuning")
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    arr = np.asarray(pairs, dtype=np.float64)
    fp, fn = _integrals(threshold, arr[:, 0], arr[:, 1], num_perm)
    error = fp * false_positive_weight + fn * (1.0 - false_positive_weight)
    best = int(np.argmin(error))  # argmin returns the first minimum: datasketch's order
    return pairs[best]


@dataclass(frozen=True)
class NearCluster:
    """One near-duplicate cluster: the kept ``doc_id`` and the removed ones."""

    kept: str
    removed: tuple[str, ...]

    @property
    def size(self) -> int:
        return 1 + len(self.removed)


@dataclass(frozen=True)
class NearDedupResult:
    kept: list[Document]
    removed: list[Document]
    duplicate_of: dict[str, str]
    clusters: list[NearCluster]
    threshold: float
    params: MinHashParams
    bands: int
    rows: int
    stats: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "minhash": self.params.to_json(),
            "bands": self.bands,
            "rows": self.rows,
            "stats": dict(self.stats),
        }


def _clusters(ordered: Sequence[Document], roots: Sequence[int]) -> list[NearCluster]:
    members: dict[int, list[str]] = {}
    for i, root in enumerate(roots):
        if root != i:
            members.setdefault(int(root), []).append(ordered[i].doc_id)
    return [NearCluster(ordered[r].doc_id, tuple(m)) for r, m in sorted(members.items())]


def _result(
    ordered: list[Document],
    roots: Sequence[int],
    threshold: float,
    params: MinHashParams,
    bands: int,
    rows: int,
    stats: dict[str, int],
) -> NearDedupResult:
    kept = [d for i, d in enumerate(ordered) if roots[i] == i]
    removed = [d for i, d in enumerate(ordered) if roots[i] != i]
    duplicate_of = {
        d.doc_id: ordered[int(roots[i])].doc_id for i, d in enumerate(ordered) if roots[i] != i
    }
    return NearDedupResult(
        kept=kept,
        removed=removed,
        duplicate_of=duplicate_of,
        clusters=_clusters(ordered, roots),
        threshold=threshold,
        params=params,
        bands=bands,
        rows=rows,
        stats=stats,
    )


def lsh_shape(
    threshold: float, params: MinHashParams, bands: int | None, rows: int | None
) -> tuple[int, int]:
    """The banding to use: explicit ``bands``/``rows`` or datasketch's optimum."""
    if (bands is None) != (rows is None):
        raise ConfigError("pass both bands= and rows=, or neither (chosen from the threshold)")
    if bands is None or rows is None:
        return optimal_bands(threshold, params.num_perm)
    if bands < 1 or rows < 1 or bands * rows > params.num_perm:
        raise ConfigError(
            f"bands * rows must be <= num_perm={params.num_perm}, got {bands} x {rows}"
        )
    return bands, rows


def cluster_from_band_keys(
    ordered: list[Document],
    keys: NDArray[np.uint64],
    *,
    threshold: float,
    params: MinHashParams,
    bands: int,
    rows: int,
    threads: int | None = None,
) -> NearDedupResult:
    """Candidate groups from band keys, verified by true Jaccard, as clusters."""
    members, offsets = _native.lsh_candidate_groups(np.ascontiguousarray(keys), threads)
    involved = np.unique(members)
    local = np.searchsorted(involved, members).astype(np.uint32)
    texts = [ordered[int(i)].text for i in involved]
    local_roots, checked, similar = _native.lsh_verify_groups(
        texts, local, offsets, params.shingle, params.n, threshold, threads
    )
    roots = np.arange(len(ordered), dtype=np.int64)
    roots[involved] = involved[local_roots]
    stats = {
        "documents": len(ordered),
        "candidate_groups": int(offsets.shape[0] - 1),
        "pairs_checked": int(checked),
        "pairs_similar": int(similar),
    }
    return _result(ordered, roots.tolist(), threshold, params, bands, rows, stats)


SIGNATURE_CHUNK = 65_536


def local_band_keys(
    texts: Sequence[str],
    params: MinHashParams,
    bands: int,
    rows: int,
    *,
    threads: int | None = None,
    progress: bool = False,
) -> NDArray[np.uint64]:
    """Band keys ``[len(texts), bands]``, signatures computed a chunk at a time.

    Only the keys are kept (``bands`` words per document instead of ``num_perm``), which
    bounds memory on large corpora.
    """
    keys = np.zeros((len(texts), bands), dtype=np.uint64)
    starts: Any = range(0, len(texts), SIGNATURE_CHUNK)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="MinHash", unit="chunk", leave=False)
    for start in starts:
        sigs = minhash_signatures(texts[start : start + SIGNATURE_CHUNK], params, threads=threads)
        keys[start : start + sigs.shape[0]] = _native.lsh_band_keys(sigs, bands, rows, threads)
    return keys


def near_dedup(
    documents: Iterable[Document],
    *,
    threshold: float = 0.8,
    params: MinHashParams | None = None,
    bands: int | None = None,
    rows: int | None = None,
    engine: str = "local",
    threads: int | None = None,
    ray_options: dict[str, Any] | None = None,
    progress: bool = False,
) -> NearDedupResult:
    """Remove near duplicates (Jaccard >= ``threshold``); each cluster keeps its min ``doc_id``.

    ``engine="ray"`` computes signatures and band keys on a Ray cluster (see
    :mod:`tokenpact.data.ray_engine`); the result is identical to the local engine.
    """
    p = params or MinHashParams()
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"threshold must be in [0, 1], got {threshold}")
    b, r = lsh_shape(threshold, p, bands, rows)
    ordered = sort_by_id(documents)
    if engine == "local":
        keys = local_band_keys(
            [d.text for d in ordered], p, b, r, threads=threads, progress=progress
        )
    elif engine == "ray":
        from .ray_engine import ray_band_keys

        keys = ray_band_keys([d.text for d in ordered], p, b, r, **(ray_options or {}))
    else:
        raise ConfigError(f"unknown engine {engine!r}; use 'local' or 'ray'")
    return cluster_from_band_keys(
        ordered, keys, threshold=threshold, params=p, bands=b, rows=r, threads=threads
    )


def brute_force_clusters(
    documents: Iterable[Document], *, threshold: float, params: MinHashParams | None = None
) -> NearDedupResult:
    """All-pairs reference: every pair's true Jaccard, no MinHash, no LSH (O(n^2))."""
    p = params or MinHashParams()
    ordered = sort_by_id(documents)
    sets = [set(shingles(d.text, kind=p.shingle, n=p.n)) for d in ordered]
    parent = list(range(len(ordered)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    similar = 0
    for i in range(len(ordered)):
        for j in range(i + 1, len(ordered)):
            if jaccard(sets[i], sets[j]) >= threshold:
                similar += 1
                ri, rj = find(i), find(j)
                parent[max(ri, rj)] = min(ri, rj)
    roots = [find(i) for i in range(len(ordered))]
    stats = {"documents": len(ordered), "pairs_similar": similar}
    return _result(ordered, roots, threshold, p, 0, 0, stats)
