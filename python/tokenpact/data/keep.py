"""Which copy of a duplicate cluster survives, and which licence classes may enter.

Deduplication decides which documents are copies; a :class:`KeepPolicy` decides which
copy to keep. ``prefer="quality"`` keeps the copy with the highest quality score (a
number in the document's input record, ``quality_field``), ``prefer="license"`` the copy
whose licence class comes first in ``license_order``; the other criterion breaks ties,
then the smallest ``doc_id``. ``allowed_licenses`` is a filter: a document of any other
class is removed before deduplication, so it can neither survive nor be chosen over a
usable copy. Every cluster's choice is recorded (members, their classes and scores, and
which criterion decided).

>>> from tokenpact.data import Document
>>> policy = KeepPolicy(prefer="quality")
>>> docs = [Document(i, "t", fields={"quality": q}) for i, q in (("a", 0.2), ("b", 0.9))]
>>> policy.choose(docs)[0].doc_id, policy.choose(docs)[1]
('b', 'quality')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError, InvalidInputError
from .documents import Document
from .exact import ExactDedupResult
from .near import NearCluster, NearDedupResult

KEEP_RULES = ("doc_id", "quality", "license")


@dataclass(frozen=True)
class KeepPolicy:
    """How a duplicate cluster's survivor is chosen, and the licence filter.

    ``prefer``: ``"quality"``, ``"license"`` or ``"doc_id"`` (the smallest ID: the
    default of :func:`~tokenpact.data.deduplicate` without a policy).
    ``license_order``: licence classes, best first; unlisted classes rank after them.
    ``allowed_licenses``: when set, documents of other classes are removed.
    ``quality_field`` / ``license_field``: where the score and class are read from the
    document's input record (``Document.fields``); without ``license_field`` the class
    is ``Document.license_class``. A missing score ranks below every score.
    """

    prefer: str = "quality"
    license_order: tuple[str, ...] = ()
    allowed_licenses: tuple[str, ...] | None = None
    quality_field: str = "quality"
    license_field: str | None = None

    def __post_init__(self) -> None:
        if self.prefer not in KEEP_RULES:
            raise ConfigError(f"unknown keep rule {self.prefer!r}; use one of {KEEP_RULES}")
        for name in ("license_order", "allowed_licenses"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(f"{name} must be a sequence of licence class names")
            if len(set(value)) != len(value):
                raise ConfigError(f"{name} names a licence class twice")
            object.__setattr__(self, name, tuple(value))
        if self.allowed_licenses is not None and not self.allowed_licenses:
            raise ConfigError("allowed_licenses is empty: every document would be removed")

    def license_of(self, doc: Document) -> str:
        if self.license_field is None:
            return doc.license_class
        value = (doc.fields or {}).get(self.license_field)
        return "unknown" if value is None else str(value)

    def quality_of(self, doc: Document) -> float | None:
        value = (doc.fields or {}).get(self.quality_field)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise InvalidInputError(
                f"document {doc.doc_id!r} has {self.quality_field}={value!r}; a quality score "
                "is a number"
            )
        return float(value)

    def allows(self, doc: Document) -> bool:
        return self.allowed_licenses is None or self.license_of(doc) in self.allowed_licenses

    def _keys(self, doc: Document) -> dict[str, Any]:
        quality = self.quality_of(doc)
        order = self.license_order
        lic = self.license_of(doc)
        return {
            # Smaller is better for every key.
            "quality": -math.inf if quality is None else -quality,
            "license": order.index(lic) if lic in order else len(order),
            "doc_id": doc.doc_id,
        }

    def _criteria(self) -> tuple[str, ...]:
        if self.prefer == "quality":
            return ("quality", "license", "doc_id")
        if self.prefer == "license":
            return ("license", "quality", "doc_id")
        return ("doc_id",)

    def choose(self, members: Sequence[Document]) -> tuple[Document, str]:
        """The survivor of a cluster and the criterion that decided (``doc_id`` when
        every earlier criterion tied; ``"single"`` for a cluster of one)."""
        if not members:
            raise ConfigError("a duplicate cluster needs at least one document")
        criteria = self._criteria()
        keyed = sorted(
            ((tuple(map(self._keys(d).__getitem__, criteria)), d) for d in members),
            key=lambda kd: kd[0],
        )
        best_key, best = keyed[0]
        if len(keyed) == 1:
            return best, "single"
        runner_up = keyed[1][0]
        reason = next(c for c, a, b in zip(criteria, best_key, runner_up, strict=True) if a != b)
        return best, reason

    def record(self, stage: str, members: Sequence[Document], kept: Document, reason: str) -> dict:
        """What the report keeps of one cluster's choice."""
        return {
            "stage": stage,
            "kept": kept.doc_id,
            "reason": reason,
            "members": [
                {
                    "doc_id": d.doc_id,
                    "license_class": self.license_of(d),
                    "quality": self.quality_of(d),
                }
                for d in sorted(members, key=lambda d: d.doc_id)
            ],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "prefer": self.prefer,
            "license_order": list(self.license_order),
            "allowed_licenses": None
            if self.allowed_licenses is None
            else list(self.allowed_licenses),
            "quality_field": self.quality_field,
            "license_field": self.license_field,
        }


def _by_id(docs: Sequence[Document]) -> list[Document]:
    return sorted(docs, key=lambda d: d.doc_id)


def rechoose_exact(
    result: ExactDedupResult, policy: KeepPolicy
) -> tuple[ExactDedupResult, list[dict[str, Any]]]:
    """``result`` with each exact cluster's survivor chosen by ``policy``."""
    groups: dict[str, list[Document]] = {d.doc_id: [d] for d in result.kept}
    for d in result.removed:
        groups[result.duplicate_of[d.doc_id]].append(d)
    kept: list[Document] = []
    removed: list[Document] = []
    duplicate_of: dict[str, str] = {}
    records = []
    for members in groups.values():
        best, reason = policy.choose(members)
        kept.append(best)
        for d in members:
            if d is not best:
                removed.append(d)
                duplicate_of[d.doc_id] = best.doc_id
        if len(members) > 1:
            records.append(policy.record("exact", members, best, reason))
    fixed = replace(result, kept=_by_id(kept), removed=_by_id(removed), duplicate_of=duplicate_of)
    return fixed, records


def rechoose_near(
    result: NearDedupResult, policy: KeepPolicy
) -> tuple[NearDedupResult, list[dict[str, Any]]]:
    """``result`` with each near cluster's survivor chosen by ``policy``."""
    by_id = {d.doc_id: d for d in (*result.kept, *result.removed)}
    in_cluster = {c.kept for c in result.clusters} | {r for c in result.clusters for r in c.removed}
    kept = [d for d in result.kept if d.doc_id not in in_cluster]
    removed: list[Document] = []
    duplicate_of: dict[str, str] = {}
    clusters = []
    records = []
    for c in result.clusters:
        members = [by_id[c.kept], *(by_id[r] for r in c.removed)]
        best, reason = policy.choose(members)
        kept.append(best)
        others = tuple(sorted(d.doc_id for d in members if d is not best))
        for doc_id in others:
            removed.append(by_id[doc_id])
            duplicate_of[doc_id] = best.doc_id
        clusters.append(NearCluster(best.doc_id, others))
        records.append(policy.record("near", members, best, reason))
    fixed = replace(
        result,
        kept=_by_id(kept),
        removed=_by_id(removed),
        duplicate_of=duplicate_of,
        clusters=sorted(clusters, key=lambda c: c.kept),
    )
    return fixed, records
