"""Per-ID properties of one tokenizer as numpy lookup tables.

Every per-token metric becomes ``table.property[ids]``: one vectorized gather over the
flat ID array of a whole corpus, no per-token Python objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core import ModelKind
from ..errors import UnknownTokenError

if TYPE_CHECKING:
    from ..core import Tokenizer

# SentencePiece's and Hugging Face's spelling of a byte-fallback piece.
_BYTE_FALLBACK = re.compile(rb"<0x[0-9A-Fa-f]{2}>")


def _valid_utf8(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True)
class TokenTable:
    """Lookup tables indexed by token ID (length ``vocab_size``)."""

    pieces: list[bytes]  # bytes each ID decodes to (a special token: its spelling)
    model_pieces: list[bytes]  # the model's own spelling ("<0x41>", "##ing", "\u2581the")
    byte_len: np.ndarray  # int64
    partial_utf8: np.ndarray  # bool: the piece alone is not valid UTF-8
    byte_fallback: np.ndarray  # bool: a <0xHH> byte-fallback piece
    special: np.ndarray  # bool: a control token (never produced from plain text)
    added: np.ndarray  # bool: a non-special added token (matched before the model)
    unk: np.ndarray  # bool: the unknown token

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)


def unk_ids(tok: Tokenizer) -> set[int]:
    """IDs standing for unknown input: the ``unk`` role, or the model's declared unk token."""
    found = {tok.special_tokens[c] for c, r in tok.special_token_roles.items() if r == "unk"}
    model = tok.spec.hf_model or {}
    name = model.get("unk_token")
    if tok.spec.kind is ModelKind.SENTENCEPIECE and name is None:
        name = "<unk>"
    if isinstance(name, str):
        try:
            found.add(int(tok.token_id(name)))
        except UnknownTokenError:
            pass
    return found


def token_table(tok: Tokenizer) -> TokenTable:
    """Build the lookup tables of ``tok`` (a :class:`tokenpact.Tokenizer`)."""
    size = int(tok.vocab_size)
    model = [bytes(p) for p in tok.vocab()]
    specials = {int(i): c for c, i in tok.special_tokens.items()}
    added = {int(i) for i in tok.added_tokens.values()}
    if tok.spec.kind.byte_level:
        pieces = model + [b""] * (size - len(model))
    else:
        pieces = []
        for i in range(size):
            try:
                pieces.append(tok.token_bytes(i))
            except UnknownTokenError:
                pieces.append(b"")
    model = model + [b""] * (size - len(model))
    for i, content in specials.items():
        if i < size:
            pieces[i] = content.encode("utf-8")
    special = np.zeros(size, dtype=bool)
    special[[i for i in specials if i < size]] = True
    added_mask = np.zeros(size, dtype=bool)
    added_mask[[i for i in added if i < size]] = True
    unk = np.zeros(size, dtype=bool)
    unk[[i for i in unk_ids(tok) if i < size]] = True
    fallback = np.fromiter(
        (_BYTE_FALLBACK.fullmatch(p) is not None for p in model), dtype=bool, count=size
    )
    return TokenTable(
        pieces=pieces,
        model_pieces=model,
        byte_len=np.fromiter((len(p) for p in pieces), dtype=np.int64, count=size),
        partial_utf8=np.fromiter((not _valid_utf8(p) for p in pieces), dtype=bool, count=size),
        byte_fallback=fallback & ~special,
        special=special,
        added=added_mask,
        unk=unk,
    )
