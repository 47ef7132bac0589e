"""Text sources: the built-in corpus harvested from the Python installation, and file inputs.

The built-in corpus is real text nobody on this project wrote, found at run time:

* ``code-py``: the standard library's ``.py`` sources (no tests, no site-packages);
* ``prose-en``: the docstrings of those modules;
* ``gettext``: the translated messages of the system's ``*.mo`` catalogs (many scripts).

Example::

    docs = builtin_corpus(max_bytes=4_000_000)
    corpus_digest(docs)  # {"documents": ..., "bytes": ..., "digest": "sha256-multiset:..."}
"""

from __future__ import annotations

import ast
import gettext
import gzip
import hashlib
import io
import json
import os
import struct
import sysconfig
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError, InvalidInputError

__all__ = [
    "SLICES",
    "Document",
    "TextFiles",
    "builtin_corpus",
    "corpus_digest",
    "iter_jsonl_texts",
    "iter_text_lines",
]

SLICES = ("code-py", "prose-en", "gettext")

# Directory names under the stdlib root that hold tests or third-party code.
_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "__pycache__"})
_SKIP_REL_DIRS = frozenset({"idlelib/idle_test"})
_LOCALE_DIRS = ("/usr/share/locale", "/usr/local/share/locale")
# GNUTranslations raises a zoo of exceptions on damaged or exotic catalogs.
_CATALOG_ERRORS = (OSError, ValueError, LookupError, struct.error, OverflowError)
_DIGEST_MOD = 2**256
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Document:
    """One text of the built-in corpus: its slice, where it came from, and the text."""

    slice: str
    source: str
    text: str


def builtin_corpus(max_bytes: int | None = None) -> list[Document]:
    """Harvest the built-in corpus, in a deterministic order.

    With ``max_bytes``, documents are taken round-robin across the slices (code-py,
    prose-en, gettext) while the UTF-8 total stays within the cap; a slice stops at its
    first document that does not fit, so each slice contributes a prefix of its sorted
    documents and harvesting stays lazy.
    """
    if max_bytes is not None and max_bytes < 0:
        raise ConfigError(f"max_bytes must be >= 0 or None, got {max_bytes}")
    sources: list[Iterator[Document]] = [_iter_code(), _iter_prose(), _iter_gettext()]
    if max_bytes is None:
        return [doc for source in sources for doc in source]

    picked: dict[str, list[Document]] = {name: [] for name in SLICES}
    total = 0
    active = list(range(len(sources)))
    while active:
        still_active = []
        for index in active:
            doc = next(sources[index], None)
            if doc is None:
                continue
            size = len(doc.text.encode("utf-8"))
            if total + size > max_bytes:
                continue
            total += size
            picked[doc.slice].append(doc)
            still_active.append(index)
        active = still_active
    # Group by slice so the result does not depend on how the budget interleaved them.
    return [doc for name in SLICES for doc in picked[name]]


def corpus_digest(docs: Iterable[Document | str]) -> dict[str, object]:
    """Order-independent digest of a multiset of texts.

    ``digest`` is ``sum(int(sha256(utf8(text)))) mod 2**256`` as 64 hex digits; the Rust
    trainer computes the same value, so keep this definition exact.
    """
    count = 0
    total_bytes = 0
    acc = 0
    for doc in docs:
        text = doc.text if isinstance(doc, Document) else doc
        data = text.encode("utf-8")
        count += 1
        total_bytes += len(data)
        acc = (acc + int.from_bytes(hashlib.sha256(data).digest(), "big")) % _DIGEST_MOD
    return {
        "documents": count,
        "bytes": total_bytes,
        "digest": f"sha256-multiset:{acc:064x}",
    }


# --------------------------------------------------------------------------- stdlib


def _stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_files() -> list[tuple[str, Path]]:
    """Sorted ``(relative posix path, path)`` of stdlib ``.py`` files outside tests."""
    root = _stdlib_root()
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        dirnames[:] = [
            d for d in dirnames if d not in _SKIP_DIRS and prefix + d not in _SKIP_REL_DIRS
        ]
        for name in filenames:
            if name.endswith(".py"):
                path = Path(dirpath) / name
                found.append((path.relative_to(root).as_posix(), path))
    found.sort()
    return found


def _iter_stdlib_sources() -> Iterator[tuple[str, str]]:
    for rel, path in _stdlib_files():
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield rel, text


def _iter_code() -> Iterator[Document]:
    for rel, text in _iter_stdlib_sources():
        if text:
            yield Document("code-py", rel, text)


def _docstrings(source: str) -> list[str]:
    """Module, class and function docstrings in source order, cleaned like ``inspect``."""
    with warnings.catch_warnings():
        # Old escape sequences in stdlib sources warn; they are still valid Python.
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
    found: list[str] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc and _is_encodable(doc):
                found.append(doc)
        # Reverse so the depth-first walk visits children in source order.
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _is_encodable(text: str) -> bool:
    # A docstring can spell a lone surrogate with an escape; such text is not UTF-8.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _iter_prose() -> Iterator[Document]:
    for rel, text in _iter_stdlib_sources():
        docs = _docstrings(text)
        if docs:
            yield Document("prose-en", rel, "\n\n".join(docs))


# --------------------------------------------------------------------------- gettext


def _catalog_paths() -> list[Path]:
    """Sorted ``*.mo`` paths under the system locale directories, each real file once."""
    roots = [*_LOCALE_DIRS, str(gettext._default_localedir)]  # type: ignore[attr-defined]
    paths: set[str] = set()
    for root in dict.fromkeys(roots):
        if os.path.isdir(root):
            paths.update(str(p) for p in Path(root).glob("*/LC_MESSAGES/*.mo"))
    unique: list[Path] = []
    seen: set[str] = set()
    for path in sorted(paths):
        # Distributions link one catalog under several names (iso_639 vs iso_639-2).
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(Path(path))
    return unique


def _catalog_messages(path: Path) -> list[str] | None:
    try:
        with open(path, "rb") as handle:
            translations = gettext.GNUTranslations(handle)
    except _CATALOG_ERRORS:
        return None
    # The catalog has no public listing; keys are msgid or (msgid, plural index).
    catalog: dict[object, str] = translations._catalog  # type: ignore[attr-defined]
    messages = []
    for key, value in catalog.items():
        msgid = key[0] if isinstance(key, tuple) else key
        if msgid == "" or not value or not _is_encodable(value):
            continue  # the header entry, or an empty translation
        messages.append(value)
    return messages


def _iter_gettext() -> Iterator[Document]:
    for path in _catalog_paths():
        messages = _catalog_messages(path)
        if messages:
            yield Document("gettext", str(path), "\n".join(messages))


# --------------------------------------------------------------------------- files


def _is_gzip(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == _GZIP_MAGIC


def _resolve_format(path: str, requested: str) -> str:
    if requested != "auto":
        return requested
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return "jsonl" if name.endswith((".jsonl", ".ndjson", ".json")) else "text"


def _iter_raw_lines(path: str) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(line number, byte offset, line bytes with its b"\\n")``, gunzipping if needed."""
    handle: io.BufferedIOBase = gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")
    offset = 0
    with handle:
        # Split on b"\n" only: a "\r" belongs to the text (CRLF lines keep "\r\n").
        for lineno, line in enumerate(handle, start=1):
            yield lineno, offset, line
            offset += len(line)


def _decode(path: str, offset: int, line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInputError(
            f"{path}: invalid UTF-8 at byte offset {offset + err.start} "
            f"(uncompressed); re-encode the file as UTF-8"
        ) from None


def iter_text_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """One document per line of a text file (gzip allowed); each line keeps its ``"\\n"``."""
    name = os.fspath(path)
    for _lineno, offset, line in _iter_raw_lines(name):
        yield _decode(name, offset, line)


def iter_jsonl_texts(path: str | os.PathLike[str], text_field: str = "text") -> Iterator[str]:
    """The ``text_field`` string of every JSON object line of a JSONL file (gzip allowed)."""
    name = os.fspath(path)
    for lineno, offset, line in _iter_raw_lines(name):
        decoded = _decode(name, offset, line)
        if not decoded.strip():
            continue  # blank lines, including a trailing one, carry no record
        try:
            record = json.loads(decoded)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"{name}:{lineno}: invalid JSON ({err.msg} at column {err.colno}); "
                f"each line must be one JSON object"
            ) from None
        if not isinstance(record, dict):
            raise ConfigError(
                f"{name}:{lineno}: expected a JSON object, got {type(record).__name__}; "
                f"each line must be one JSON object"
            )
        if text_field not in record:
            raise ConfigError(
                f"{name}:{lineno}: no field {text_field!r}; pass text_field= with the name "
                f"of the field holding the text (fields here: {', '.join(map(str, record))})"
            )
        text = record[text_field]
        if not isinstance(text, str):
            raise ConfigError(
                f"{name}:{lineno}: field {text_field!r} is {type(text).__name__}, not a string"
            )
        if not _is_encodable(text):
            raise InvalidInputError(
                f"{name}:{lineno}: field {text_field!r} contains a lone surrogate escape; "
                f"fix the record (text must be valid Unicode)"
            )
        yield text


@dataclass(frozen=True)
class TextFiles:
    """Files the Rust trainer reads directly, without building Python strings.

    ``format="auto"`` resolves per file: ``*.jsonl``/``*.ndjson``/``*.json`` (optionally
    ``.gz``) are JSONL with one object a line and the text in ``text_field``; anything
    else is plain text, one document per line (the line keeps its ``"\\n"``). Gzip is
    recognised by its magic bytes. Iterating yields the documents in file order (the
    Python fallback)::

        tp.train_bpe(tp.TextFiles(["a.jsonl.gz", "b.txt"]), vocab_size=32_000)
    """

    paths: tuple[str, ...]
    text_field: str = "text"
    format: str = "auto"
    formats: tuple[str, ...] = field(init=False)
    compressed: tuple[bool, ...] = field(init=False)

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        text_field: str = "text",
        format: str = "auto",
    ) -> None:
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        resolved = tuple(os.path.abspath(os.fspath(p)) for p in paths)
        if not resolved:
            raise ConfigError("TextFiles needs at least one path")
        if format not in ("auto", "jsonl", "text"):
            raise ConfigError(f"unknown format {format!r}; use 'auto', 'jsonl' or 'text'")
        if not isinstance(text_field, str) or not text_field:
            raise ConfigError("text_field must be a non-empty string")
        for path in resolved:
            if not os.path.isfile(path):
                raise ConfigError(f"input file not found: {path}; check the path")
        object.__setattr__(self, "paths", resolved)
        object.__setattr__(self, "text_field", text_field)
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "formats", tuple(_resolve_format(p, format) for p in resolved))
        object.__setattr__(self, "compressed", tuple(_is_gzip(p) for p in resolved))

    def __iter__(self) -> Iterator[str]:
        for path, fmt in zip(self.paths, self.formats, strict=True):
            if not os.path.isfile(path):
                raise ConfigError(f"input file not found: {path}; check the path")
            if fmt == "jsonl":
                yield from iter_jsonl_texts(path, self.text_field)
            else:
                yield from iter_text_lines(path)
