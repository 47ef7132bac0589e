"""Fit / validation / test roles with one owner per group.

Record identity is not enough: translations, near duplicates and shards of one document
share a ``group_id`` and must land in one split, or validation leaks into fit. When
the corpus has no split yet, :func:`assign_splits` derives one from a keyed hash of the
group ID (stable under reordering and under adding other groups).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError, ContractError

ROLES = ("fit", "validation", "test")


@dataclass(frozen=True)
class SplitRecord:
    """One record of a split manifest."""

    record_id: str
    group_id: str
    split: str
    slice: str
    text: str

    @property
    def utf8_bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def assign_splits(
    groups: Sequence[str],
    *,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: str = "tokenpact-audit-v1",
) -> list[str]:
    """A role for each record from ``sha256(seed, group_id)``: same group, same role."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ConfigError(
            f"fractions must be three non-negative numbers summing to 1, got {fractions}"
        )
    fit_cut = fractions[0]
    val_cut = fractions[0] + fractions[1]
    out = []
    for group in groups:
        digest = hashlib.sha256(f"{seed}\x00{group}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        out.append("fit" if u < fit_cut else "validation" if u < val_cut else "test")
    return out


def validate_split_manifest(records: Iterable[SplitRecord]) -> dict[str, int]:
    """Check group ownership and roles; return the record count per role.

    Raises ContractError naming the group that two roles claim, or the missing role.
    """
    owner: dict[str, str] = {}
    seen_ids: set[str] = set()
    counts = dict.fromkeys(ROLES, 0)
    for record in sorted(records, key=lambda r: r.record_id):
        if record.split not in ROLES:
            raise ContractError(
                f"record {record.record_id!r} has split {record.split!r}; use one of {ROLES}"
            )
        if record.record_id in seen_ids:
            raise ContractError(f"record ID {record.record_id!r} appears twice; IDs must be unique")
        seen_ids.add(record.record_id)
        prior = owner.setdefault(record.group_id, record.split)
        if prior != record.split:
            raise ContractError(
                f"group {record.group_id!r} is in both {prior!r} and {record.split!r}: every "
                "group needs one split owner (assign splits by group, e.g. assign_splits)"
            )
        counts[record.split] += 1
    missing = [role for role in ROLES if counts[role] == 0]
    if missing:
        raise ContractError(f"the split manifest has no {', '.join(missing)} records")
    return counts
