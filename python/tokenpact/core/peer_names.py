"""The names users of Hugging Face ``tokenizers`` and ``tiktoken`` reach for.

``get_vocab()``, ``token_to_id`` / ``id_to_token``, ``decode_batch``, ``n_vocab``,
``encode_ordinary``, ``special_tokens_set``, ``max_token_value``, ``len(tok)``,
``tok(text)``, ``convert_ids_to_tokens`` / ``convert_tokens_to_ids``, ``batch_decode``
and the ``*_token_id`` properties, with those libraries' meanings, on top of tokenpact's
own byte-level API (``vocab()``, ``token_bytes``, ``token_id``).
:class:`~tokenpact.core.Tokenizer` binds these functions as its methods (no extra call
per use).

Token strings follow Hugging Face: a byte-level BPE piece is spelled in GPT-2's
byte-to-unicode alphabet (``"Ġthe"``), other pieces as their UTF-8 text, special and
added tokens as their content.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInputError, UnknownTokenError
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
    skip_special_tokens: bool | None = None,
) -> list[str]:
    """``decode`` of each ID sequence."""
    return [
        tok.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens) for ids in batch
    ]


def n_vocab(tok: Tokenizer) -> int:
    """tiktoken's name: the number of IDs (largest ID + 1), same as ``vocab_size``."""
    return tok.vocab_size


# ----------------------------------------------------------------------------- tiktoken
def encode_ordinary(tok: Tokenizer, text: str) -> list[int]:
    """tiktoken's ``encode_ordinary``: every special spelling is plain text (the default
    policy of :meth:`~tokenpact.core.Tokenizer.encode`, named as tiktoken names it)."""
    return tok.encode(text)


def encode_ordinary_batch(
    tok: Tokenizer, texts: Iterable[str], *, num_threads: int | None = None
) -> list[list[int]]:
    """tiktoken's ``encode_ordinary_batch``."""
    return tok.encode_batch(texts, threads=num_threads)


def special_tokens_set(tok: Tokenizer) -> set[str]:
    """tiktoken's ``special_tokens_set``: the spellings of the special tokens."""
    return set(tok._special_ids)


def max_token_value(tok: Tokenizer) -> int:
    """tiktoken's ``max_token_value``: the largest ID in use."""
    return tok.vocab_size - 1


# ----------------------------------------------------------------------------- transformers
def length(tok: Tokenizer) -> int:
    """``len(tok)``, as ``len()`` of a transformers tokenizer: every ID, added tokens
    included (``vocab_size``)."""
    return tok.vocab_size


def get_vocab_size(tok: Tokenizer, with_added_tokens: bool = True) -> int:
    """HF ``tokenizers``' ``get_vocab_size``: IDs in use, added tokens included unless
    ``with_added_tokens=False`` (then the model's own vocabulary only)."""
    if with_added_tokens:
        return tok.vocab_size
    return int(tok._core.model_size())


def convert_ids_to_tokens(
    tok: Tokenizer, ids: int | Iterable[int], skip_special_tokens: bool = False
) -> Any:
    """transformers' ``convert_ids_to_tokens``: token strings (HF spelling) of one ID or
    a sequence of IDs; an ID not in use raises UnknownTokenError."""
    if isinstance(ids, int):
        return _one_token(tok, int(ids))
    specials = tok._special_id_set
    return [
        _one_token(tok, int(i)) for i in ids if not (skip_special_tokens and int(i) in specials)
    ]


def _one_token(tok: Tokenizer, token_id: int) -> str:
    token = id_to_token(tok, int(token_id))
    if token is None:
        raise UnknownTokenError(
            f"token ID {token_id} is not in this tokenizer (IDs are 0..{tok.vocab_size - 1})"
        )
    return token


def convert_tokens_to_ids(tok: Tokenizer, tokens: str | Iterable[str]) -> Any:
    """transformers' ``convert_tokens_to_ids``: the ID of one token string or of each in
    a sequence; a string that is no single token maps to the unknown token's ID, or to
    None without one, as in transformers."""
    if isinstance(tokens, str):
        return _one_id(tok, tokens)
    return [_one_id(tok, t) for t in tokens]


def _one_id(tok: Tokenizer, token: str) -> int | None:
    found = tok._token_index.get(token)
    return found if found is not None else unk_token_id(tok)


def batch_decode(
    tok: Tokenizer,
    sequences: Iterable[Iterable[int]],
    skip_special_tokens: bool | None = None,
    *,
    errors: Literal["strict", "replace"] = "replace",
) -> list[str]:
    """transformers' ``batch_decode``: ``decode`` of each sequence. Invalid UTF-8
    becomes U+FFFD as in transformers (``errors="strict"`` raises DecodeError)."""
    return [
        tok.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens) for ids in sequences
    ]


def unk_token_id(tok: Tokenizer) -> int | None:
    """The ID of the special token with role ``unk``, else a SentencePiece model's
    unknown piece (None without either)."""
    found = tok._role_id("unk")
    model = tok.spec.sentencepiece_model
    if found is None and model is not None:
        unk = int(model.trainer_spec.unk_id)
        return unk if 0 <= unk < len(model.pieces) else None
    return found


def call(
    tok: Tokenizer, text: str | Sequence[str], *, add_special_tokens: bool = True
) -> dict[str, Any]:
    """``tok(text)`` as a transformers tokenizer answers it: ``{"input_ids": [...],
    "attention_mask": [...]}`` with the post-processor's special tokens added; a list of
    texts gives lists of lists (padding, truncation and tensors:
    :class:`tokenpact.hf_adapter.TransformersTokenizer`)."""
    if isinstance(text, str):
        ids = tok.encode(text, add_special_tokens=add_special_tokens)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)}
    if not isinstance(text, Sequence):
        raise InvalidInputError(
            f"tok(text) takes a str or a list of str, not {type(text).__name__}"
        )
    batch = tok.encode_batch(text, add_special_tokens=add_special_tokens)
    return {"input_ids": batch, "attention_mask": [[1] * len(ids) for ids in batch]}
