"""Group-hash splits into named roles (every group has one split owner).

A group's role is a pure function of ``SHA-256(salt, group_id)``: a 64-bit fraction in
``[0, 1)`` falls into the cumulative role fractions in their declared order. Adding
documents therefore never moves an existing one, and all documents of a group (shards
of one page, translations, branches of one conversation) share one role.

>>> spec = SplitSpec({"fit": 0.8, "validation": 0.1, "test": 0.1}, salt="v1")
>>> spec.role_of("page-17") in spec.roles
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .documents import Document, sort_by_id

_SCALE = float(1 << 64)


@dataclass(frozen=True)
class SplitSpec:
    """Named roles with fractions summing to 1, and the salt that seeds the hash."""

    roles: Mapping[str, float]
    salt: str = "tokenpact-split-v1"

    def __post_init__(self) -> None:
        if not self.roles:
            raise ConfigError("a split needs at least one role, e.g. {'fit': 0.9, 'test': 0.1}")
        for name, fraction in self.roles.items():
            if not isinstance(name, str) or not name:
                raise ConfigError(f"role names must be non-empty strings, got {name!r}")
            if not isinstance(fraction, (int, float)) or not 0.0 <= fraction <= 1.0:
                raise ConfigError(f"role {name!r} fraction must be in [0, 1], got {fraction!r}")
        total = math.fsum(self.roles.values())
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(f"role fractions must sum to 1, got {total}")
        if not isinstance(self.salt, str):
            raise ConfigError("salt must be a string")
        object.__setattr__(self, "roles", dict(self.roles))

    def fraction_of(self, group_id: str) -> float:
        """The group's position in ``[0, 1)``: the first 8 bytes of the salted hash."""
        payload = self.salt.encode("utf-8") + b"\x00" + group_id.encode("utf-8", "surrogatepass")
        value = int.from_bytes(hashlib.sha256(payload).digest()[:8], "big")
        return value / _SCALE

    def role_of(self, group_id: str) -> str:
        u = self.fraction_of(group_id)
        acc = 0.0
        names = list(self.roles)
        for name in names:
            acc += self.roles[name]
            if u < acc:
                return name
        return names[-1]  # u within rounding of 1.0: the last role

    def to_json(self) -> dict[str, Any]:
        return {
            "roles": dict(self.roles),
            "salt": self.salt,
            "hash": "sha256(salt || 0x00 || group_id)[:8]",
        }


def split_documents(documents: Iterable[Document], spec: SplitSpec) -> dict[str, list[Document]]:
    """Documents per role (every role present, possibly empty), each in ``doc_id`` order."""
    out: dict[str, list[Document]] = {name: [] for name in spec.roles}
    cache: dict[str, str] = {}
    for doc in sort_by_id(documents):
        group = doc.group
        role = cache.get(group)
        if role is None:
            role = cache[group] = spec.role_of(group)
        out[role].append(doc)
    return out


def role_by_doc(splits: Mapping[str, Iterable[Document]]) -> dict[str, str]:
    """``{doc_id: role}`` from a split mapping."""
    return {d.doc_id: role for role, docs in splits.items() for d in docs}
