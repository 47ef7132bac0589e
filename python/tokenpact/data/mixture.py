"""Mixture accounting: documents, bytes and tokens per source and role, token shares.

Sampling half the documents from each of two sources says little about their share of
the tokens: with 200 and 800 tokens per document the first source
supplies ``200 / (200 + 800) = 20%``. In general ``pi_s = q_s E[n_s] / sum_j q_j E[n_j]``.
:func:`expected_token_shares` is that formula; :func:`account_mixture` measures the
realised shares from encoded lengths, with integer totals that equal the shard totals.

>>> expected_token_shares({"a": 0.5, "b": 0.5}, {"a": 200, "b": 800})
{'a': 0.2, 'b': 0.8}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..errors import ConfigError, InvalidInputError
from .documents import Document


def expected_token_shares(
    probabilities: Mapping[str, float], mean_tokens: Mapping[str, float]
) -> dict[str, float]:
    """``pi_s = q_s E[n_s] / sum_j q_j E[n_j]`` for sampling probabilities ``q``."""
    if set(probabilities) != set(mean_tokens):
        raise ConfigError("probabilities and mean_tokens must name the same sources")
    weights = {s: probabilities[s] * mean_tokens[s] for s in probabilities}
    total = sum(weights.values())
    if total <= 0:
        raise ConfigError("the expected token total is zero; give a source a positive weight")
    return {s: w / total for s, w in weights.items()}


@dataclass(frozen=True)
class MixtureReport:
    """Counts per ``(source, role)`` and totals; ``token_share`` is ``pi_s`` per source."""

    rows: dict[tuple[str, str], dict[str, int]]

    def totals(self) -> dict[str, int]:
        out = {"documents": 0, "bytes": 0, "tokens": 0}
        for row in self.rows.values():
            for k in out:
                out[k] += row[k]
        return out

    def by_source(self, role: str | None = None) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (source, r), row in sorted(self.rows.items()):
            if role is not None and r != role:
                continue
            acc = out.setdefault(source, {"documents": 0, "bytes": 0, "tokens": 0})
            for k in acc:
                acc[k] += row[k]
        return out

    def token_share(self, role: str | None = None) -> dict[str, float]:
        """Realised ``pi_s``: each source's fraction of the tokens (of one role, or all)."""
        sources = self.by_source(role)
        total = sum(s["tokens"] for s in sources.values())
        return {name: (s["tokens"] / total if total else 0.0) for name, s in sources.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [{"source": s, "role": r, **row} for (s, r), row in sorted(self.rows.items())],
            "totals": self.totals(),
            "token_share": self.token_share(),
        }


def account_mixture(
    documents: Iterable[Document],
    token_counts: Mapping[str, int],
    *,
    roles: Mapping[str, str] | None = None,
) -> MixtureReport:
    """Tally documents, UTF-8 bytes and tokens per (source, role).

    ``token_counts`` maps ``doc_id`` to its encoded length (for example the ``length``
    column of a dataset's shards); ``roles`` maps ``doc_id`` to its split role (default:
    one role named ``"all"``).
    """
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for doc in documents:
        if doc.doc_id not in token_counts:
            raise InvalidInputError(
                f"no token count for document {doc.doc_id!r}; encode it first or pass its length"
            )
        role = roles.get(doc.doc_id, "all") if roles is not None else "all"
        row = rows.setdefault((doc.source, role), {"documents": 0, "bytes": 0, "tokens": 0})
        row["documents"] += 1
        row["bytes"] += doc.n_bytes
        row["tokens"] += int(token_counts[doc.doc_id])
    return MixtureReport(rows=rows)


def _codes(values: list[str]) -> Any:
    """``values`` as int64 codes numbered in order of first occurrence."""
    import numpy as np

    index = {v: i for i, v in enumerate(dict.fromkeys(values))}
    return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


class MixtureTally:
    """The per-document side of :func:`tally_mixture` (which (source, role) each document
    belongs to, its UTF-8 bytes), prepared before the token counts exist: the encoder
    prepares it beside the shards and only sums the lengths once they are known."""

    def __init__(self, sources: Iterable[str], roles: Iterable[str], n_bytes: Any = None) -> None:
        """``n_bytes`` may come later (:meth:`count_bytes`)."""
        import numpy as np

        source_list = list(sources)
        role_list = list(islice(roles, len(source_list)))  # roles may be repeat("all")
        if n_bytes is None:
            n_bytes = np.zeros(len(source_list), dtype=np.int64)
        n_bytes = np.asarray(n_bytes, dtype=np.int64)
        if not len(role_list) == len(source_list) == n_bytes.shape[0]:
            raise InvalidInputError(
                "sources, roles, n_bytes and tokens must have one entry per document"
            )
        # One code per (source, role) from a code per source and one per role: no tuple
        # per document; dict.fromkeys and map run at C speed (no Python frame each).
        source_codes = _codes(source_list)
        role_codes = _codes(role_list)
        n_roles = int(role_codes.max()) + 1 if role_codes.size else 1
        pair_codes = source_codes * n_roles + role_codes
        # The (source, role) keys in order of first occurrence, numbered 0, 1, ...
        _, first = np.unique(pair_codes, return_index=True)
        first.sort()
        self._keys = [(source_list[i], role_list[i]) for i in first.tolist()]
        renumber = np.zeros(len(source_list) and int(pair_codes.max()) + 1, dtype=np.int64)
        renumber[pair_codes[first]] = np.arange(len(first))
        self._codes = renumber[pair_codes]
        self._docs = np.bincount(self._codes, minlength=len(self._keys))
        self._bytes = np.zeros(len(self._keys), dtype=np.int64)
        np.add.at(self._bytes, self._codes, n_bytes)  # exact (bincount weights are floats)

    def count_bytes(self, n_bytes: Any) -> None:
        """Set each document's UTF-8 bytes (replacing any given before)."""
        import numpy as np

        n_bytes = np.asarray(n_bytes, dtype=np.int64)
        if n_bytes.shape[0] != self._codes.shape[0]:
            raise InvalidInputError(
                "sources, roles, n_bytes and tokens must have one entry per document"
            )
        self._bytes = np.zeros(len(self._keys), dtype=np.int64)
        np.add.at(self._bytes, self._codes, n_bytes)  # exact (bincount weights are floats)

    def report(self, tokens: Any) -> MixtureReport:
        """The mixture, given each document's token count (same order)."""
        import numpy as np

        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.shape[0] != self._codes.shape[0]:
            raise InvalidInputError(
                "sources, roles, n_bytes and tokens must have one entry per document"
            )
        token_sums = np.zeros(len(self._keys), dtype=np.int64)
        np.add.at(token_sums, self._codes, tokens)
        rows = {
            key: {
                "documents": int(self._docs[c]),
                "bytes": int(self._bytes[c]),
                "tokens": int(token_sums[c]),
            }
            for c, key in enumerate(self._keys)
        }
        return MixtureReport(rows=rows)


def tally_mixture(
    sources: Iterable[str], roles: Iterable[str], n_bytes: Any, tokens: Any
) -> MixtureReport:
    """:func:`account_mixture` from per-document columns (source, role, UTF-8 bytes,
    tokens) in one pass, for callers that already hold sizes and lengths as arrays."""
    return MixtureTally(sources, roles, n_bytes).report(tokens)
