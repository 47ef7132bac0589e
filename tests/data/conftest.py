"""Real text for the data tests: the built-in corpus (stdlib code, docstrings, gettext)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpact.corpus import builtin_corpus
from tokenpact.data import Document


@pytest.fixture(scope="session")
def real_docs() -> list[Document]:
    """About 400 real documents cut from the built-in corpus, many languages and scripts.

    Long files are cut into paragraphs so near duplicates (licence headers, repeated
    messages) occur naturally.
    """
    out: list[Document] = []
    for doc in builtin_corpus(max_bytes=400_000):
        for k, para in enumerate(doc.text.split("\n\n")):
            if para.strip():
                out.append(Document(f"{doc.source}#{k}", para, source=doc.slice))
    return out[:400]


SHARED_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def shared_corpus_file(name: str) -> Path:
    """A file of ../shared/corpus, or a clean skip when this checkout has none."""
    path = SHARED_CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared benchmark corpus sits beside the checkout)")
    return path


@pytest.fixture(scope="session")
def bench_mixed_docs() -> list[Document]:
    """Up to 40 records of each bench-mixed slice (prose, code, man pages, fortunes)."""
    from tokenpact.data import read_documents

    per_slice: dict[str, list[Document]] = {}
    for doc in read_documents(shared_corpus_file("bench-mixed.jsonl.gz"), source_field="slice"):
        bucket = per_slice.setdefault(doc.source, [])
        if len(bucket) < 40:
            bucket.append(doc)
        if len(per_slice) >= 6 and all(len(b) >= 40 for b in per_slice.values()):
            break
    return [d for bucket in per_slice.values() for d in bucket]


@pytest.fixture(scope="session")
def gettext_records() -> list[dict[str, str]]:
    """Every parallel-gettext record (``{"id", "domain", "en", "<lang>": ...}``)."""
    import gzip
    import json

    path = shared_corpus_file("parallel-gettext.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]
