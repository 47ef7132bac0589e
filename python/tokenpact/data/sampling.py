"""Source-weighted sampling of a tokenizer's training corpus.

How often each source is drawn decides which texts the tokenizer learns from. A
:class:`SourceSampling` policy gives each source a probability ``q_s`` and a sample size
in documents; :func:`sample_sources` draws it deterministically from a seed:

* quotas: ``round(q_s * documents)`` by largest remainder (ties to the source name), so
  the realized document shares are the closest integers to the policy;
* within a source, documents are ranked by ``blake2b(seed, doc_id)`` and taken in rank
  order, so the sample depends on the seed and the document IDs, never on input order
  or on how the input was split;
* a source with fewer documents than its quota is repeated whole ``quota // n`` times,
  plus the first ``quota % n`` by rank (upsampling a small language or domain).

The sample records the policy and the realized shares (documents and UTF-8 bytes per
source); :func:`tokenpact.data.train_bpe` stores that record as ``tok.training
["sampling"]``, which ``save``/``load`` and the manifest's ``training`` section carry.
After training, :meth:`SourceSample.token_shares` measures each source's share of the
tokens, ``pi_s = q_s E[n_s] / sum_j q_j E[n_j]`` realized.

>>> from tokenpact.data import Document
>>> docs = [Document(f"{s}{i}", "x" * (i + 1), s) for s in "ab" for i in range(10)]
>>> sample = sample_sources(docs, SourceSampling({"a": 0.75, "b": 0.25}, documents=8, seed=1))
>>> sample.realized["documents"]
{'a': 6, 'b': 2}
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .documents import Document

if TYPE_CHECKING:
    from ..core import Tokenizer

SAMPLING_SCHEME = "source-weighted-v1"


@dataclass(frozen=True)
class SourceSampling:
    """Per-source probabilities (normalized to sum 1), the sample size in documents and
    the seed. Every source named must be present in the corpus; sources not named are
    not sampled."""

    probabilities: Mapping[str, float]
    documents: int
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.probabilities, Mapping) or not self.probabilities:
            raise ConfigError("probabilities must map at least one source to a weight")
        for name, q in self.probabilities.items():
            if not isinstance(name, str) or not name:
                raise ConfigError(f"source name {name!r} must be a non-empty string")
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(q):
                raise ConfigError(f"source {name!r} has weight {q!r}; give a finite number")
            if q < 0:
                raise ConfigError(f"source {name!r} has a negative weight {q}")
        total = sum(self.probabilities.values())
        if total <= 0:
            raise ConfigError("the source weights sum to zero; give a source a positive weight")
        normalized = {s: float(q) / total for s, q in sorted(self.probabilities.items())}
        object.__setattr__(self, "probabilities", normalized)
        if isinstance(self.documents, bool) or not isinstance(self.documents, int):
            raise ConfigError(f"documents must be an int, got {self.documents!r}")
        if self.documents < 1:
            raise ConfigError(f"documents must be >= 1, got {self.documents}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative int, got {self.seed!r}")

    def quotas(self) -> dict[str, int]:
        """Documents per source: ``q_s * documents`` rounded by largest remainder."""
        exact = {s: q * self.documents for s, q in self.probabilities.items()}
        quotas = {s: math.floor(v) for s, v in exact.items()}
        left = self.documents - sum(quotas.values())
        by_remainder = sorted(exact, key=lambda s: (-(exact[s] - quotas[s]), s))
        for s in by_remainder[:left]:
            quotas[s] += 1
        return quotas

    def to_json(self) -> dict[str, Any]:
        return {
            "scheme": SAMPLING_SCHEME,
            "probabilities": dict(self.probabilities),
            "documents": self.documents,
            "seed": self.seed,
        }


def _rank(seed: int, doc_id: str) -> bytes:
    key = f"{seed}\0{doc_id}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, digest_size=16).digest()


@dataclass(frozen=True)
class SourceSample:
    """The sampled documents (sorted by source, then rank) with the policy and the
    realized counts; iterating yields the texts (what a trainer reads)."""

    documents: list[Document]
    policy: SourceSampling
    realized: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __iter__(self) -> Any:
        return (d.text for d in self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    def record(self) -> dict[str, Any]:
        """The policy and the realized shares: what the training record keeps."""
        return {**self.policy.to_json(), "realized": self.realized}

    def token_shares(self, tok: Tokenizer) -> dict[str, float]:
        """Each source's realized share of the tokens ``tok`` makes of the sample."""
        counts: dict[str, int] = dict.fromkeys(self.policy.probabilities, 0)
        lengths = tok.encode_batch([d.text for d in self.documents])
        for doc, ids in zip(self.documents, lengths, strict=True):
            counts[doc.source] += len(ids)
        total = sum(counts.values())
        return {s: (n / total if total else 0.0) for s, n in counts.items()}


def sample_sources(documents: Iterable[Document], policy: SourceSampling) -> SourceSample:
    """Draw ``policy.documents`` documents with the policy's source shares (see the
    module docstring for the rule); deterministic in the seed and the document IDs."""
    by_source: dict[str, list[Document]] = {s: [] for s in policy.probabilities}
    for doc in documents:
        if not isinstance(doc, Document):
            raise ConfigError(f"sample_sources takes Documents, got {type(doc).__name__}")
        if doc.source in by_source:
            by_source[doc.source].append(doc)
    quotas = policy.quotas()
    empty = sorted(s for s, docs in by_source.items() if not docs and quotas[s] > 0)
    if empty:
        raise ConfigError(
            f"the corpus has no documents from {empty}, which the policy samples; check the "
            "source names (Document.source / --source-field)"
        )
    chosen: list[Document] = []
    realized: dict[str, dict[str, Any]] = {"documents": {}, "bytes": {}, "distinct": {}}
    for source, docs in by_source.items():
        quota = quotas[source]
        ranked = sorted(docs, key=lambda d: (_rank(policy.seed, d.doc_id), d.doc_id))
        picked = ranked * (quota // len(ranked)) + ranked[: quota % len(ranked)] if docs else []
        chosen.extend(picked)
        realized["documents"][source] = len(picked)
        realized["bytes"][source] = sum(d.n_bytes for d in picked)
        realized["distinct"][source] = min(quota, len(ranked))
    n_docs = sum(realized["documents"].values())
    n_bytes = sum(realized["bytes"].values())
    realized["document_share"] = {
        s: n / n_docs if n_docs else 0.0 for s, n in realized["documents"].items()
    }
    realized["byte_share"] = {
        s: n / n_bytes if n_bytes else 0.0 for s, n in realized["bytes"].items()
    }
    return SourceSample(chosen, policy, realized)
