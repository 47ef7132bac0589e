"""The document record every corpus step passes along, and its stable identity.

A document keeps the ``doc_id`` it was read with for its whole life: deduplication keeps
the smallest one, splits hash its group, shards store it. When the source has no ID
field the ID is derived from the content (``sha256:`` prefix of the UTF-8 text), so the
same file always yields the same IDs whatever the reading order or worker count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice, repeat
from operator import attrgetter, eq
from typing import Any

from ..errors import InvalidInputError

CONTENT_ID_HEX = 24
"""Hex digits of the content hash kept in a derived ``doc_id`` (96 bits)."""


@dataclass(frozen=True, slots=True)
class Document:
    """One text with its stable ``doc_id``, its ``source`` and an optional ``group_id``.

    ``group_id`` ties documents that must land in the same split (translations, shards
    of one page, conversation branches); it defaults to the ``doc_id``. ``fields`` is
    the input record as read (every column, when the reader was asked to keep them):
    steps that write documents back pass the fields they do not own through unchanged.
    It takes no part in equality.
    """

    doc_id: str
    text: str
    source: str = "default"
    group_id: str | None = None
    license_class: str = "unknown"
    fields: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.doc_id, str) or not self.doc_id:
            raise InvalidInputError(f"doc_id must be a non-empty string, got {self.doc_id!r}")
        if not isinstance(self.text, str):
            raise InvalidInputError(
                f"document {self.doc_id!r} has a {type(self.text).__name__} text; "
                "decode it to str before reading"
            )
        if not isinstance(self.source, str) or not self.source:
            raise InvalidInputError(f"document {self.doc_id!r} needs a non-empty source name")

    @property
    def group(self) -> str:
        """The split owner key: ``group_id`` or, when absent, the ``doc_id``."""
        return self.group_id if self.group_id is not None else self.doc_id

    @property
    def n_bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def content_id(text: str) -> str:
    """The content-derived ID of ``text``: ``"sha256:<24 hex>"`` of its UTF-8 bytes."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return "sha256:" + digest[:CONTENT_ID_HEX]


class ContentIds:
    """Derives content IDs and numbers repeats (``#2``, ``#3``...) so IDs stay unique.

    Repeats have identical text, so which copy gets which suffix cannot change any
    result that depends on the text.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        base = content_id(text)
        count = self._seen.get(base, 0) + 1
        self._seen[base] = count
        return base if count == 1 else f"{base}#{count}"


_doc_id = attrgetter("doc_id")


def sort_by_id(documents: Iterable[Document]) -> list[Document]:
    """Documents in ``doc_id`` order; a repeated ``doc_id`` is an error."""
    return sort_documents(documents)[0]


def sort_documents(documents: Iterable[Document]) -> tuple[list[Document], list[str]]:
    """:func:`sort_by_id` and the sorted documents' IDs (read once for the check)."""
    items = list(documents)
    # The checks run as map() over builtins (no Python frame per document): this is
    # on the critical path of encode_dataset, beside the encoder.
    if not all(map(isinstance, items, repeat(Document))):
        i, d = next((i, d) for i, d in enumerate(items) if not isinstance(d, Document))
        raise InvalidInputError(
            f"item {i} is a {type(d).__name__}, not a Document; wrap texts with "
            "Document(doc_id, text) or read them with read_documents()"
        )
    ordered = sorted(items, key=_doc_id)
    ids = list(map(_doc_id, ordered))
    if any(map(eq, ids, islice(ids, 1, None))):
        dup = next(a for a, b in zip(ids, ids[1:], strict=False) if a == b)
        raise InvalidInputError(
            f"doc_id {dup!r} occurs twice; give every document a unique ID, read with "
            "duplicate_ids='number' to rename the repeats ID#2, ID#3..., or derive IDs "
            "from content"
        )
    return ordered, ids


def iter_texts(documents: Iterable[Document]) -> Iterator[str]:
    for d in documents:
        yield d.text


def output_record(
    doc: Document,
    *,
    text_field: str = "text",
    id_field: str | None = "id",
    source_field: str | None = None,
    group_field: str | None = None,
) -> dict[str, Any]:
    """The JSON Lines record a step writes for ``doc``: its input fields unchanged, with
    only the fields the step owns set (the text, the ID, and the source and group when
    their fields were named). A document read without its fields gets
    ``{"id", "text", "source"}`` (and ``"group"``)."""
    if doc.fields is None:
        record: dict[str, Any] = {"id": doc.doc_id, "text": doc.text, "source": doc.source}
        if doc.group_id is not None:
            record["group"] = doc.group_id
        return record
    record = dict(doc.fields)
    record[text_field] = doc.text
    record[id_field or "id"] = doc.doc_id
    if source_field is not None:
        record[source_field] = doc.source
    if group_field is not None and doc.group_id is not None:
        record[group_field] = doc.group_id
    return record
