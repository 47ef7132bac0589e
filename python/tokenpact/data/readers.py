"""Streaming corpus readers: plain text, JSON Lines (plain, ``.gz``, ``.zst``), Parquet and
Hugging Face ``datasets`` Arrow directories (``save_to_disk`` output).

Every reader yields :class:`Document` records one at a time (Parquet and Arrow in record
batches), so memory stays bounded by one batch. A missing ID field yields content IDs.

>>> docs = read_documents("corpus.jsonl.gz", text_field="text", id_field="id")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .._text_files import iter_json_objects, iter_lines, open_text
from ..errors import ConfigError, InvalidInputError
from .documents import ContentIds, Document

FORMATS = ("text", "lines", "jsonl", "parquet", "hf-arrow")
_BATCH_ROWS = 8192

PathLike = str | os.PathLike[str]


def sniff_format(path: PathLike) -> str:
    """The reader format of ``path`` from its name (or layout, for a directory)."""
    p = Path(path)
    if p.is_dir():
        if (p / "state.json").exists() or (p / "dataset_dict.json").exists():
            return "hf-arrow"
        raise ConfigError(
            f"{p} is a directory but not a Hugging Face datasets directory (no state.json "
            "or dataset_dict.json); pass the files inside it instead"
        )
    name = p.name.lower()
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith(".arrow"):
        return "hf-arrow"
    return "text"


def _progress(items: Iterator[Document], enabled: bool, desc: str) -> Iterator[Document]:
    if not enabled:
        yield from items
        return
    from tqdm import tqdm

    with tqdm(desc=desc, unit="doc", leave=False) as bar:
        for item in items:
            bar.update(1)
            yield item


class _Fields:
    """Field names and the per-record conversion shared by the structured readers."""

    def __init__(
        self,
        *,
        text_field: str,
        id_field: str | None,
        source: str | None,
        source_field: str | None,
        group_field: str | None,
        where: str,
    ) -> None:
        self.text_field = text_field
        self.id_field = id_field
        self.source = source
        self.source_field = source_field
        self.group_field = group_field
        self.where = where
        self.content_ids = ContentIds()
        self.seen_ids: dict[str, int] | None = None  # set when repeats are numbered
        self.keep_fields = False  # attach every column of the record to its Document

    def document(self, record: dict[str, Any], at: str) -> Document:
        text = record.get(self.text_field)
        if not isinstance(text, str):
            got = "missing" if text is None else type(text).__name__
            raise InvalidInputError(
                f"{self.where} {at}: text field {self.text_field!r} is {got}; pass "
                "text_field= naming the string column"
            )
        doc_id: Any = record.get(self.id_field) if self.id_field else None
        if doc_id is None:
            doc_id = self.content_ids(text)
        elif not isinstance(doc_id, str):
            doc_id = str(doc_id)
        if self.seen_ids is not None:
            count = self.seen_ids.get(doc_id, 0) + 1
            self.seen_ids[doc_id] = count
            if count > 1:
                doc_id = f"{doc_id}#{count}"
        source = self.source or "default"
        if self.source_field is not None and record.get(self.source_field) is not None:
            # Interned: a few source names shared by many documents are then one object
            # each, not one per document (memory, and every later pass over the sources
            # reads a few objects instead of missing the cache on each document's).
            source = sys.intern(str(record[self.source_field]))
        group = None
        if self.group_field is not None and record.get(self.group_field) is not None:
            group = str(record[self.group_field])
        kept = record if self.keep_fields else None
        return Document(doc_id=doc_id, text=text, source=source, group_id=group, fields=kept)

    def columns(self) -> list[str] | None:
        """The columns to read (``None``: all of them, when the fields are kept)."""
        if self.keep_fields:
            return None
        names = [self.text_field, self.id_field, self.source_field, self.group_field]
        return list(dict.fromkeys(n for n in names if n))


def _read_jsonl(path: Path, fields: _Fields) -> Iterator[Document]:
    with open_text(path) as handle:
        for lineno, record in iter_json_objects(handle, path):
            yield fields.document(record, f"line {lineno}")


def _read_text(path: Path, fields: _Fields, *, per_line: bool) -> Iterator[Document]:
    source = fields.source or "default"
    with open_text(path) as handle:
        if not per_line:
            text = "".join(line for _, line in iter_lines(handle, path))
            yield Document(doc_id=path.name, text=text, source=source)
            return
        for lineno, line in iter_lines(handle, path):
            text = line.rstrip("\r\n")
            if text:
                yield Document(doc_id=f"{path.name}:{lineno}", text=text, source=source)


def _record_batches_to_docs(
    batches: Iterable[Any], fields: _Fields, where: str
) -> Iterator[Document]:
    row = 0
    for batch in batches:
        for record in batch.to_pylist():
            row += 1
            yield fields.document(record, f"{where} row {row}")


def _read_parquet(path: Path, fields: _Fields) -> Iterator[Document]:
    pq = _pyarrow_module("parquet")
    try:
        handle = pq.ParquetFile(path)
    except FileNotFoundError:
        raise InvalidInputError(f"corpus file {path} does not exist") from None
    except Exception as exc:  # pyarrow raises ArrowInvalid and friends
        raise InvalidInputError(f"{path} is not a readable Parquet file: {exc}") from None
    available = set(handle.schema_arrow.names)
    wanted = fields.columns()
    columns = None if wanted is None else [c for c in wanted if c in available]
    batches = handle.iter_batches(batch_size=_BATCH_ROWS, columns=columns)
    yield from _record_batches_to_docs(batches, fields, str(path))


def _arrow_files(path: Path) -> list[Path]:
    """The ``.arrow`` files of a ``save_to_disk`` directory (all splits of a DatasetDict)."""
    if path.is_file():
        return [path]
    dict_file = path / "dataset_dict.json"
    if dict_file.exists():
        splits = json.loads(dict_file.read_text(encoding="utf-8")).get("splits", [])
        return [f for split in splits for f in _arrow_files(path / split)]
    state_file = path / "state.json"
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        names = [entry["filename"] for entry in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(
            f"{state_file} is not a datasets state file ({exc}); save the dataset with "
            "Dataset.save_to_disk()"
        ) from None
    for name in names:
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise InvalidInputError(f"{state_file} names a data file outside the directory")
    return [path / name for name in names]


def _read_hf_arrow(path: Path, fields: _Fields) -> Iterator[Document]:
    ipc = _pyarrow_module("ipc")
    for file in _arrow_files(path):
        try:
            with open(file, "rb") as handle:
                reader = ipc.open_stream(handle)
                named = fields.columns()
                wanted = (
                    list(reader.schema.names)
                    if named is None
                    else [c for c in named if c in reader.schema.names]
                )

                def project(r: Any, cols: list[str] = wanted) -> Iterator[Any]:
                    for b in r:
                        yield b.select(cols)

                yield from _record_batches_to_docs(project(reader), fields, str(file))
        except FileNotFoundError:
            raise InvalidInputError(f"Arrow data file {file} does not exist") from None
        except OSError as exc:
            raise InvalidInputError(f"{file} is not an Arrow stream file: {exc}") from None


def _pyarrow_module(name: str) -> Any:
    try:
        import importlib

        return importlib.import_module(f"pyarrow.{name}")
    except ImportError:
        raise ConfigError(
            "reading Parquet or Arrow files needs pyarrow; pip install pyarrow"
        ) from None


def read_documents(
    paths: PathLike | Iterable[PathLike],
    *,
    format: str | None = None,
    text_field: str = "text",
    id_field: str | None = "id",
    source: str | None = None,
    source_field: str | None = None,
    group_field: str | None = None,
    duplicate_ids: str = "keep",
    keep_fields: bool = False,
    progress: bool = False,
) -> Iterator[Document]:
    """Stream the documents of one or more files (or ``datasets`` directories).

    ``format`` is sniffed from each name when omitted (see :data:`FORMATS`): ``text``
    reads a whole file as one document, ``lines`` one document per non-empty line.
    ``id_field=None`` (or a missing field) derives IDs from content; ``source`` names the
    source of every document unless ``source_field`` names a column holding it.
    Real corpora repeat IDs (a quotation collected twice keeps its content hash);
    ``duplicate_ids="number"`` renames the repeats ``ID#2``, ``ID#3``... in reading
    order, while the default ``"keep"`` leaves them for the pipeline to refuse.
    ``keep_fields=True`` attaches each input record (every column) to its document as
    :attr:`Document.fields`, so a step that writes documents back can pass them through.
    """
    if duplicate_ids not in ("keep", "number"):
        raise ConfigError(f"duplicate_ids must be 'keep' or 'number', got {duplicate_ids!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if format is not None and format not in FORMATS:
        raise ConfigError(f"unknown corpus format {format!r}; use one of {FORMATS}")
    path_list = [Path(p) for p in paths]
    readers: dict[str, Callable[[Path, _Fields], Iterator[Document]]] = {
        "jsonl": _read_jsonl,
        "parquet": _read_parquet,
        "hf-arrow": _read_hf_arrow,
        "text": lambda p, f: _read_text(p, f, per_line=False),
        "lines": lambda p, f: _read_text(p, f, per_line=True),
    }

    def generate() -> Iterator[Document]:
        # One counter for the whole call: the same text in two files gets #2, not a clash.
        content_ids = ContentIds()
        seen: dict[str, int] | None = {} if duplicate_ids == "number" else None
        for path in path_list:
            fmt = format or sniff_format(path)
            fields = _Fields(
                text_field=text_field,
                id_field=id_field,
                source=source,
                source_field=source_field,
                group_field=group_field,
                where=str(path),
            )
            fields.content_ids = content_ids
            fields.seen_ids = seen
            fields.keep_fields = keep_fields
            yield from readers[fmt](path, fields)

    return _progress(generate(), progress, "reading")
