"""From a rendered template to owned tokens: control IDs, content owners, masks, boundary.

The rendered text is encoded once (:func:`tokenize_rendered`); each token is owned by the
content span it overlaps (a token that pre-tokenization merged across a boundary counts
as content: it holds untrusted bytes). Control IDs are recognized only outside content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _encode
from ._encode import TokenizerFacts
from .conversation import CONTROL, TEMPLATE, Owner


@dataclass(frozen=True)
class RenderedText:
    """A rendered template: the text, content spans ``(start, end, owner)`` and
    ``{% generation %}`` spans, in codepoints, plus the owner table."""

    text: str
    spans: list[tuple[int, int, int]]
    generation_spans: list[tuple[int, int]]
    owners: list[Owner]
    roles: tuple[str, ...]
    control_in_input: str | None


@dataclass(frozen=True)
class Tokens:
    """Aligned token arrays (UTF-8 byte offsets) and the content spans in bytes.

    ``shift`` counts post-processor tokens prepended before the rendered text.
    """

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    kinds: np.ndarray
    owner: np.ndarray
    span_starts: np.ndarray
    span_ends: np.ndarray
    span_owner: np.ndarray
    span_lo: list[int]  # tokens [span_lo[k], span_hi[k]) overlap content span k
    span_hi: list[int]
    shift: int = 0


def tokenize_rendered(tokenizer: Any, info: TokenizerFacts, rendered: RenderedText) -> Tokens:
    """Encode the rendered text once and own each token."""
    text = rendered.text
    spans = rendered.spans
    try:
        flat = _encode.utf8_offsets(text, [x for a, b, _ in spans for x in (a, b)])
        ids, starts, ends = _encode.encode_byte_spans(tokenizer, info, text, flat)
    except UnicodeEncodeError:
        tokenizer.encode(text)  # raises the tokenizer's own InvalidInputError naming the fix
        raise
    span_starts = np.array(flat[0::2], dtype=np.int64)
    span_ends = np.array(flat[1::2], dtype=np.int64)
    owners = [o for *_, o in spans]
    owner = np.full(len(ids), -1, dtype=np.int64)
    if not spans:
        kinds = np.where(info.is_control[ids], CONTROL, TEMPLATE)
        return Tokens(ids, starts, ends, kinds, owner, span_starts, span_ends, owner[:0], [], [])
    # Tokens are sorted and contiguous, so the tokens overlapping a span form the range
    # [first token ending after its start, first token starting at or after its end).
    lo = np.searchsorted(ends, span_starts, side="right").tolist()
    hi = np.searchsorted(starts, span_ends, side="left").tolist()
    for k in range(len(owners) - 1, -1, -1):  # a token straddling two spans: the first owns it
        owner[lo[k] : hi[k]] = owners[k]
    # Owner -1 (no content) reads the trailing TEMPLATE entry of owner_kind.
    owner_kind = np.array([o.kind for o in rendered.owners] + [TEMPLATE], dtype=np.int64)
    kinds = owner_kind[owner]
    # A token overlapping content stays content even if its ID is a control ID, so that
    # Conversation.validate() reports such a token instead of it passing as trusted.
    kinds[(owner < 0) & info.is_control[ids]] = CONTROL
    span_owner = np.array(owners, dtype=np.int64)
    return Tokens(ids, starts, ends, kinds, owner, span_starts, span_ends, span_owner, lo, hi)


def add_post_processor_markers(tokens: Tokens, info: TokenizerFacts) -> Tokens:
    """Apply the post-processor's markers that the template did not already write.

    One owner per boundary: a prefix (GLM-4's ``[gMASK]<sop>``, a BOS) already at the
    start, or a suffix already at the end, is not added again.
    """
    ids = tokens.ids
    prefix = list(info.post_prefix)
    suffix = list(info.post_suffix)
    front = prefix if prefix and ids[: len(prefix)].tolist() != prefix else []
    tail = ids[len(ids) - len(suffix) :].tolist() if suffix else []
    back = suffix if suffix and tail != suffix else []
    if not front and not back:
        return tokens
    f, b = len(front), len(back)
    end = int(tokens.ends[-1]) if len(ids) else 0

    def pad(arr: np.ndarray, head: int, rear: int) -> np.ndarray:
        return np.concatenate([np.full(f, head, np.int64), arr, np.full(b, rear, np.int64)])

    # Inserted markers get empty offsets at the ends of the text.
    return Tokens(
        np.concatenate([np.array(front, np.int64), ids, np.array(back, np.int64)]),
        pad(tokens.starts, 0, end),
        pad(tokens.ends, 0, end),
        pad(tokens.kinds, CONTROL, CONTROL),
        pad(tokens.owner, -1, -1),
        tokens.span_starts,
        tokens.span_ends,
        tokens.span_owner,
        [i + f for i in tokens.span_lo],
        [i + f for i in tokens.span_hi],
        f,
    )


def assistant_mask(tokens: Tokens, rendered: RenderedText, stops: tuple[int, ...]) -> np.ndarray:
    """From ``{% generation %}`` spans when present (a token overlapping one counts, as in
    transformers), else each assistant message's region plus the stop token closing it,
    so that the model learns to end its turn."""
    ids, starts, ends = tokens.ids, tokens.starts, tokens.ends
    mask = np.zeros(len(ids), dtype=np.int8)
    if rendered.generation_spans:
        flat = np.asarray(rendered.generation_spans, dtype=np.int64).reshape(-1)
        bounds = _encode.byte_positions(rendered.text, flat).reshape(-1, 2)
        s = tokens.shift
        for a, b in bounds.tolist():
            mask[s:][(ends[s:] > a) & (starts[s:] < b)] = 1
        return mask
    for lo, hi in message_regions(tokens, rendered, "assistant").values():
        while hi < len(ids) and int(ids[hi]) in stops and tokens.owner[hi] < 0:
            hi += 1
        mask[lo:hi] = 1
    return mask


def message_regions(tokens: Tokens, rendered: RenderedText, role: str) -> dict[int, list[int]]:
    """Token range ``[lo, hi)`` from the first to the last content span of each message
    with ``role`` (template tokens between its spans, e.g. tool-call wrappers, included)."""
    regions: dict[int, list[int]] = {}
    if not len(tokens.span_owner):
        return regions
    owners = rendered.owners
    roles = rendered.roles
    for o, lo, hi in zip(tokens.span_owner.tolist(), tokens.span_lo, tokens.span_hi, strict=True):
        index = owners[o].message_index
        if index < 0 or index >= len(roles) or roles[index] != role:
            continue
        lo, hi = max(lo, tokens.shift), max(hi, tokens.shift)
        if lo >= hi:
            continue
        region = regions.setdefault(index, [lo, hi])
        region[0], region[1] = min(region[0], lo), max(region[1], hi)
    return regions


def response_start(tokens: Tokens, mask: np.ndarray, rendered: RenderedText) -> int:
    """Training boundary: the first token of the final assistant response."""
    n = len(tokens.ids)
    if not rendered.roles or rendered.roles[-1] != "assistant":
        return n
    if rendered.generation_spans and mask.any():
        runs = np.flatnonzero(np.diff(np.concatenate([[0], mask])) == 1)
        return int(runs[-1])
    region = message_regions(tokens, rendered, "assistant").get(len(rendered.roles) - 1)
    return region[0] if region else n
