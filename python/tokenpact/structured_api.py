"""Structured encoding on the Tokenizer: IDs with offsets, masks, origins and policies.

A mixin of :class:`~tokenpact.Tokenizer` (kept apart so each file stays one concept);
see ``structured.py`` for assembly and ``truncation.py`` for the policies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._text import _byte_ranges, _surrogate_error, _text_arg
from .core import Capability
from .errors import ConfigError

if TYPE_CHECKING:
    from .core import TokenizerSpec
    from .encoding import Encoding
    from .special_policy import SpecialSpec
    from .structured import Content
    from .truncation import Padding, Truncation


class StructuredEncodingMixin:
    """``encode_structured`` and ``encode_structured_batch`` for :class:`Tokenizer`."""

    _core: Any
    _spec: TokenizerSpec
    _capabilities: frozenset[Capability]
    _special_ids: dict[str, int]
    _added: dict[str, int]
    _added_flags: dict[str, Any]

    if TYPE_CHECKING:  # provided by Tokenizer

        def normalize(self, text: str) -> str: ...
        def _policy(self, allowed: Any, disallowed: Any) -> tuple[Any, Any]: ...
        def _check_disallowed(self, text: str, matcher: Any) -> None: ...
        def token_bytes(self, token_id: int) -> bytes: ...
        @property
        def pad_id(self) -> int | None: ...
        @property
        def vocab_size(self) -> int: ...

    def _content(
        self,
        text: str,
        allowed_special: SpecialSpec,
        disallowed_special: SpecialSpec,
        coordinate: str,
        untrusted_spans: Sequence[tuple[int, int]],
    ) -> Content:
        from .encoding import COORDINATES, Offsets, byte_to_char_offsets
        from .structured import Content

        text = _text_arg(text)
        if coordinate not in COORDINATES:
            raise ConfigError(f"coordinate must be one of {COORDINATES}, not {coordinate!r}")
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        untrusted = _byte_ranges(text, untrusted_spans) if untrusted_spans else None
        trim = self._spec.trim_offsets
        # The numpy path serves offset trimming and engines without list output.
        lists = not trim and Capability.OFFSET_LISTS in self._capabilities
        try:
            if disallowed is not None:
                self._check_disallowed(text, disallowed)
            if not lists:
                ids_arr, starts, ends = self._core.encode_with_offsets(text, allowed, untrusted)
            else:
                ids, flat = self._core.encode_offsets_lists(
                    text, allowed, untrusted, coordinate == "raw_codepoints"
                )
                offsets: Sequence[tuple[int, int]] = Offsets(flat)
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None
        length = len(text) if coordinate == "raw_codepoints" else len(text.encode("utf-8"))
        if not lists:
            if coordinate == "raw_codepoints":
                starts, ends = byte_to_char_offsets(text, starts, ends)
            if trim:
                starts, ends = self._trim_space_offsets(ids_arr, starts, ends)
            ids = ids_arr.tolist()
            offsets = list(zip(starts.tolist(), ends.tolist(), strict=True))
        if allowed is None:
            # Nothing was allowed to match, so every token is content.
            origins = ["content"] * len(ids)
        else:
            origins = self._origins(text, ids, offsets, coordinate)
        return Content(ids, offsets, origins, length)

    def _origins(
        self, text: str, ids: list[int], offsets: Sequence[tuple[int, int]], coordinate: str
    ) -> list[str]:
        """Origin of each token when added tokens could match: an added-token ID is
        "control"/"added" only where its spelling is what the text holds; a model can emit
        such an ID by itself (WordPiece's [UNK] for an unknown word), which is content."""
        specials, added = self._special_id_set(), self._added_id_set()
        origins = ["content"] * len(ids)
        raw = text if coordinate == "raw_codepoints" else text.encode("utf-8")
        for k, i in enumerate(ids):
            if i in specials or i in added:
                a, b = offsets[k]
                piece = raw[a:b]
                spelled = piece if isinstance(piece, bytes) else piece.encode("utf-8")
                if spelled == self.token_bytes(i) or self._flagged_spelling(i, spelled):
                    origins[k] = "control" if i in specials else "added"
        return origins

    def _flagged_spelling(self, token_id: int, spelled: bytes) -> bool:
        """Whether a flagged token's span holds its spelling: with the whitespace that
        ``lstrip``/``rstrip`` absorbed, or in another form that normalizes to the same
        text (``normalized``)."""
        flagged = getattr(self, "_flagged_by_id", None)
        if flagged is None:
            ids = {**self._added, **self._special_ids}
            flagged = {ids[c]: (c, f) for c, f in self._added_flags.items()}
            self._flagged_by_id = flagged
        if token_id not in flagged:
            return False
        content, flags = flagged[token_id]
        text = spelled.decode("utf-8", errors="replace")
        text = text.lstrip() if flags.lstrip else text
        text = text.rstrip() if flags.rstrip else text
        if text == content:
            return True
        return bool(flags.normalized) and self.normalize(text) == self.normalize(content)

    def _piece_texts(self, ids: list[int]) -> list[str]:
        """Piece text of each ID, built in one native call from cached strings."""
        if Capability.PIECE_STRINGS not in self._capabilities:
            # One string per ID, made once (a validated token_bytes call per token was
            # nine tenths of a SentencePiece encode_structured).
            strs = getattr(self, "_piece_strs_cache", None)
            if strs is None:
                core = self._core
                strs = [
                    bytes(core.token_bytes(i) or b"").decode("utf-8", errors="replace")
                    for i in range(self.vocab_size)
                ]
                self._piece_strs_cache = strs
            return [strs[i] for i in ids]
        return list(self._core.piece_strs(np.asarray(ids, dtype=np.uint32)))

    def encode_structured(
        self,
        text: str,
        pair: str | None = None,
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        coordinate: str = "raw_codepoints",
        untrusted_spans: Sequence[tuple[int, int]] = (),
        truncation: Truncation | None = None,
        padding: Padding | None = None,
    ) -> Encoding:
        """Encode with offsets, masks, origins and sequence metadata.

        Offsets point into the raw input in the declared ``coordinate``
        (``raw_codepoints`` or ``raw_utf8_bytes``); control tokens inserted by the
        post-processor and PAD get empty offsets ``(0, 0)``. ``pair`` is a second sequence
        (``sequence_ids`` 0/1, ``type_ids`` from the template). ``untrusted_spans`` are
        codepoint ranges of ``text`` (user content in a rendered chat, say) where special
        spellings are never recognized, even when ``allowed_special`` permits them
        elsewhere; the whole text is still pre-tokenized in one pass. ``truncation`` and
        ``padding`` are explicit policies (see :class:`Truncation`, :class:`Padding`).
        """
        from .structured import assemble, pad_all

        first = self._content(
            text, allowed_special, disallowed_special, coordinate, untrusted_spans
        )
        second = (
            None
            if pair is None
            else self._content(pair, allowed_special, disallowed_special, coordinate, ())
        )
        enc = assemble(
            self,
            first,
            second,
            add_special_tokens=add_special_tokens,
            coordinate=coordinate,
            truncation=truncation,
        )
        if padding is not None:
            enc = pad_all([enc], padding, self.pad_id)[0]
        return enc

    def encode_structured_batch(
        self,
        texts: Sequence[str],
        pairs: Sequence[str] | None = None,
        *,
        allowed_special: SpecialSpec = (),
        disallowed_special: SpecialSpec = (),
        add_special_tokens: bool = False,
        coordinate: str = "raw_codepoints",
        truncation: Truncation | None = None,
        padding: Padding | None = None,
    ) -> list[Encoding]:
        """``encode_structured`` for many texts; padding aligns the whole batch."""
        from .structured import pad_all

        if pairs is not None and len(pairs) != len(texts):
            raise ConfigError(f"{len(texts)} texts but {len(pairs)} pairs; pass one pair each")
        out = [
            self.encode_structured(
                t,
                None if pairs is None else pairs[i],
                allowed_special=allowed_special,
                disallowed_special=disallowed_special,
                add_special_tokens=add_special_tokens,
                coordinate=coordinate,
                truncation=truncation,
            )
            for i, t in enumerate(texts)
        ]
        return pad_all(out, padding, self.pad_id) if padding is not None else out

    def _trim_space_offsets(
        self, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        # Hugging Face's process_offsets (ByteLevel / RobertaProcessing trim_offsets):
        # the *token's* leading and trailing spaces are cut from its offsets (in chars),
        # except the one space ByteLevel(add_prefix_space) put before the first token.
        # Counting in the token, not the raw text, matters there: that space maps onto
        # the first character, and a token of spaces only ends up empty.
        byte_level = self._spec.kind.trims_byte_level_spaces
        keep_prefix = self._spec.trim_prefix_space
        s, e = starts.copy(), ends.copy()
        for k, i in enumerate(ids.tolist()):
            piece = self.token_bytes(i)
            if byte_level:  # the piece's spaces are the 'Ġ' of its byte-level spelling
                lead = len(piece) - len(piece.lstrip(b" "))
                trail = len(piece) - len(piece.rstrip(b" "))
            else:
                word = piece.decode("utf-8", "replace")
                lead = len(word) - len(word.lstrip())
                trail = len(word) - len(word.rstrip())
            if lead:
                if keep_prefix and lead == 1 and (k == 0 or s[k] == 0):
                    lead = 0
                s[k] = min(s[k] + lead, e[k])
            if trail and e[k] >= trail:
                e[k] = max(e[k] - trail, s[k])
        return s, e

    def _special_id_set(self) -> frozenset[int]:
        cached = getattr(self, "_special_id_cache", None)
        if cached is None:
            cached = frozenset(self._special_ids.values())
            self._special_id_cache = cached
        return cached

    def _added_id_set(self) -> frozenset[int]:
        return frozenset(self._added.values())
