"""The deduplication step: exact, then near, with a report people can read.

>>> out = deduplicate([Document("a", "x y z"), Document("b", "x  y z")], near=None)
>>> [d.doc_id for d in out.kept], out.report.totals["exact_removed"]
(['a'], 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .documents import Document
from .exact import Canonicalization, ExactDedupResult, exact_dedup
from .keep import KeepPolicy, rechoose_exact, rechoose_near
from .minhash import MinHashParams, jaccard, shingles
from .near import NearDedupResult, near_dedup

EXAMPLE_PAIRS = 3


@dataclass(frozen=True)
class DedupReport:
    """Per-source counts and bytes removed, and the near clusters with example pairs."""

    per_source: dict[str, dict[str, int]]
    totals: dict[str, int]
    clusters: list[dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)
    # With a KeepPolicy: every cluster's members and why its survivor was chosen.
    keep: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "settings": self.settings,
            "totals": self.totals,
            "per_source": self.per_source,
            "clusters": self.clusters,
        }
        if self.keep is not None:
            out["keep"] = self.keep
        return out

    def to_markdown(self, *, max_clusters: int = 20) -> str:
        lines = [
            "| source | documents | exact removed | near removed | bytes removed |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, row in sorted(self.per_source.items()):
            lines.append(
                f"| {name} | {row['documents']} | {row['exact_removed']} | "
                f"{row['near_removed']} | {row['bytes_removed']} |"
            )
        if "license_removed" in self.totals:
            lines.append("")
            lines.append(
                f"Removed by licence class: {self.totals['license_removed']} "
                f"(allowed: {', '.join(self.settings['keep']['allowed_licenses'])})"
            )
        if self.keep:
            reasons: dict[str, int] = {}
            for c in self.keep:
                reasons[c["reason"]] = reasons.get(c["reason"], 0) + 1
            decided = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
            lines.append(f"Survivors chosen by {self.settings['keep']['prefer']} ({decided})")
        lines.append("")
        lines.append(f"Near-duplicate clusters: {len(self.clusters)} (largest first)")
        for c in self.clusters[:max_clusters]:
            examples = ", ".join(f"{p['removed']} (J={p['jaccard']:.3f})" for p in c["examples"])
            lines.append(f"- {c['kept']} x{c['size']}: {examples}")
        return "\n".join(lines)


@dataclass(frozen=True)
class DedupOutcome:
    kept: list[Document]
    exact: ExactDedupResult
    near: NearDedupResult | None
    report: DedupReport


def _cluster_entries(
    near: NearDedupResult, by_id: dict[str, Document], params: MinHashParams
) -> list[dict[str, Any]]:
    def shingle_set(doc_id: str) -> set[str]:
        return set(shingles(by_id[doc_id].text, kind=params.shingle, n=params.n))

    entries = []
    for c in sorted(near.clusters, key=lambda c: (-c.size, c.kept)):
        kept_set = shingle_set(c.kept)
        examples = [
            {"kept": c.kept, "removed": r, "jaccard": jaccard(kept_set, shingle_set(r))}
            for r in c.removed[:EXAMPLE_PAIRS]
        ]
        entries.append(
            {"kept": c.kept, "size": c.size, "members": list(c.removed), "examples": examples}
        )
    return entries


def deduplicate(
    documents: Iterable[Document],
    *,
    canonicalization: Canonicalization | None = None,
    near: float | None = 0.8,
    params: MinHashParams | None = None,
    engine: str = "local",
    threads: int | None = None,
    ray_options: dict[str, Any] | None = None,
    progress: bool = False,
    keep: KeepPolicy | None = None,
) -> DedupOutcome:
    """Exact dedup under ``canonicalization``, then near dedup at Jaccard ``near``
    (``None`` skips it). The kept documents come back in ``doc_id`` order.

    Without ``keep`` each cluster keeps its smallest ``doc_id``. With a
    :class:`~tokenpact.data.KeepPolicy` the survivor is chosen by quality score or
    licence class, documents outside ``keep.allowed_licenses`` are removed first
    (``license_removed`` in the report), and the report's ``keep`` section records every
    cluster's members and the criterion that chose its survivor.
    """
    docs = list(documents)
    filtering = keep is not None and keep.allowed_licenses is not None
    licensed, unlicensed = docs, []
    if keep is not None:  # one licence lookup per document
        allowed = [keep.allows(d) for d in docs]
        licensed = [d for d, ok in zip(docs, allowed, strict=True) if ok]
        unlicensed = [d for d, ok in zip(docs, allowed, strict=True) if not ok]
    exact = exact_dedup(licensed, policy=canonicalization)
    keep_records: list[dict[str, Any]] = []
    if keep is not None:
        exact, keep_records = rechoose_exact(exact, keep)
    p = params or MinHashParams()
    near_result = None
    kept = exact.kept
    if near is not None:
        near_result = near_dedup(
            exact.kept,
            threshold=near,
            params=p,
            engine=engine,
            threads=threads,
            ray_options=ray_options,
            progress=progress,
        )
        if keep is not None:
            near_result, near_records = rechoose_near(near_result, keep)
            keep_records += near_records
        kept = near_result.kept
    per_source: dict[str, dict[str, int]] = {}
    for d in docs:
        row = per_source.setdefault(
            d.source,
            {"documents": 0, "bytes": 0, "exact_removed": 0, "near_removed": 0, "bytes_removed": 0},
        )
        row["documents"] += 1
        row["bytes"] += d.n_bytes
        if filtering:
            row.setdefault("license_removed", 0)
    for d in unlicensed:
        per_source[d.source]["license_removed"] += 1
        per_source[d.source]["bytes_removed"] += d.n_bytes
    for removed, column in ((exact.removed, "exact_removed"),) + (
        ((near_result.removed, "near_removed"),) if near_result else ()
    ):
        for d in removed:
            per_source[d.source][column] += 1
            per_source[d.source]["bytes_removed"] += d.n_bytes
    totals = {
        "documents": len(docs),
        "kept": len(kept),
        "exact_removed": len(exact.removed),
        "near_removed": len(near_result.removed) if near_result else 0,
        **({"license_removed": len(unlicensed)} if filtering else {}),
        "bytes": sum(r["bytes"] for r in per_source.values()),
        "bytes_removed": sum(r["bytes_removed"] for r in per_source.values()),
    }
    by_id = {d.doc_id: d for d in exact.kept}
    clusters = _cluster_entries(near_result, by_id, p) if near_result else []
    settings: dict[str, Any] = {"canonicalization": exact.policy.to_json()}
    if near_result is not None:
        settings["near"] = near_result.to_json()
    if keep is not None:
        settings["keep"] = keep.to_json()
    report = DedupReport(
        per_source=per_source,
        totals=totals,
        clusters=clusters,
        settings=settings,
        keep=keep_records if keep is not None else None,
    )
    return DedupOutcome(kept=kept, exact=exact, near=near_result, report=report)
