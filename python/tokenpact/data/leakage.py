"""Leakage checks across split roles: exact copies, near copies and long n-gram overlap.

Record identity is not enough: a near copy, a shared licence block or
a quoted passage can carry held-out text into the fit role. For every pair of roles the
report counts documents of the later role that have an exact duplicate, a near
duplicate (MinHash + verified Jaccard) or a shared word n-gram (13 by default) in the
earlier role. ``check_fit`` turns overlap of the fit role with validation or test into
a :class:`~tokenpact.errors.ContractError`; :func:`drop_leaked` removes the fit
documents that share text with a protected role instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

from ..errors import ConfigError, ContractError
from .documents import Document
from .exact import Canonicalization, exact_dedup_key
from .minhash import MinHashParams
from .near import cluster_from_band_keys, local_band_keys, lsh_shape

KINDS = ("exact", "near", "ngram")
EXAMPLES = 3


@dataclass(frozen=True)
class LeakageReport:
    """``pairs[(a, b)][kind]`` counts documents of role ``b`` leaking from role ``a``."""

    pairs: dict[tuple[str, str], dict[str, int]]
    examples: dict[tuple[str, str], dict[str, list[tuple[str, str]]]]
    settings: dict[str, Any] = field(default_factory=dict)
    # shared[(x, y)]: IDs of role x's documents sharing text (any kind) with role y.
    shared: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def leaked_ids(self, role: str, against: Sequence[str]) -> set[str]:
        """IDs of ``role``'s documents that share text with any role in ``against``."""
        out: set[str] = set()
        for other in against:
            out |= self.shared.get((role, other), frozenset())
        return out

    def to_markdown(self) -> str:
        """One row per role pair: documents of the second role found in the first."""
        lines = ["| roles | exact | near | ngram |", "|---|---:|---:|---:|"]
        for (a, b), counts in sorted(self.pairs.items()):
            lines.append(
                f"| {a} / {b} | {counts['exact']} | {counts['near']} | {counts['ngram']} |"
            )
        return "\n".join(lines)

    def overlap(self, a: str, b: str) -> dict[str, int]:
        """Counts for the unordered role pair ``{a, b}``."""
        key = (a, b) if (a, b) in self.pairs else (b, a)
        return dict(self.pairs.get(key, dict.fromkeys(KINDS, 0)))

    def check_fit(
        self, fit_role: str = "fit", protected: Sequence[str] = ("validation", "test")
    ) -> None:
        """Raise ContractError when the fit role shares text with a protected role."""
        problems = []
        for role in protected:
            counts = self.overlap(fit_role, role)
            found = {k: v for k, v in counts.items() if v}
            if found:
                problems.append(f"{fit_role}/{role}: {found}")
        if problems:
            raise ContractError(
                "the tokenizer's fit role overlaps held-out roles ("
                + "; ".join(problems)
                + "); remove the leaked documents from the fit role (drop_leaked(), "
                "drop=True) or re-split by a coarser group_id before training"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "pairs": [
                {"roles": list(k), "counts": v, "examples": self.examples[k]}
                for k, v in sorted(self.pairs.items())
            ],
        }


def _ngram_hashes(text: str, n: int) -> set[bytes]:
    words = text.split()
    return {
        hashlib.blake2b(
            " ".join(words[i : i + n]).encode("utf-8", "surrogatepass"), digest_size=8
        ).digest()
        for i in range(len(words) - n + 1)
    }


def _near_roots(
    roles: Sequence[str],
    splits: Mapping[str, Sequence[Document]],
    threshold: float,
    params: MinHashParams,
    threads: int | None,
) -> tuple[list[Document], list[int], list[str]]:
    tagged = [
        (replace(d, doc_id=f"{i:04d}\x00{d.doc_id}"), role)
        for i, role in enumerate(roles)
        for d in splits[role]
    ]
    tagged.sort(key=lambda t: t[0].doc_id)
    ordered = [t[0] for t in tagged]
    b, r = lsh_shape(threshold, params, None, None)
    keys = local_band_keys([d.text for d in ordered], params, b, r, threads=threads)
    result = cluster_from_band_keys(
        ordered, keys, threshold=threshold, params=params, bands=b, rows=r, threads=threads
    )
    index = {d.doc_id: i for i, d in enumerate(ordered)}
    roots = list(range(len(ordered)))
    for removed, kept in result.duplicate_of.items():
        roots[index[removed]] = index[kept]
    return ordered, roots, [t[1] for t in tagged]


def check_leakage(
    splits: Mapping[str, Sequence[Document]],
    *,
    canonicalization: Canonicalization | None = None,
    near_threshold: float | None = 0.8,
    params: MinHashParams | None = None,
    ngram: int | None = 13,
    threads: int | None = None,
) -> LeakageReport:
    """Count exact, near and ``ngram``-word overlaps for every pair of roles."""
    if ngram is not None and ngram < 1:
        raise ConfigError(f"ngram must be >= 1 or None, got {ngram}")
    roles = list(splits)
    p = params or MinHashParams()
    pairs = {pair: dict.fromkeys(KINDS, 0) for pair in combinations(roles, 2)}
    examples: dict[tuple[str, str], dict[str, list[tuple[str, str]]]] = {
        pair: {k: [] for k in KINDS} for pair in pairs
    }

    def hit(a: str, b: str, kind: str, a_id: str, b_id: str) -> None:
        pairs[(a, b)][kind] += 1
        if len(examples[(a, b)][kind]) < EXAMPLES:
            examples[(a, b)][kind].append((a_id, b_id))

    exact_keys = {
        role: {exact_dedup_key(d.text, canonicalization): d.doc_id for d in reversed(splits[role])}
        for role in roles
    }
    grams = (
        {role: [_ngram_hashes(d.text, ngram) for d in splits[role]] for role in roles}
        if ngram is not None
        else {}
    )
    gram_owner: dict[str, dict[bytes, str]] = {}
    for role, role_grams in grams.items():
        owners: dict[bytes, str] = {}
        for doc, doc_grams in zip(splits[role], role_grams, strict=True):
            for g in doc_grams:
                owners.setdefault(g, doc.doc_id)
        gram_owner[role] = owners
    for a, b in pairs:
        for i, doc in enumerate(splits[b]):
            owner = exact_keys[a].get(exact_dedup_key(doc.text, canonicalization))
            if owner is not None:
                hit(a, b, "exact", owner, doc.doc_id)
            if ngram is not None:
                shared = next((g for g in sorted(grams[b][i]) if g in gram_owner[a]), None)
                if shared is not None:
                    hit(a, b, "ngram", gram_owner[a][shared], doc.doc_id)
    if near_threshold is not None:
        ordered, roots, doc_roles = _near_roots(roles, splits, near_threshold, p, threads)
        members: dict[int, list[int]] = {}
        for i, root in enumerate(roots):
            members.setdefault(root, []).append(i)
        for group in members.values():
            if len(group) < 2:
                continue
            for a, b in pairs:
                first_a = next((i for i in group if doc_roles[i] == a), None)
                if first_a is None:
                    continue
                for i in group:
                    if doc_roles[i] == b:
                        a_id = ordered[first_a].doc_id.split("\x00", 1)[1]
                        hit(a, b, "near", a_id, ordered[i].doc_id.split("\x00", 1)[1])
    settings: dict[str, Any] = {
        "canonicalization": (canonicalization or Canonicalization()).to_json(),
        "near_threshold": near_threshold,
        "minhash": p.to_json() if near_threshold is not None else None,
        "ngram": ngram,
    }
    sharing = _shared_ids(roles, splits, exact_keys, grams, canonicalization)
    if near_threshold is not None:
        for group in members.values():
            group_roles = {doc_roles[i] for i in group}
            if len(group_roles) < 2:
                continue
            for i in group:
                doc_id = ordered[i].doc_id.split("\x00", 1)[1]
                for other in group_roles - {doc_roles[i]}:
                    sharing[(doc_roles[i], other)].add(doc_id)
    return LeakageReport(
        pairs=pairs,
        examples=examples,
        settings=settings,
        shared={k: frozenset(v) for k, v in sharing.items()},
    )


def _shared_ids(
    roles: Sequence[str],
    splits: Mapping[str, Sequence[Document]],
    exact_keys: Mapping[str, Mapping[bytes, str]],
    grams: Mapping[str, list[set[bytes]]],
    canonicalization: Canonicalization | None,
) -> dict[tuple[str, str], set[str]]:
    """Every document of each role sharing an exact key or an n-gram with another role
    (both directions, every copy: the counts above name one owner per key)."""
    unions = {role: set().union(*grams[role]) for role in grams}
    shared: dict[tuple[str, str], set[str]] = {
        (x, y): set() for x in roles for y in roles if x != y
    }
    for x in roles:
        keys = [exact_dedup_key(d.text, canonicalization) for d in splits[x]]
        for y in roles:
            if x == y:
                continue
            for i, doc in enumerate(splits[x]):
                if keys[i] in exact_keys[y] or (grams and not grams[x][i].isdisjoint(unions[y])):
                    shared[(x, y)].add(doc.doc_id)
    return shared


def drop_leaked(
    splits: Mapping[str, Sequence[Document]],
    report: LeakageReport,
    *,
    fit_role: str = "fit",
    protected: Sequence[str] = ("validation", "test"),
) -> tuple[dict[str, list[Document]], list[str]]:
    """``splits`` with the ``fit_role`` documents that share text with a protected role
    removed (held-out roles are never touched), and the removed IDs in order."""
    if fit_role not in splits:
        raise ConfigError(f"no role {fit_role!r} in the splits; name the fit role")
    leaked = report.leaked_ids(fit_role, [r for r in protected if r in splits])
    out = {role: list(docs) for role, docs in splits.items()}
    out[fit_role] = [d for d in splits[fit_role] if d.doc_id not in leaked]
    removed = [d.doc_id for d in splits[fit_role] if d.doc_id in leaked]
    return out, removed
