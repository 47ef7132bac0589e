"""The names users of Hugging Face ``tokenizers`` and ``tiktoken`` reach for.

A mixin of :class:`~tokenpact.Tokenizer`: ``get_vocab()``, ``token_to_id`` /
``id_to_token``, ``decode_batch`` and ``n_vocab``, with those libraries' meanings, on
top of tokenpact's own byte-level API (``vocab()``, ``token_bytes``, ``token_id``).

Token strings follow Hugging Face: a byte-level BPE piece is spelled in GPT-2's
byte-to-unicode alphabet (``"Ġthe"``), other pieces as their UTF-8 text, special and
added tokens as their content.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from .errors import UnknownTokenError

if TYPE_CHECKING:
    from .core import TokenizerSpec


class PeerNamesMixin:
    """``get_vocab`` / ``token_to_id`` / ``id_to_token`` / ``decode_batch`` / ``n_vocab``."""

    _core: Any
    _spec: TokenizerSpec
    _special_ids: dict[str, int]
    _added: dict[str, int]

    if TYPE_CHECKING:  # provided by Tokenizer

        @property
        def vocab_size(self) -> int: ...

        def decode(
            self,
            ids: Iterable[int],
            *,
            errors: Literal["strict", "replace"] = "strict",
            skip_special_tokens: bool = False,
        ) -> str: ...

    def _token_strings(self) -> list[str | None]:
        cached = getattr(self, "_token_strings_cache", None)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        pieces = [bytes(p) for p in self._core.vocab()]
        if self._spec.kind.byte_level:
            from .formats.hf_json import byte_encoder

            enc = byte_encoder()
            strings: list[str | None] = ["".join(enc[b] for b in p) for p in pieces]
        else:
            strings = [p.decode("utf-8", "replace") for p in pieces]
        strings.extend([None] * (self.vocab_size - len(strings)))
        for content, i in {**self._added, **self._special_ids}.items():
            strings[i] = content
        self._token_strings_cache = strings
        return strings

    def get_vocab(self) -> dict[str, int]:
        """Every token string and its ID, special and added tokens included (HF's
        ``get_vocab(with_added_tokens=True)``)."""
        vocab: dict[str, int] = {}
        for i, s in enumerate(self._token_strings()):
            if s is not None:
                vocab.setdefault(s, i)
        return vocab

    def token_to_id(self, token: str) -> int | None:
        """ID of a token string (HF spelling), or None when it is not one token."""
        index = getattr(self, "_token_index_cache", None)
        if index is None:
            index = self._token_index_cache = self.get_vocab()
        return index.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        """Token string of an ID (HF spelling), or None when the ID is not in use."""
        strings = self._token_strings()
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise UnknownTokenError(f"a token ID is an int, not {type(token_id).__name__}")
        return strings[token_id] if 0 <= token_id < len(strings) else None

    def decode_batch(
        self,
        batch: Iterable[Iterable[int]],
        *,
        errors: Literal["strict", "replace"] = "strict",
        skip_special_tokens: bool = False,
    ) -> list[str]:
        """``decode`` of each ID sequence."""
        return [
            self.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens)
            for ids in batch
        ]

    @property
    def n_vocab(self) -> int:
        """tiktoken's name: the number of IDs (largest ID + 1), same as ``vocab_size``."""
        return self.vocab_size
