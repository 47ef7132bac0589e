"""Exact deduplication under a declared canonicalization.

The dedup key is ``SHA-256(canonicalize_for_dedup(text))``. Canonicalization only decides
which documents count as copies; the kept document's original text is what later steps
see. Each option is named so that a corpus manifest can record exactly what was folded.

>>> canonicalize_for_dedup("  The  CAT\\tsleeps. ", Canonicalization(case="fold"))
'the cat sleeps.'
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import ConfigError
from .documents import Document, sort_by_id

UNICODE_FORMS = ("none", "NFC", "NFKC", "NFD", "NFKD")
WHITESPACE_POLICIES = ("keep", "strip", "collapse")
CASE_POLICIES = ("keep", "lower", "fold")
_SPACE_RUN = re.compile(r"\s+")


@dataclass(frozen=True)
class Canonicalization:
    """How text is folded before hashing: Unicode form, whitespace and case.

    ``whitespace="collapse"`` turns every run of whitespace into one space and strips
    the ends; ``"strip"`` only strips the ends. ``case="fold"`` is ``str.casefold``.
    """

    unicode_form: str = "NFC"
    whitespace: str = "collapse"
    case: str = "keep"

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.unicode_form, UNICODE_FORMS, "unicode_form"),
            (self.whitespace, WHITESPACE_POLICIES, "whitespace"),
            (self.case, CASE_POLICIES, "case"),
        ):
            if value not in allowed:
                raise ConfigError(f"unknown {what} {value!r}; use one of {allowed}")

    def to_json(self) -> dict[str, str]:
        return {"unicode_form": self.unicode_form, "whitespace": self.whitespace, "case": self.case}

    @property
    def name(self) -> str:
        """A compact label for manifests: ``nfc+collapse+keep``."""
        return f"{self.unicode_form.lower()}+{self.whitespace}+{self.case}"


def canonicalize_for_dedup(text: str, policy: Canonicalization | None = None) -> str:
    """Fold ``text`` by ``policy`` (default: NFC, collapsed whitespace, case kept)."""
    p = policy or Canonicalization()
    if p.unicode_form != "none":
        text = unicodedata.normalize(p.unicode_form, text)  # type: ignore[arg-type]
    if p.whitespace == "collapse":
        text = _SPACE_RUN.sub(" ", text).strip()
    elif p.whitespace == "strip":
        text = text.strip()
    if p.case == "lower":
        text = text.lower()
    elif p.case == "fold":
        text = text.casefold()
    return text


def exact_dedup_key(text: str, policy: Canonicalization | None = None) -> bytes:
    """The 32-byte SHA-256 of the canonical text: equal keys mean exact duplicates."""
    canonical = canonicalize_for_dedup(text, policy)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class ExactDedupResult:
    """Kept documents (``doc_id`` order) and, for each removed ``doc_id``, the kept one."""

    kept: list[Document]
    duplicate_of: dict[str, str] = field(default_factory=dict)
    removed: list[Document] = field(default_factory=list)
    policy: Canonicalization = field(default_factory=Canonicalization)


def exact_dedup(
    documents: Iterable[Document], *, policy: Canonicalization | None = None
) -> ExactDedupResult:
    """Drop exact duplicates; the smallest ``doc_id`` of each key survives.

    Documents are ordered by ``doc_id`` first, so the result depends neither on the input
    order nor on how the input was split between workers.
    """
    p = policy or Canonicalization()
    first: dict[bytes, str] = {}
    kept: list[Document] = []
    removed: list[Document] = []
    duplicate_of: dict[str, str] = {}
    for doc in sort_by_id(documents):
        key = exact_dedup_key(doc.text, p)
        owner = first.setdefault(key, doc.doc_id)
        if owner == doc.doc_id:
            kept.append(doc)
        else:
            removed.append(doc)
            duplicate_of[doc.doc_id] = owner
    return ExactDedupResult(kept=kept, duplicate_of=duplicate_of, removed=removed, policy=p)
