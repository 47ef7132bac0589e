"""The names users of Hugging Face ``tokenizers`` and ``tiktoken`` reach for.

``get_vocab()``, ``token_to_id`` / ``id_to_token``, ``decode_batch`` and ``n_vocab``,
with those libraries' meanings, on top of tokenpact's own byte-level API (``vocab()``,
``token_bytes``, ``token_id``). :class:`~tokenpact.core.Tokenizer` binds these functions
as its methods (no extra call per use).

Token strings follow Hugging Face: a byte-level BPE piece is spelled in GPT-2's
byte-to-unicode alphabet (``"Ġthe"``), other pieces as their UTF-8 text, special and
added tokens as their content.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from ..errors import UnknownTokenError
from .byte_map import byte_encoder

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


def token_strings(tok: Tokenizer) -> list[str | None]:
    """The token string of every ID (None for an ID not in use); the tokenizer caches it
    as ``Tokenizer._token_strings``."""
    pieces = [bytes(p) for p in tok._core.vocab()]
    if tok.spec.kind.byte_level:
        enc = byte_encoder()
        strings: list[str | None] = ["".join(enc[b] for b in p) for p in pieces]
    else:
        strings = [p.decode("utf-8", "replace") for p in pieces]
    strings.extend([None] * (tok.vocab_size - len(strings)))
    for content, i in tok._gated().items():
        strings[i] = content
    return strings


def get_vocab(tok: Tokenizer) -> dict[str, int]:
    """Every token string and its ID, special and added tokens included (HF's
    ``get_vocab(with_added_tokens=True)``)."""
    vocab: dict[str, int] = {}
    for i, s in enumerate(tok._token_strings):
        if s is not None:
            vocab.setdefault(s, i)
    return vocab


def token_to_id(tok: Tokenizer, token: str) -> int | None:
    """ID of a token string (HF spelling), or None when it is not one token."""
    return tok._token_index.get(token)


def id_to_token(tok: Tokenizer, token_id: int) -> str | None:
    """Token string of an ID (HF spelling), or None when the ID is not in use."""
    strings = tok._token_strings
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise UnknownTokenError(f"a token ID is an int, not {type(token_id).__name__}")
    return strings[token_id] if 0 <= token_id < len(strings) else None


def decode_batch(
    tok: Tokenizer,
    batch: Iterable[Iterable[int]],
    *,
    errors: Literal["strict", "replace"] = "strict",
    skip_special_tokens: bool = False,
) -> list[str]:
    """``decode`` of each ID sequence."""
    return [
        tok.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens) for ids in batch
    ]


def n_vocab(tok: Tokenizer) -> int:
    """tiktoken's name: the number of IDs (largest ID + 1), same as ``vocab_size``."""
    return tok.vocab_size
