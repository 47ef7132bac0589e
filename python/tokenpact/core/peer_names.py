"""Token strings: the vocabulary as Hugging Face ``tokenizers`` and ``transformers`` spell
it, behind the names their users reach for (``get_vocab()``, ``token_to_id`` /
``id_to_token``, ``convert_ids_to_tokens`` / ``convert_tokens_to_ids``).

A byte-level BPE piece is spelled in GPT-2's byte-to-unicode alphabet (``"Ġthe"``), other
pieces as their UTF-8 text, special and added tokens as their content.
:class:`TokenNames` holds that table and its index; the
:class:`~tokenpact.core.Tokenizer` builds one on first use (it is vocabulary-sized) and
answers the peer libraries' names with it, beside tokenpact's own byte-level API
(``vocab()``, ``token_bytes``, ``token_id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import UnknownTokenError
from .byte_map import byte_encoder


class TokenNames:
    """The token string of every ID and the ID of every token string."""

    def __init__(
        self, pieces: Iterable[bytes], *, byte_level: bool, size: int, added: Mapping[str, int]
    ) -> None:
        """``pieces``: the model's byte piece of each ID; ``byte_level``: spell them in
        GPT-2's alphabet; ``size``: the number of IDs (added tokens included); ``added``:
        every added token, special or not, by spelling (its content is its string)."""
        raw = [bytes(p) for p in pieces]
        if byte_level:
            enc = byte_encoder()
            strings: list[str | None] = ["".join(enc[b] for b in p) for p in raw]
        else:
            strings = [p.decode("utf-8", "replace") for p in raw]
        strings.extend([None] * (size - len(strings)))
        for content, i in added.items():
            strings[i] = content
        index: dict[str, int] = {}
        for i, s in enumerate(strings):
            if s is not None:
                index.setdefault(s, i)
        self.strings = strings  # by ID; None for an ID not in use
        self.index = index  # token string -> first ID spelled so

    def get_vocab(self) -> dict[str, int]:
        """Every token string and its ID (a new dict)."""
        return dict(self.index)

    def token_to_id(self, token: str) -> int | None:
        """ID of a token string, or None when it is not one token."""
        return self.index.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        """Token string of an ID, or None when the ID is not in use."""
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise UnknownTokenError(f"a token ID is an int, not {type(token_id).__name__}")
        strings = self.strings
        return strings[token_id] if 0 <= token_id < len(strings) else None

    def token_of(self, token_id: int) -> str:
        """Token string of an ID; an ID not in use raises UnknownTokenError."""
        token = self.id_to_token(token_id)
        if token is None:
            raise UnknownTokenError(
                f"token ID {token_id} is not in this tokenizer (IDs are 0..{len(self.strings) - 1})"
            )
        return token
