"""Structured encodings: IDs with the metadata later stages need.

Example::

    enc = tok.encode_structured("The cat sleeps.")
    enc.ids, enc.offsets, enc.special_tokens_mask, enc.origins
    enc.tokenizer_hash, enc.template_hash   # what the IDs depend on
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .errors import ConfigError, UnknownTokenError

if TYPE_CHECKING:
    from .core import Tokenizer

Coordinate = Literal["raw_codepoints", "raw_utf8_bytes", "normalized_codepoints"]
COORDINATES = ("raw_codepoints", "raw_utf8_bytes", "normalized_codepoints")


class Offsets(Sequence[tuple[int, int]]):
    """Per-token ``(start, end)`` offsets stored flat (``[s0, e0, s1, e1, ...]``).

    Behaves like a list of tuples (indexing, slicing, iteration, ``==`` with lists) but
    makes a tuple only when one is asked for: one tuple per token would be the most
    expensive part of a structured encoding.
    """

    __slots__ = ("_flat",)

    def __init__(self, flat: list[int]) -> None:
        self._flat = flat

    def __len__(self) -> int:
        return len(self._flat) // 2

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(index, slice):
            return list(self)[index]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("offset index out of range")
        return self._flat[2 * index], self._flat[2 * index + 1]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        it = iter(self._flat)
        return zip(it, it, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Offsets):
            return self._flat == other._flat
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __add__(self, other: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        return [*self, *other]

    def __radd__(self, other: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        return [*other, *self]

    def __repr__(self) -> str:
        return repr(list(self))

    __hash__ = None  # type: ignore[assignment]


class EncodingProvenance:
    """The identities an encoding's IDs depend on: tokenizer and (chat) template hashes.

    Hashing a large tokenizer takes most of a second, far more than one encode, so an
    encoding never computes it: every encoding of a tokenizer shares one provenance object
    that reads ``tokenizer.semantic_hash`` (cached by the tokenizer) the first time
    ``tokenizer_hash`` is asked for. Equality, hashing and pickling use the resolved
    values, so a pickled provenance holds two strings and no tokenizer.
    """

    __slots__ = ("_source", "_template_hash", "_tokenizer_hash")

    def __init__(
        self,
        tokenizer_hash: str | None = None,
        template_hash: str | None = None,
        *,
        source: Any = None,
    ) -> None:
        self._tokenizer_hash = tokenizer_hash
        self._template_hash = template_hash
        # The tokenizer whose semantic hash is read on first use (then dropped).
        self._source: Any = source

    @classmethod
    def deferred(cls, tokenizer: Tokenizer, template_hash: str | None = None) -> EncodingProvenance:
        """A provenance whose tokenizer hash is read from ``tokenizer`` on first use."""
        return cls(None, template_hash, source=tokenizer)

    @property
    def tokenizer_hash(self) -> str | None:
        if self._tokenizer_hash is None and self._source is not None:
            self._tokenizer_hash = str(self._source.semantic_hash)
            self._source = None  # the tokenizer is no longer needed (nor kept alive)
        return self._tokenizer_hash

    @property
    def template_hash(self) -> str | None:
        return self._template_hash

    def to_json(self) -> dict[str, str | None]:
        return {"tokenizer_hash": self.tokenizer_hash, "template_hash": self.template_hash}

    def _key(self) -> tuple[str | None, str | None]:
        return (self.tokenizer_hash, self.template_hash)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EncodingProvenance):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, tuple[str | None, str | None]]:
        return (EncodingProvenance, self._key())

    def __repr__(self) -> str:
        deferred = self._tokenizer_hash is None and self._source is not None
        tokenizer = "<deferred>" if deferred else repr(self._tokenizer_hash)
        return (
            f"EncodingProvenance(tokenizer_hash={tokenizer}, template_hash={self._template_hash!r})"
        )


# The attribute under which a tokenizer keeps its shared provenance (read inline on the
# encode path: a plain getattr is cheaper than a call).
SHARED_PROVENANCE = "_encoding_provenance"


def provenance_of(tokenizer: Tokenizer) -> EncodingProvenance:
    """The one provenance shared by every template-free encoding of ``tokenizer``.

    Kept on the tokenizer, so an encode pays one attribute read; until the hash is first
    read the provenance refers back to the tokenizer (a reference cycle the garbage
    collector clears), afterwards it holds only the string.
    """
    shared: EncodingProvenance | None = getattr(tokenizer, SHARED_PROVENANCE, None)
    if shared is None:
        shared = EncodingProvenance.deferred(tokenizer)
        try:
            setattr(tokenizer, SHARED_PROVENANCE, shared)
        except AttributeError:  # a tokenizer with __slots__: a fresh one per call is fine
            pass
    return shared


@dataclass(frozen=True)
class Encoding:
    """One encoded sequence; every per-token list has the same length.

    ``provenance`` says what produced the IDs (``tokenizer_hash``, and ``template_hash``
    when a chat template did); it is ``None`` only for encodings built by hand.
    """

    ids: list[int]
    tokens: list[str]
    offsets: Sequence[tuple[int, int]]
    coordinate: Coordinate
    special_tokens_mask: list[int]
    origins: list[str]  # "content", "added" (non-special added token) or "control"
    attention_mask: list[int]
    type_ids: list[int]
    sequence_ids: list[int | None]
    original_length: int  # of the input, in the offset coordinate
    truncated: bool = False
    overflowing: list[Encoding] = field(default_factory=list)
    provenance: EncodingProvenance | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def span_offsets(self) -> list[tuple[int, int] | None]:
        """:attr:`offsets` with ``None`` for the tokens no span of the input produced:
        controls the template inserted and PAD (their ``offsets`` entry is ``(0, 0)``,
        as Hugging Face reports it). A control spelled in the text keeps its span."""
        return [
            None if sid is None else span
            for span, sid in zip(self.offsets, self.sequence_ids, strict=True)
        ]

    @property
    def tokenizer_hash(self) -> str | None:
        """Semantic hash of the tokenizer that produced the IDs (computed once per tokenizer,
        on first read)."""
        return None if self.provenance is None else self.provenance.tokenizer_hash

    @property
    def template_hash(self) -> str | None:
        """Hash of the chat template that produced the sequence; ``None`` for plain text."""
        return None if self.provenance is None else self.provenance.template_hash

    def validate(self, vocab_size: int) -> None:
        """Check alignment of every vector and that IDs fit ``vocab_size`` rows."""
        n = len(self.ids)
        for name in (
            "tokens",
            "offsets",
            "special_tokens_mask",
            "origins",
            "attention_mask",
            "type_ids",
            "sequence_ids",
        ):
            if len(getattr(self, name)) != n:
                raise ConfigError(f"Encoding.{name} has {len(getattr(self, name))} items, ids {n}")
        bad = [i for i in self.ids if not 0 <= i < vocab_size]
        if bad:
            raise UnknownTokenError(
                f"IDs {bad[:5]} do not fit an embedding table of {vocab_size} rows; "
                "resize the model embeddings or use the matching tokenizer"
            )
        for a, b in self.offsets:
            if not 0 <= a <= b <= self.original_length:
                raise ConfigError(f"offset ({a}, {b}) lies outside the input")


def byte_to_char_offsets(
    text: str, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Map UTF-8 byte ranges to codepoint ranges; a token holding part of a character
    covers that whole character (as Hugging Face reports byte-level offsets)."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if data.size == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1
    char_of_byte = np.append(char_of_byte, char_of_byte[-1] + 1)
    s = char_of_byte[starts.astype(np.int64)]
    last = np.maximum(ends.astype(np.int64) - 1, starts.astype(np.int64))
    e = np.where(ends > starts, char_of_byte[last] + 1, s)
    return s, e
