"""Incremental decoding: generated IDs in, text that can no longer change out.

The concatenation of every :meth:`IncrementalDecoder.push` result and
:meth:`IncrementalDecoder.finish` equals ``tok.decode(all_ids, errors=...)`` for every
way of splitting the IDs, with the tokenizer's own decoder chain. Primed with the prompt
(``prompt_ids=``), it equals ``tok.decode(prompt + ids)[len(tok.decode(prompt)):]``: the
completion continues the prompt's text. Each ID costs
constant work (no re-decoding of a growing window); see docs/RUNTIME.md for what each
decoder holds back.

>>> dec = IncrementalDecoder(tok)                      # doctest: +SKIP
>>> dec.push([401]), dec.push([402]), dec.finish()     # doctest: +SKIP
('', '€', '')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Literal

import numpy as np

from .. import _native
from ..errors import ConfigError, InvalidInputError, UnknownTokenError

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = ["IncrementalDecoder"]


_BOOLS = frozenset((bool, np.bool_))
# Iterables that are no batch of IDs: bytes would iterate as their values (b"abc" as
# IDs 97-99), a str as characters, a set or a dict in no defined order.
NOT_ID_BATCHES = (str, bytes, bytearray, memoryview, Mapping, AbstractSet)
_NOT_IDS = (bool, np.bool_, *NOT_ID_BATCHES)


def _uint32(ids: np.ndarray) -> np.ndarray:
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise UnknownTokenError("token IDs must be a flat array of ints")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= 2**32):
        raise UnknownTokenError("token IDs must be in 0..2**32-1")
    return np.ascontiguousarray(ids, dtype=np.uint32)


def _prompt_list(tok: Tokenizer, prompt_ids: Iterable[int] | np.ndarray | None) -> list[int]:
    """The prompt IDs as a checked list (shared with :class:`OutputStream`)."""
    if prompt_ids is None:
        return []
    if isinstance(prompt_ids, np.ndarray):
        return [int(i) for i in _uint32(prompt_ids)]
    if isinstance(prompt_ids, (str, bytes)):
        raise InvalidInputError("prompt_ids takes token IDs (a list of ints), not text")
    ids = list(prompt_ids)
    bad = next((i for i in ids if isinstance(i, bool) or not isinstance(i, int)), None)
    if bad is not None or any(not 0 <= i < 2**32 for i in ids):
        raise UnknownTokenError(
            f"prompt_ids must be token IDs of this tokenizer (0..{tok.vocab_size - 1})"
        )
    return ids


class IncrementalDecoder:
    """Decode a stream of IDs exactly as ``tok.decode`` decodes them all at once.

    ``errors="replace"`` emits U+FFFD where ``tok.decode(..., errors="replace")`` has
    one (a literal U+FFFD piece is emitted as soon as it is complete);
    ``errors="strict"`` raises :class:`~tokenpact.errors.DecodeError` as soon as the
    bytes are proven invalid. ``skip_special_tokens`` drops the tokenizer's special
    (control) IDs before decoding.

    ``prompt_ids``: the prompt the generated IDs continue (or a tail of it: one token is
    enough for every shipped decoder family, a few cover byte-level characters split
    across tokens). Without it the stream decodes as if the text started at the first
    pushed ID, so a SentencePiece/Metaspace model drops the first token's leading space.
    """

    def __init__(
        self,
        tok: Tokenizer,
        *,
        errors: Literal["strict", "replace"] = "replace",
        skip_special_tokens: bool = False,
        prompt_ids: Iterable[int] | np.ndarray | None = None,
    ) -> None:
        if errors not in ("strict", "replace"):
            raise ConfigError(f'errors must be "strict" or "replace", not {errors!r}')
        self.tokenizer = tok
        self.errors = errors
        self.skip_special_tokens = skip_special_tokens
        skip = sorted(set(tok.special_tokens.values())) if skip_special_tokens else []
        prompt = _prompt_list(tok, prompt_ids)
        self._engine = _native.IncrementalDecoderCore(tok.engine, errors == "strict", skip, prompt)
        self._finished = False

    def push(self, ids: int | Iterable[int] | np.ndarray) -> str:
        """Decode more IDs; returns the text that no later ID can change."""
        if self._finished:
            raise InvalidInputError("this decoder has finished; start a new one")
        try:
            if type(ids) is int:
                text: str = self._engine.push_one(ids)
                return text
            if isinstance(ids, _NOT_IDS):
                # bytes would iterate as their values (b"abc" as IDs 97-99), a bool as 0/1,
                # a set or a dict in no defined order.
                raise TypeError
            if isinstance(ids, (int, np.integer)):
                return str(self._engine.push_one(int(ids)))
            if isinstance(ids, np.ndarray):
                return str(self._engine.push_array(_uint32(ids)))
            batch = list(ids)
            if not _BOOLS.isdisjoint(map(type, batch)):
                raise TypeError
            return str(self._engine.push(batch))
        except (OverflowError, TypeError):
            raise UnknownTokenError(
                f"token IDs must be ints in 0..{self.tokenizer.vocab_size - 1}; got {ids!r}"
            ) from None

    @property
    def engine_push_one(self) -> Callable[[int], str]:
        """The native one-ID push (no argument checks: for runtime engines' hot loops)."""
        push: Callable[[int], str] = self._engine.push_one
        return push

    def finish(self) -> str:
        """The rest of the text (held-back bytes resolved); the stream ends."""
        if self._finished:
            return ""
        self._finished = True
        return str(self._engine.finish())

    @property
    def held_bytes(self) -> int:
        """Bytes held back right now (an incomplete character, a decoder look-ahead)."""
        return int(self._engine.held())

    @property
    def consumed(self) -> int:
        """Number of IDs pushed so far."""
        return int(self._engine.count())
