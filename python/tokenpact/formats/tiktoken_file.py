"""The ``*.tiktoken`` rank file: one ``<base64 token bytes> <rank>`` pair a line.

tiktoken's ``load_tiktoken_bpe`` accepts almost anything; this reader is strict, because
a gap or a duplicate silently shifts IDs. Ranks must be exactly ``0..n-1`` (in any line
order) and every token must be distinct and non-empty.

Example::

    ranks = read_tiktoken("cl100k_base.tiktoken")   # ranks[i] is the bytes of token i
    write_tiktoken("copy.tiktoken", ranks)          # byte-identical to tiktoken's dump
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import TYPE_CHECKING, NoReturn

from .._io import atomic_write_bytes
from ..errors import ArtifactError, ConfigError

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = ["check_exact_tiktoken", "read_tiktoken", "write_tiktoken"]

_FIX = "regenerate the file with tok.export_tiktoken(path) or tiktoken's dump_tiktoken_bpe"


def _fail(path: str, lineno: int, problem: str) -> NoReturn:
    raise ArtifactError(f"{path}:{lineno}: {problem}; {_FIX}")


def read_tiktoken(path: str | os.PathLike[str]) -> list[bytes]:
    """Read a ``*.tiktoken`` file; return the token bytes indexed by rank."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ArtifactError(f"tiktoken file not found: {name}; check the path") from None
    except OSError as err:
        raise ArtifactError(f"cannot read tiktoken file {name}: {err}") from None

    lines = data.split(b"\n")
    # Blank lines are allowed only at the end (a final newline, or a few more).
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ArtifactError(f"{name}: the tiktoken file has no tokens; {_FIX}")

    by_rank: dict[int, bytes] = {}
    rank_line: dict[int, int] = {}
    token_line: dict[bytes, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        # Any ASCII whitespace separates the fields, as in tiktoken (this also eats "\r").
        fields = raw.split()
        if len(fields) != 2:
            shown = raw[:60].decode("utf-8", "replace")
            _fail(name, lineno, f"expected '<base64 token> <rank>', got {shown!r}")
        encoded, rank_text = fields
        try:
            token = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            _fail(name, lineno, f"{encoded[:60].decode('ascii', 'replace')!r} is not base64")
        if not token:
            _fail(name, lineno, "the token is empty")
        if not rank_text.isdigit():
            _fail(
                name,
                lineno,
                f"rank {rank_text[:20].decode('ascii', 'replace')!r} is not a non-negative integer",
            )
        rank = int(rank_text)
        if rank in rank_line:
            _fail(name, lineno, f"rank {rank} was already given at line {rank_line[rank]}")
        if token in token_line:
            _fail(name, lineno, f"token {token!r} was already given at line {token_line[token]}")
        rank_line[rank] = lineno
        token_line[token] = lineno
        by_rank[rank] = token

    count = len(by_rank)
    if max(by_rank) != count - 1:
        # Distinct ranks, count of them, max >= count: some rank below max is missing.
        missing = next(r for r in range(count) if r not in by_rank)
        raise ArtifactError(
            f"{name}: ranks must be exactly 0..{count - 1} but rank {missing} is missing "
            f"(highest rank {max(by_rank)} at line {rank_line[max(by_rank)]}); {_FIX}"
        )
    return [by_rank[rank] for rank in range(count)]


def write_tiktoken(path: str | os.PathLike[str], ranks: list[bytes]) -> None:
    """Write token bytes (index = rank) atomically, in the format ``load_tiktoken_bpe`` reads."""
    seen: dict[bytes, int] = {}
    parts: list[bytes] = []
    for rank, token in enumerate(ranks):
        if not isinstance(token, (bytes, bytearray)) or not token:
            raise ConfigError(f"rank {rank}: a token must be non-empty bytes, got {token!r}")
        token = bytes(token)
        if token in seen:
            raise ConfigError(
                f"rank {rank}: token {token!r} already has rank {seen[token]}; "
                f"a tiktoken file maps each token to one rank"
            )
        seen[token] = rank
        parts.append(base64.b64encode(token) + b" " + str(rank).encode("ascii") + b"\n")
    if not parts:
        raise ConfigError("cannot write a tiktoken file without tokens")
    atomic_write_bytes(path, b"".join(parts))


def check_exact_tiktoken(tok: Tokenizer) -> None:
    """Raise ConfigError unless a ``*.tiktoken`` file (pieces by rank, nothing else) can
    reproduce ``tok``: a byte-level BPE over raw bytes, every single byte a token, no
    normalizer or text-rewriting pre-tokenizer. Anything else (WordPiece, Unigram,
    SentencePiece, normalizers) would be written as a file that encodes differently."""
    spec = tok.spec
    problem = None
    if not spec.kind.byte_level:
        model = spec.stages.model.TYPE if spec.stages else spec.kind.value
        problem = f"it is a {model} tokenizer, not a byte-level BPE"
    elif spec.normalizer is not None:
        problem = "it has a normalizer, which a tiktoken file cannot hold"
    else:
        pieces = set(tok.vocab())
        missing = [b for b in range(256) if bytes([b]) not in pieces]
        if missing:
            problem = f"{len(missing)} single bytes have no token (first {missing[0]:#04x})"
    if problem is not None:
        raise ConfigError(
            f"cannot convert to tiktoken exactly: {problem}; a *.tiktoken file holds only "
            "byte-level BPE ranks. Convert to hf (tokenizer.json) or native instead"
        )
