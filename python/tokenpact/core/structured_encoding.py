"""Structured encoding: IDs with offsets, masks, origins, pairs, truncation and padding.

:class:`StructuredEncoder` runs ``Tokenizer.encode_structured`` and
``encode_structured_batch``: the :class:`~tokenpact.core.Tokenizer` builds one and passes
itself to each call. It encodes each sequence into its content (IDs, offsets in the
declared coordinate, the origin of each token); :mod:`tokenpact.structured` assembles the
:class:`~tokenpact.Encoding` (pairs, template, truncation, padding; policies in
:mod:`tokenpact.truncation`). The offset functions below read the tokenizer's public API
only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .._text import _byte_ranges, _surrogate_error, _text_arg
from ..components.sentencepiece import BYTE, CONTROL, UNKNOWN
from ..encoding import COORDINATES, Offsets, byte_to_char_offsets
from ..errors import ConfigError
from ..structured import Content, assemble, pad_all
from .engine import Capability
from .special_policy import SpecialTokenPolicy, check_disallowed

if TYPE_CHECKING:
    from ..encoding import Encoding
    from ..special import AddedTokenFlags
    from ..truncation import Padding, Truncation
    from .special_policy import SpecialSpec
    from .tokenizer import Tokenizer


class StructuredEncoder:
    """The structured encoding of one tokenizer's texts.

    Holds what every call reads (its engine, the special-token policy, which offset
    path the engine serves) and the tables it derives on first use (added-token flags
    by ID, piece strings); the tokenizer builds one and passes itself to each call,
    read through its public API only (``spec``, ``token_bytes``, ``normalize``,
    ``post_processor``, ``special_tokens``, ``pad_id``).
    """

    def __init__(
        self,
        engine: Any,
        capabilities: frozenset[Capability],
        policy: SpecialTokenPolicy,
        trim_offsets: bool,
    ) -> None:
        self._core = engine
        self._policy = policy
        self._resolve = policy.resolve
        self._trim = trim_offsets
        # The numpy path serves offset trimming and engines without list output.
        self._lists = not trim_offsets and Capability.OFFSETS in capabilities
        # The native engine declares offsets and answers piece_strs; an engine of the
        # caller's own may not.
        self._native_pieces = Capability.OFFSETS in capabilities

    def encode(
        self,
        tok: Tokenizer,
        text: str,
        pair: str | None,
        allowed_special: SpecialSpec,
        disallowed_special: SpecialSpec,
        add_special_tokens: bool,
        coordinate: str,
        untrusted_spans: Sequence[tuple[int, int]],
        truncation: Truncation | None,
        padding: Padding | None,
    ) -> Encoding:
        """One structured encoding under the resolved policies (None: no policy)."""
        first = self.content(
            tok, text, allowed_special, disallowed_special, coordinate, untrusted_spans
        )
        second = (
            None
            if pair is None
            else self.content(tok, pair, allowed_special, disallowed_special, coordinate, ())
        )
        enc = assemble(
            tok,
            first,
            second,
            add_special_tokens=add_special_tokens,
            coordinate=coordinate,
            truncation=truncation,
            pieces=self.piece_texts,
        )
        if padding is not None:
            enc = pad_all([enc], padding, tok, self.piece_texts)[0]
        return enc

    def encode_batch(
        self,
        tok: Tokenizer,
        texts: Sequence[str],
        pairs: Sequence[str] | None,
        allowed_special: SpecialSpec,
        disallowed_special: SpecialSpec,
        add_special_tokens: bool,
        coordinate: str,
        truncation: Truncation | None,
        padding: Padding | None,
    ) -> list[Encoding]:
        """:meth:`encode` of each text (and its pair); ``padding`` aligns the batch."""
        if pairs is not None and len(pairs) != len(texts):
            raise ConfigError(f"{len(texts)} texts but {len(pairs)} pairs; pass one pair each")
        encode = self.encode
        out = [
            encode(
                tok,
                t,
                None if pairs is None else pairs[i],
                allowed_special,
                disallowed_special,
                add_special_tokens,
                coordinate,
                (),
                truncation,
                None,  # the batch is padded together below
            )
            for i, t in enumerate(texts)
        ]
        return pad_all(out, padding, tok, self.piece_texts) if padding is not None else out

    def content(
        self,
        tok: Tokenizer,
        text: str,
        allowed_special: SpecialSpec,
        disallowed_special: SpecialSpec,
        coordinate: str,
        untrusted_spans: Sequence[tuple[int, int]],
    ) -> Content:
        """One sequence's IDs, offsets in ``coordinate`` and token origins."""
        text = _text_arg(text)
        if coordinate not in COORDINATES:
            raise ConfigError(f"coordinate must be one of {COORDINATES}, not {coordinate!r}")
        if coordinate == "normalized_codepoints":
            raw = self.content(
                tok, text, allowed_special, disallowed_special, "raw_utf8_bytes", untrusted_spans
            )
            spans, length = normalized_offsets(tok, text, raw.ids, raw.offsets)
            return Content(raw.ids, spans, raw.origins, length)
        if allowed_special or disallowed_special:
            allowed, disallowed = self._resolve(allowed_special, disallowed_special)
        else:  # the default policy, inline: ordinary added tokens only, nothing refused
            allowed, disallowed = self._policy.default_matcher, None
        untrusted = _byte_ranges(text, untrusted_spans) if untrusted_spans else None
        lists = self._lists
        core = self._core
        try:
            if disallowed is not None:
                check_disallowed(text, disallowed)
            if not lists:
                ids_arr, starts, ends = core.encode_with_offsets(text, allowed, untrusted)
            else:
                ids, flat = core.encode_offsets_lists(
                    text, allowed, untrusted, coordinate == "raw_codepoints"
                )
                offsets: Sequence[tuple[int, int]] = Offsets(flat)
        except UnicodeEncodeError as exc:
            raise _surrogate_error(text, exc) from None
        length = len(text) if coordinate == "raw_codepoints" else len(text.encode("utf-8"))
        if not lists:
            if coordinate == "raw_codepoints":
                starts, ends = byte_to_char_offsets(text, starts, ends)
            if self._trim:
                starts, ends = trim_space_offsets(tok, ids_arr, starts, ends)
            ids = ids_arr.tolist()
            offsets = list(zip(starts.tolist(), ends.tolist(), strict=True))
        if allowed is None:
            # Nothing was allowed to match, so every token is content.
            origins = ["content"] * len(ids)
        else:
            origins = self.token_origins(tok, text, ids, offsets, coordinate)
        return Content(ids, offsets, origins, length)

    def token_origins(
        self,
        tok: Tokenizer,
        text: str,
        ids: list[int],
        offsets: Sequence[tuple[int, int]],
        coordinate: str,
    ) -> list[str]:
        """Origin of each token when added tokens could match: an added-token ID is
        "control"/"added" only where its spelling is what the text holds; a model can emit
        such an ID by itself (WordPiece's [UNK] for an unknown word), which is content."""
        specials, added = self._policy.special_id_set, self._policy.added_id_set
        origins = ["content"] * len(ids)
        raw = text if coordinate == "raw_codepoints" else text.encode("utf-8")
        for k, i in enumerate(ids):
            if i in specials or i in added:
                a, b = offsets[k]
                piece = raw[a:b]
                spelled = piece if isinstance(piece, bytes) else piece.encode("utf-8")
                if spelled == tok.token_bytes(i) or self.flagged_spelling(tok, i, spelled):
                    origins[k] = "control" if i in specials else "added"
        return origins

    @cached_property
    def _flags_by_id(self) -> dict[int, tuple[str, AddedTokenFlags]]:
        """``ID -> (content, flags)`` of the added tokens with matching flags."""
        ids = self._policy.gated
        return {ids[c]: (c, f) for c, f in self._policy.flags.items()}

    def flagged_spelling(self, tok: Tokenizer, token_id: int, spelled: bytes) -> bool:
        """Whether a flagged token's span holds its spelling: with the whitespace that
        ``lstrip``/``rstrip`` absorbed, or in another form that normalizes to the same
        text (``normalized``)."""
        flagged = self._flags_by_id
        if token_id not in flagged:
            return False
        content, flags = flagged[token_id]
        text = spelled.decode("utf-8", errors="replace")
        text = text.lstrip() if flags.lstrip else text
        text = text.rstrip() if flags.rstrip else text
        if text == content:
            return True
        return bool(flags.normalized) and tok.normalize(text) == tok.normalize(content)

    @cached_property
    def _piece_strings(self) -> list[str]:
        """The piece text of every ID, made once (a validated ``token_bytes`` call per
        token was nine tenths of a SentencePiece ``encode_structured``)."""
        core = self._core
        size = max(int(core.model_size()), self._policy.max_id + 1)
        return [
            bytes(core.token_bytes(i) or b"").decode("utf-8", errors="replace") for i in range(size)
        ]

    def piece_texts(self, ids: list[int]) -> list[str]:
        """Piece text of each ID, built in one native call from cached strings."""
        if not self._native_pieces:
            strs = self._piece_strings
            return [strs[i] for i in ids]
        return list(self._core.piece_strs(np.asarray(ids, dtype=np.uint32)))


def trim_space_offsets(
    tok: Tokenizer, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Hugging Face's process_offsets (ByteLevel / RobertaProcessing ``trim_offsets``)."""
    # The *token's* leading and trailing spaces are cut from its offsets (in chars),
    # except the one space ByteLevel(add_prefix_space) put before the first token.
    # Counting in the token, not the raw text, matters there: that space maps onto
    # the first character, and a token of spaces only ends up empty.
    byte_level = tok.spec.kind.trims_byte_level_spaces
    keep_prefix = tok.spec.trim_prefix_space
    s, e = starts.copy(), ends.copy()
    for k, i in enumerate(ids.tolist()):
        piece = tok.token_bytes(i)
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


def normalized_offsets(
    tok: Tokenizer, text: str, ids: Sequence[int], byte_offsets: Sequence[tuple[int, int]]
) -> tuple[list[tuple[int, int]], int]:
    """Raw UTF-8 byte spans mapped to codepoint spans of ``tok.normalize(text)``, and its
    length: a token covers the normalized characters whose alignment lies inside its raw
    span (a raw character the normalizer expands into several, all in one token's span,
    belongs to each token that spans it, as its raw offsets already do)."""
    if tok.spec.sentencepiece_model is not None:
        return _sentencepiece_offsets(tok, text, ids, byte_offsets)
    aligned = _aligned_normalization(tok, text)
    if aligned is None:  # no normalizer: the normalized text is the text
        starts = np.fromiter((a for a, _ in byte_offsets), dtype=np.int64)
        ends = np.fromiter((b for _, b in byte_offsets), dtype=np.int64)
        s, e = byte_to_char_offsets(text, starts, ends)
        return list(zip(s.tolist(), e.tolist(), strict=True)), len(text)
    normalized, char_spans = aligned
    if not normalized:
        return [(0, 0)] * len(byte_offsets), 0
    spans = np.asarray(char_spans, dtype=np.int64).reshape(-1, 2)
    # Alignments follow the text; a normalizer that reorders within a cluster (NFD's
    # combining marks) is made monotone so the searches below stay well defined.
    first = np.maximum.accumulate(spans[:, 0])
    last = np.maximum.accumulate(spans[:, 1])
    out = []
    for a, b in byte_offsets:
        c0 = int(np.searchsorted(first, a, side="left"))
        c1 = c0 if a == b else max(int(np.searchsorted(last, b, side="right")), c0)
        # Whitespace the normalizer inserted beside a character (BERT's spaces around
        # CJK ideographs) shares that character's raw span but is no part of the token.
        while c1 - c0 > 1 and normalized[c0].isspace() and char_spans[c0] == char_spans[c0 + 1]:
            c0 += 1
        while (
            c1 - c0 > 1
            and normalized[c1 - 1].isspace()
            and char_spans[c1 - 1] == char_spans[c1 - 2]
        ):
            c1 -= 1
        out.append((c0, c1))
    return out, len(normalized)


def _aligned_normalization(tok: Tokenizer, text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """A ``tokenizer.json`` normalizer's output for ``text`` with the raw UTF-8 byte span
    of each of its characters; None when the tokenizer has no such normalizer."""
    node = tok.spec.normalizer_json
    if node is not None:
        normalized, align = _native.normalize_str(node, text)
        data = np.frombuffer(normalized.encode("utf-8"), dtype=np.uint8)
        lead = np.flatnonzero((data & 0xC0) != 0x80)
        return normalized, [tuple(align[j]) for j in lead.tolist()]  # type: ignore[misc]
    return None


def _sentencepiece_offsets(
    tok: Tokenizer, text: str, ids: Sequence[int], byte_offsets: Sequence[tuple[int, int]]
) -> tuple[list[tuple[int, int]], int]:
    """SentencePiece's pieces tile its normalized text in order: a piece spans its own
    bytes there, a byte-fallback piece one byte, a control piece none, and an unknown
    run the bytes up to the first character whose input offset reaches the run's raw
    end (SentencePiece's normalized-to-original map). Exact where one input character
    becomes several ("ﬁ" -> "fi"). Codepoints of ``tok.normalize(text)``: without the
    dummy prefix, the meta symbol as a space (one codepoint either way); a byte piece
    covers its whole character."""
    model = tok.spec.sentencepiece_model
    assert model is not None
    raw, offsets = tok.engine.normalize_aligned(text)
    if not raw:
        return [(0, 0)] * len(byte_offsets), 0
    data = np.frombuffer(raw.encode("utf-8"), dtype=np.uint8)
    n = len(data)
    lead = (data & 0xC0) != 0x80
    char_of = np.cumsum(lead) - 1  # codepoint of each normalized byte
    boundaries = np.append(np.flatnonzero(lead), n)
    # The input consumed at each character boundary (monotone).
    reach = np.maximum.accumulate(np.asarray(offsets, dtype=np.int64)[boundaries])
    drop = 1 if model.normalizer_spec.add_dummy_prefix and raw.startswith("\u2581") else 0
    total = int(char_of[-1]) + 1
    pieces = model.pieces
    out = []
    cursor = 0
    for token_id, (_a, b) in zip(ids, byte_offsets, strict=True):
        kind = pieces[token_id].type if 0 <= token_id < len(pieces) else CONTROL
        if kind == BYTE:
            width = 1
        elif kind == CONTROL:
            width = 0
        elif kind == UNKNOWN:
            k = int(np.searchsorted(boundaries, cursor, side="right"))
            k += int(np.searchsorted(reach[k:], b, side="left"))
            width = int(boundaries[min(k, len(boundaries) - 1)]) - cursor
        else:
            width = len(pieces[token_id].piece.encode("utf-8"))
        start, end = min(cursor, n), min(cursor + max(width, 0), n)
        cursor = end
        if start >= n:
            out.append((total - drop, total - drop))
            continue
        c0 = int(char_of[start])
        c1 = int(char_of[end - 1]) + 1 if end > start else c0
        out.append((max(c0 - drop, 0), max(c1 - drop, 0)))
    return out, total - drop
