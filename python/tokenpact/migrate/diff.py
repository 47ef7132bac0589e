"""Classify a tokenizer transition and measure what it changes: what a
checkpoint can reuse.

Classes, from the cheapest to the most expensive to adopt:

- ``byte-identical``: same release hash (same files, same behaviour): redeploy.
- ``repackage``: files differ but the behaviour is the same: equal semantic hash, or an
  equal ID -> bytes map, merges, specials and pre-tokenizer with every golden case and
  every corpus document encoding identically. IDs and model rows are reusable.
- ``template-only``: the tokenizer behaves the same but the chat template changed:
  rebuild template-derived data and caches.
- ``append-only``: the old vocabulary is an exact ID prefix (the prefix proof): resize
  the checkpoint, initialize the new rows, re-encode the data, adapt.
- ``incompatible``: anything else (IDs moved, merges re-ranked, normalizer changed).

Example::

    report = tp.migrate.diff(old, new, texts)
    report.transition, report.compression_gain, report.unreachable_ids
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contract import golden as golden_vectors
from ..contract import template_hash
from ..core import Tokenizer
from ..errors import ConfigError, TokenpactError
from .decompose import id_space, prefix_problems

TRANSITIONS = ("byte-identical", "repackage", "template-only", "append-only", "incompatible")


@dataclass
class TransitionReport:
    transition: str
    old_semantic_hash: str
    new_semantic_hash: str
    old_release_hash: str | None
    new_release_hash: str | None
    template_changed: bool
    prefix_proof: dict[str, Any]
    golden_differences: list[str]
    documents: int = 0
    changed_documents: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    old_tokens: int = 0
    new_tokens: int = 0
    text_bytes: int = 0
    new_ids: list[dict[str, Any]] = field(default_factory=list)
    unreachable_ids: list[int] = field(default_factory=list)

    @property
    def unseen_ids(self) -> list[int]:
        """New non-control IDs that no corpus document produced (``unreachable_ids`` is
        the older name): unseen in this corpus, which is not the audit's proof that no
        text can produce them."""
        return self.unreachable_ids

    @property
    def measured(self) -> bool:
        """Whether a corpus was measured (the corpus figures mean nothing otherwise)."""
        return self.documents > 0

    @property
    def compression_gain(self) -> float:
        """Fraction of tokens saved on the corpus: ``1 - new_tokens / old_tokens``."""
        return 0.0 if self.old_tokens == 0 else 1.0 - self.new_tokens / self.old_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "transition": self.transition,
            "hashes": {
                "old_semantic": self.old_semantic_hash,
                "new_semantic": self.new_semantic_hash,
                "old_release": self.old_release_hash,
                "new_release": self.new_release_hash,
            },
            "template_changed": self.template_changed,
            "prefix_proof": self.prefix_proof,
            "golden_differences": self.golden_differences,
            "corpus": {
                "measured": self.measured,
                "documents": self.documents,
                "changed_documents": self.changed_documents,
                "examples": self.examples,
                "old_tokens": self.old_tokens,
                "new_tokens": self.new_tokens,
                "bytes": self.text_bytes,
                "compression_gain": round(self.compression_gain, 6),
                "old_bytes_per_token": _ratio(self.text_bytes, self.old_tokens),
                "new_bytes_per_token": _ratio(self.text_bytes, self.new_tokens),
            },
            "new_ids": self.new_ids,
            "unseen_ids": self.unreachable_ids,
            "unreachable_ids": self.unreachable_ids,
        }


def _ratio(a: int, b: int) -> float | None:
    return None if b == 0 else round(a / b, 6)


def _release(tok: Tokenizer) -> str | None:
    try:
        return tok.release_hash
    except TokenpactError:
        return None  # built in memory from records: no release files to hash


def _same_behaviour_tables(old: Tokenizer, new: Tokenizer) -> bool:
    return id_space(old) == id_space(new) and not prefix_problems(old, new)


def _golden_differences(old: Tokenizer, new: Tokenizer) -> list[str]:
    report = golden_vectors.verify(new, golden_vectors.generate(old), check_hash=False)
    return [f"{c.name}: {c.message}" for c in report.failures]


def _first_difference(a: list[int], b: list[int]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def diff(
    old: Tokenizer,
    new: Tokenizer,
    corpus: Iterable[str] = (),
    *,
    old_template: Mapping[str, Any] | None = None,
    new_template: Mapping[str, Any] | None = None,
    examples: int = 5,
) -> TransitionReport:
    """Classify the transition ``old -> new`` and measure it on ``corpus`` (see module)."""
    if isinstance(corpus, str):
        raise ConfigError("corpus must be an iterable of strings, not one string; pass [text]")
    texts = list(corpus)
    problems = prefix_problems(old, new)
    proof = {
        "holds": not problems,
        "old_ids": id_space(old),
        "new_ids": id_space(new),
        "old_merges": len(old.merges),
        "new_merges": len(new.merges),
        "problems": problems,
    }
    goldens = _golden_differences(old, new)
    old_ids, new_ids = [], []
    if texts:
        old_ids = old.encode_batch(texts)
        new_ids = new.encode_batch(texts)
    changed = [i for i, (a, b) in enumerate(zip(old_ids, new_ids, strict=True)) if a != b]
    report = TransitionReport(
        transition="incompatible",
        old_semantic_hash=old.semantic_hash,
        new_semantic_hash=new.semantic_hash,
        old_release_hash=_release(old),
        new_release_hash=_release(new),
        template_changed=template_hash(old_template) != template_hash(new_template),
        prefix_proof=proof,
        golden_differences=goldens,
        documents=len(texts),
        changed_documents=len(changed),
        old_tokens=sum(len(x) for x in old_ids),
        new_tokens=sum(len(x) for x in new_ids),
        text_bytes=sum(len(t.encode("utf-8", "surrogatepass")) for t in texts),
    )
    for i in changed[:examples]:
        a, b = old_ids[i], new_ids[i]
        at = _first_difference(a, b)
        report.examples.append(
            {
                "document": i,
                "text": texts[i][:120],
                "old_tokens": len(a),
                "new_tokens": len(b),
                "first_difference": at,
                "old_ids": a[at : at + 8],
                "new_ids": b[at : at + 8],
            }
        )
    report.transition = _classify(old, new, report, problems, goldens, bool(changed))
    if report.transition == "append-only":
        _new_id_usage(old, new, new_ids, report)
    return report


def _classify(
    old: Tokenizer,
    new: Tokenizer,
    report: TransitionReport,
    problems: list[str],
    goldens: list[str],
    corpus_changed: bool,
) -> str:
    same_tokenizer = report.old_semantic_hash == report.new_semantic_hash or (
        _same_behaviour_tables(old, new) and not goldens and not corpus_changed
    )
    if same_tokenizer:
        if report.template_changed:
            return "template-only"
        if (
            report.old_release_hash is not None
            and report.old_release_hash == report.new_release_hash
        ):
            return "byte-identical"
        return "repackage"
    if not problems and id_space(new) > id_space(old):
        return "append-only"
    return "incompatible"


def _new_id_usage(
    old: Tokenizer, new: Tokenizer, new_ids: list[list[int]], report: TransitionReport
) -> None:
    flat = np.fromiter((i for ids in new_ids for i in ids), dtype=np.int64)
    size = id_space(new)
    counts = np.bincount(flat, minlength=size) if flat.size else np.zeros(size, np.int64)
    specials = set(new.special_tokens.values())
    for i in range(id_space(old), size):
        try:
            piece = new.token_bytes(i)
        except TokenpactError:
            piece = b""
        report.new_ids.append(
            {"id": i, "piece": piece.decode("utf-8", "replace"), "count": int(counts[i])}
        )
        # A control token is inserted by templates, never produced from text: it is
        # reachable by construction. Everything else must occur to ever be trained.
        if counts[i] == 0 and i not in specials:
            report.unreachable_ids.append(i)
