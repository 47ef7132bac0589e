"""Real text for the data tests: the built-in corpus (stdlib code, docstrings, gettext)."""

from __future__ import annotations

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
