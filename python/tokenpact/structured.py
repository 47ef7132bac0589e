"""``Tokenizer.encode_structured``: IDs with offsets, masks, origins, pair metadata.

Kept apart from ``tokenizer.py`` (which only delegates here) so the per-token work stays
in one place: the engine returns IDs and offsets as arrays (codepoint offsets computed in
Rust when nothing needs bytes), and the common case builds its lists without a Python
loop per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .encoding import COORDINATES, Encoding, byte_to_char_offsets
from .errors import ConfigError

if TYPE_CHECKING:
    from .tokenizer import SpecialSpec, Tokenizer


class _Content(NamedTuple):
    ids: list[int]
    spans: list[tuple[int, int]]
    matched: set[int]  # positions of added-token spellings matched in the text
    length: int


def _matched_specials(
    tok: Tokenizer, text: str, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> set[int]:
    """Positions of tokens that are added-token spellings matched in ``text``. A model can
    emit an added token's ID by itself (WordPiece's [UNK]); that one is content."""
    gated = np.fromiter(tok._gated().values(), dtype=np.int64)
    hits = np.flatnonzero(np.isin(ids, gated)).tolist()
    if not hits:
        return set()
    data = text.encode("utf-8")
    return {k for k in hits if data[int(starts[k]) : int(ends[k])] == tok.token_bytes(int(ids[k]))}


def _trim_space_offsets(
    text: str, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # Hugging Face's ByteLevel(trim_offsets=True): offsets exclude a token's leading and
    # trailing spaces.
    data = text.encode("utf-8")
    s, e = starts.copy(), ends.copy()
    for k in range(len(s)):
        while s[k] < e[k] and data[s[k]] == 0x20:
            s[k] += 1
        while e[k] > s[k] and data[e[k] - 1] == 0x20:
            e[k] -= 1
    return s, e


def piece_texts(tok: Tokenizer, ids: list[int]) -> list[str]:
    """Token strings of ``ids`` from a table built once (a per-ID call is slow)."""
    table = tok._piece_text_cache
    if table is None:
        table = [bytes(p).decode("utf-8", errors="replace") for p in tok._core.vocab()]
        for content, i in {**tok._added, **tok._special_ids}.items():
            table.extend([""] * (i + 1 - len(table)))
            table[i] = content
        tok._piece_text_cache = table
    return [table[i] for i in ids]


def _content(
    tok: Tokenizer,
    text: str,
    allowed: Any,
    disallowed: Any,
    coordinate: str,
    untrusted_spans: Sequence[tuple[int, int]],
) -> _Content:
    from . import _native
    from .tokenizer import _byte_ranges, _surrogate_error

    try:
        if disallowed is not None:
            tok._check_disallowed(text, disallowed)
        trim = bool(tok._source.get("trim_offsets"))
        # Codepoint offsets straight from the engine when nothing needs byte offsets.
        in_chars = coordinate == "raw_codepoints" and not trim and allowed is None
        if in_chars and not untrusted_spans:
            ids, spans = _native.encode_offsets_lists(tok._core, text)
            return _Content(ids, spans, set(), len(text))
        ids_arr, starts, ends = tok._core.encode_with_offsets(
            text,
            allowed,
            _byte_ranges(text, untrusted_spans) if untrusted_spans else None,
            in_chars,
        )
    except UnicodeEncodeError as exc:
        raise _surrogate_error(text, exc) from None
    if trim:
        starts, ends = _trim_space_offsets(text, starts, ends)
    matched = _matched_specials(tok, text, ids_arr, starts, ends) if allowed else set()
    if coordinate == "raw_codepoints":
        if not in_chars:
            starts, ends = byte_to_char_offsets(text, starts, ends)
        length = len(text)
    else:
        length = len(text.encode("utf-8"))
    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    return _Content(ids_arr.tolist(), spans, matched, length)


def encode_structured(
    tok: Tokenizer,
    text: str,
    *,
    pair: str | None,
    allowed_special: SpecialSpec,
    disallowed_special: SpecialSpec,
    add_special_tokens: bool,
    coordinate: str,
    untrusted_spans: Sequence[tuple[int, int]],
) -> Encoding:
    """See :meth:`tokenpact.Tokenizer.encode_structured`."""
    from .postprocess import apply
    from .tokenizer import _text_arg

    text = _text_arg(text)
    if coordinate not in COORDINATES:
        raise ConfigError(f"coordinate must be one of {COORDINATES}, not {coordinate!r}")
    allowed, disallowed = tok._policy(allowed_special, disallowed_special)
    parts = [_content(tok, text, allowed, disallowed, coordinate, untrusted_spans)]
    if pair is not None:
        parts.append(_content(tok, _text_arg(pair), allowed, disallowed, coordinate, ()))
    second = parts[1].ids if pair is not None else None
    ids, type_ids, seq_ids, control = apply(
        tok._post_processor, tok._special_ids, parts[0].ids, second
    )
    if not add_special_tokens and any(control):
        # Without special tokens the template still decides the type IDs (as in HF).
        keep = [k for k, c in enumerate(control) if not c]
        ids, type_ids = [ids[k] for k in keep], [type_ids[k] for k in keep]
        seq_ids, control = [seq_ids[k] for k in keep], [False] * len(keep)
    spans = [s for part in parts for s in part.spans]
    matched = {k + (len(parts[0].ids) if n else 0) for n, p in enumerate(parts) for k in p.matched}
    offsets: list[tuple[int, int]] = []
    origins: list[str] = []
    if not matched and not any(control):
        # The common case: content only, no per-token Python loop.
        offsets, origins = spans, ["content"] * len(ids)
        mask = [0] * len(ids)
    else:
        it = iter(spans)
        k = 0
        special_ids = tok._special_id_set()
        for i, is_control in zip(ids, control, strict=True):
            if is_control:
                offsets.append((0, 0))
                origins.append("control")
                continue
            offsets.append(next(it))
            if k in matched:
                origins.append("control" if i in special_ids else "added")
            else:
                origins.append("content")
            k += 1
        mask = [1 if o == "control" else 0 for o in origins]
    return Encoding(
        ids=ids,
        tokens=piece_texts(tok, ids),
        offsets=offsets,
        coordinate=coordinate,  # type: ignore[arg-type]
        special_tokens_mask=mask,
        origins=origins,
        attention_mask=[1] * len(ids),
        type_ids=type_ids,
        sequence_ids=seq_ids,
        original_length=max(p.length for p in parts),
    )
