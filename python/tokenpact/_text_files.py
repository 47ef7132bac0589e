"""Reading text corpora: compressed text files and JSON Lines, one place for every reader.

``tokenpact.data`` (documents with IDs) and ``tokenpact.audit`` (records with slice
fields) both read their corpora through these two functions.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import ConfigError, InvalidInputError


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open a UTF-8 text file for reading, decompressing ``.gz`` and ``.zst`` by extension.

    Line endings come back untranslated (``newline=""``): callers strip ``"\\r\\n"``.
    """
    p = Path(path)
    try:
        if p.name.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", newline="")
        if p.name.endswith(".zst"):
            try:
                import zstandard
            except ImportError:
                raise ConfigError(
                    f"{p} is zstd-compressed; pip install zstandard to read it"
                ) from None
            raw = open(p, "rb")  # noqa: SIM115 - owned by the returned wrapper
            reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
            return io.TextIOWrapper(reader, encoding="utf-8", newline="")
        return open(p, encoding="utf-8", newline="")  # noqa: SIM115
    except FileNotFoundError:
        raise InvalidInputError(f"corpus file {p} does not exist") from None


def iter_lines(handle: IO[str], path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text stream; bytes that are not UTF-8 and damaged
    compressed streams are an :class:`~tokenpact.errors.InvalidInputError`."""
    lineno = 0
    lines = iter(handle)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start : exc.start + 1]
            raise InvalidInputError(
                f"{path} is not UTF-8 text ({exc.reason}: byte {bad!r} after line {lineno}); "
                "convert it to UTF-8"
            ) from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InvalidInputError(
                f"{path}: the compressed stream is damaged after line {lineno} ({exc})"
            ) from None
        lineno += 1
        yield lineno, line


def iter_json_objects(handle: IO[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines stream."""
    for lineno, line in iter_lines(handle, path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InvalidInputError(f"{path}:{lineno}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise InvalidInputError(f"{path}:{lineno}: expected a JSON object per line")
        yield lineno, record
