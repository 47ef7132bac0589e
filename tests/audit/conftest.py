"""Fixtures of the audit tests: real harvested text with slices, small trained tokenizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tokenpact.audit.corpus import AuditCorpus

SHARED_CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


@pytest.fixture(scope="session")
def docs_corpus() -> AuditCorpus:
    """~300 kB of the built-in corpus (stdlib code, prose, gettext catalogs) with slices."""
    from tokenpact.corpus import builtin_corpus

    docs = builtin_corpus(max_bytes=300_000)
    if len(docs) < 10:
        pytest.skip("the built-in corpus harvested fewer than 10 documents here")
    return AuditCorpus.from_records(
        ({"text": d.text, "slice": d.slice, "source": d.source} for d in docs), name="builtin"
    )


@pytest.fixture(scope="session")
def small_tok(tp: Any, docs_corpus: AuditCorpus) -> Any:
    return tp.train_bpe(docs_corpus.texts, vocab_size=700, special_tokens=["<|endoftext|>"])


def shared_corpus_file(name: str) -> Path:
    path = SHARED_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{name} is not at {path} (the shared corpus sits beside the checkout)")
    return path
