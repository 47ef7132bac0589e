"""The document IDs of a ``corpus.json``, read as a stream in bounded memory.

A dataset's ``corpus.json`` is one canonical JSON line listing every document record; at
10^7 documents it is gigabytes, and ``json.loads`` of it builds every record at once (tens
of gigabytes of dicts). :func:`document_ids` walks the text instead: it holds one window
of the file (about a block) and one record at a time, decodes each record of the
top-level ``"documents"`` array with the C scanner (``JSONDecoder.raw_decode``), and
yields its ``document_id``; every other value (``cleaning``'s dropped records included)
is walked the same way and dropped. Memory is bounded by the block size and the largest
single scalar or record (``MAX_VALUE_CHARS``), not by the file.

The input is untrusted: anything that is not a JSON object with a ``"documents"`` array
of records with string ``document_id``s (malformed JSON, invalid UTF-8, nesting deeper
than ``MAX_JSON_DEPTH``, a key given twice at the top level, text after the object, a
value larger than the bound) is a :class:`~tokenpact.errors.ContractError`.

>>> ids = document_ids(iter([b'{"documents":[{"document_id":"a"}],"version":1}']), "c")
>>> list(ids)
['a']
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

from ..contract.canonical import nesting_depth
from ..errors import ContractError
from .corpus_manifest import MAX_JSON_DEPTH

__all__ = ["MAX_VALUE_CHARS", "document_ids"]

# No scalar or document record we write comes near this; a longer one is refused rather
# than buffered.
MAX_VALUE_CHARS = 64 << 20
# How near the window's end a decode is redone with the next block: a cut value's
# error or a cut number's end falls within this many characters of it.
_TAIL = 16
_BATCH_CHARS = 1 << 18  # the records decoded in one call: at most about this much text
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Window:
    """The undecoded part of a UTF-8 byte stream: ``text[pos:]``, refilled a block at a
    time, so the text before ``pos`` is dropped as the walk moves on."""

    def __init__(self, chunks: Iterator[bytes], where: str) -> None:
        self._chunks = chunks
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self.where = where
        self.text = ""
        self.pos = 0
        self.eof = False

    def error(self, why: str) -> ContractError:
        return ContractError(f"{self.where} is not a corpus manifest we wrote ({why}); re-encode")

    def more(self, grow: bool = False) -> bool:
        """Append the next block (``grow``: blocks until the undecoded text has doubled,
        so a value that spans many blocks is decoded a few times, not once a block);
        False at the end of the stream."""
        if self.eof:
            return False
        held = len(self.text) - self.pos
        if held > MAX_VALUE_CHARS:
            raise self.error(f"a value longer than {MAX_VALUE_CHARS} characters")
        new: list[str] = []
        wanted = max(held, 1) if grow else 1
        try:
            while wanted > 0:
                chunk = next(self._chunks, None)
                if chunk is None:
                    self.eof = True
                    new.append(self._utf8.decode(b"", final=True))
                    break
                new.append(self._utf8.decode(chunk))
                wanted -= len(new[-1]) if grow else 1
        except UnicodeDecodeError as exc:
            raise self.error(f"not UTF-8: {exc.reason}") from None
        self.text = self.text[self.pos :] + "".join(new)
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the stream)."""
        while True:
            end = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
            self.pos = end
            if end < len(self.text):
                return self.text[end]
            if not self.more():
                return ""

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            raise self.error(f"expected {char!r} at {found!r}" if found else f"{char!r} missing")
        self.pos += 1

    def value(self) -> Any:
        """Decode the next value (a scalar or one record) with the C scanner."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                # A value cut by the window's end fails at (or, for a string, from its
                # opening quote towards) the end; an error before that is in the text.
                cut = exc.pos >= len(self.text) - _TAIL or exc.msg.startswith("Unterminated")
                if cut and self.more(grow=True):
                    continue
                raise self.error(exc.msg) from None
            except RecursionError:
                raise self.error("nested too deeply") from None
            # A number that ends near the window's end ("1" of "1.5", "1e" of "1e-05")
            # may go on in the next block.
            if end > len(self.text) - _TAIL and self.more(grow=True):
                continue
            self.pos = end
            return value


def _skip(window: _Window, depth: int) -> None:
    """Walk past one value ``depth`` levels inside the manifest, holding at most a
    window's worth of it at a time."""
    opening = window.peek()
    if opening not in ("{", "["):
        window.value()
        return
    if depth >= MAX_JSON_DEPTH:  # the manifest's object is one level, this one another
        raise window.error(f"nests deeper than {MAX_JSON_DEPTH} levels")
    try:  # a container that ends in the window: one C call
        value, end = _DECODER.raw_decode(window.text, window.pos)
    except (ValueError, RecursionError):
        pass  # it goes on past the window (or is malformed): walk it
    else:
        if depth + nesting_depth(value) > MAX_JSON_DEPTH:
            raise window.error(f"nests deeper than {MAX_JSON_DEPTH} levels")
        window.pos = end
        return
    window.pos += 1
    closing = "}" if opening == "{" else "]"
    if window.peek() == closing:
        window.pos += 1
        return
    while True:
        if opening == "{":
            if not isinstance(window.value(), str):
                raise window.error("an object key that is not a string")
            window.expect(":")
            _skip(window, depth + 1)
        elif _batch(window) is None:
            _skip(window, depth + 1)
        following = window.peek()
        window.pos += 1
        if following == closing:
            return
        if following != ",":
            raise window.error(f"expected ',' or {closing!r} at {following!r}")


def _batch(window: _Window) -> list[Any] | None:
    """The records from the window's position up to the last ``},{`` in the next
    ``_BATCH_CHARS``, decoded in one C call (records one at a time cost a Python round
    per record); None when there is no such cut or the text up to it is not a list of
    values (the cut was inside a string: the caller decodes one record).

    Sound: the text from a value's start is read the same way whatever follows it, so
    when ``[`` + text up to the cut + ``]`` is a JSON array, the cut ends a value of the
    documents array in the whole text too."""
    text, start = window.text, window.pos
    cut = text.rfind("},{", start, start + _BATCH_CHARS)
    if cut <= start:
        return None
    try:
        batch = json.loads("[" + text[start : cut + 1] + "]")
    except (ValueError, RecursionError):
        return None
    window.pos = cut + 1
    return batch  # type: ignore[no-any-return]


def _records(window: _Window) -> Iterator[str]:
    """The ``document_id`` of each record of the ``documents`` array at the window."""
    window.expect("[")
    if window.peek() == "]":
        window.pos += 1
        return
    while True:
        for record in _batch(window) or (window.value(),):
            ident = record.get("document_id") if isinstance(record, dict) else None
            if not isinstance(ident, str):
                raise window.error("a document record without a string document_id")
            yield ident
        following = window.peek()
        window.pos += 1
        if following == "]":
            return
        if following != ",":
            raise window.error(f"expected ',' or ']' at {following!r}")


def document_ids(chunks: Iterator[bytes], where: str) -> Iterator[str]:
    """The ``document_id`` of every record of the corpus manifest whose UTF-8 bytes
    ``chunks`` yields, in order; ``where`` names the file in errors. The whole stream is
    checked to be one JSON object (and whitespace) before the iterator ends."""
    window = _Window(chunks, where)
    window.expect("{")
    seen: set[str] = set()
    if window.peek() == "}":
        window.pos += 1
    else:
        while True:
            key = window.value()
            if not isinstance(key, str):
                raise window.error("an object key that is not a string")
            if key in seen:
                raise window.error(f"the key {key!r} twice")
            seen.add(key)
            window.expect(":")
            if key == "documents":
                yield from _records(window)
            else:
                _skip(window, 1)
            following = window.peek()
            window.pos += 1
            if following == "}":
                break
            if following != ",":
                raise window.error(f"expected ',' or '}}' at {following!r}")
    if window.peek():
        raise window.error("text after the manifest object")
    if "documents" not in seen:
        raise window.error("no documents list")
