"""From a rendered template to owned tokens: control IDs, content owners, masks, boundary.

The rendered text is encoded once (:func:`tokenize_rendered`); each token is owned by the
content span it overlaps (a token that pre-tokenization merged across a boundary counts
as content: it holds untrusted bytes). Control IDs are recognized only outside content.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _native
from . import _encode
from ._encode import TokenizerFacts
from .conversation import CONTROL, KINDS, TEMPLATE, Owner

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer


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


@dataclass(eq=False)  # not frozen: a frozen __init__ costs one object.__setattr__ per field
class Tokens:
    """Aligned token arrays (UTF-8 byte offsets) and the content spans in bytes.

    Ownership is kept run-length: the tokens ``[span_lo[k], span_hi[k])`` overlap content
    span ``k`` (a token straddling two spans belongs to the first). The per-token
    ``owner`` and ``kinds`` arrays and the conversation's per-token lists
    (:attr:`columns`) are derived from the runs on first use. ``shift`` counts
    post-processor tokens prepended before the rendered text.
    """

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    span_starts: list[int]  # content span k covers bytes [span_starts[k], span_ends[k])
    span_ends: list[int]
    span_owner: list[int]
    span_lo: list[int]  # tokens [span_lo[k], span_hi[k]) overlap content span k
    span_hi: list[int]
    owner_kind: tuple[int, ...]  # each owner's kind code (content, document, tools)
    owner_message: tuple[int, ...]  # each owner's message index (or -1)
    info: TokenizerFacts
    shift: int = 0
    # Each token's kind code from the native chunk encoder (classified on its worker
    # threads as trusted_columns classifies them): trusted_columns() reads the lists off
    # these arrays in three numpy calls.
    codes: np.ndarray | None = None

    def runs(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, owner)`` per content span, overlaps given to the earlier span."""
        runs = []
        pos = 0
        for o, lo, hi in zip(self.span_owner, self.span_lo, self.span_hi, strict=True):
            lo = max(lo, pos)
            if lo < hi:
                runs.append((lo, hi, o))
                pos = hi
        return runs

    def in_content(self, token: int) -> bool:
        """Whether token ``token`` overlaps content."""
        # span_lo is sorted (spans are sorted by start), so no later span can hold the
        # token once one starts after it.
        for lo, hi in zip(self.span_lo, self.span_hi, strict=True):
            if lo > token:
                return False
            if token < hi:
                return True
        return False

    @cached_property
    def owner(self) -> np.ndarray:
        """The content owner of each token, or -1."""
        owner = np.full(len(self.ids), -1, dtype=np.int64)
        for lo, hi, o in self.runs():
            owner[lo:hi] = o
        return owner

    @cached_property
    def kinds(self) -> np.ndarray:
        """The kind code of each token (CONTROL, TEMPLATE or its owner's kind)."""
        owner = self.owner
        owner_kind = np.array([*self.owner_kind, TEMPLATE], dtype=np.int64)
        kinds = owner_kind[owner]
        # A token overlapping content stays content even if its ID is a control ID, so
        # that Conversation.validate() reports such a token instead of it passing as trusted.
        kinds[(owner < 0) & self.info.is_control[self.ids]] = CONTROL
        return kinds

    @cached_property
    def columns(self) -> Columns:
        """The per-token lists of a :class:`Conversation` (see :meth:`trusted_columns`
        and :meth:`index_columns`)."""
        return Columns(*self.trusted_columns(), *self.index_columns())

    def trusted_columns(self) -> tuple[list[int], list[int], list[str]]:
        """``input_ids``, ``special_tokens_mask`` and ``origin``, built run by run:
        template runs are short (role headers, separators) and classified token by token,
        content runs are filled by list repetition (a native version was measured slower:
        it must convert every element, where repetition only copies one reference).
        With the native encoder's kind codes, three numpy conversions instead."""
        if self.codes is not None and not self.shift:
            return token_lists(self.ids, self.codes, self.info.engine)
        ids = self.ids.tolist()
        control = self.info.control_set
        special: list[int] = []
        origin: list[str] = []
        pos = 0
        for lo, hi, o in [*self.runs(), (len(ids), len(ids), -1)]:
            if pos < lo:  # template text and control tokens before this run
                for i in ids[pos:lo]:
                    if i in control:
                        special.append(1)
                        origin.append("control")
                    else:
                        special.append(0)
                        origin.append("template")
            n = hi - lo
            if n:
                special += [0] * n
                origin += [KINDS[self.owner_kind[o]]] * n
            pos = hi
        return ids, special, origin

    def index_columns(self) -> tuple[list[int], list[int]]:
        """``message_index`` and ``owner_index`` (-1 outside content); a conversation
        builds them on first read, since most callers never read them."""
        n = len(self.ids)
        message: list[int] = []
        owner: list[int] = []
        pos = 0
        for lo, hi, o in [*self.runs(), (n, n, -1)]:
            if pos < lo:
                message += [-1] * (lo - pos)
                owner += [-1] * (lo - pos)
            if hi > lo:
                message += [self.owner_message[o]] * (hi - lo)
                owner += [o] * (hi - lo)
            pos = hi
        return message, owner


_KIND_ARRAY = np.array(KINDS, dtype=object)


def token_lists(
    ids: np.ndarray, codes: np.ndarray, engine: Any = None
) -> tuple[list[int], list[int], list[str]]:
    """``input_ids``, ``special_tokens_mask`` and ``origin`` from the token IDs and each
    token's kind code (the origin labels are the shared strings of ``KINDS``); the IDs
    are ``engine``'s cached int objects when it is the native engine."""
    if ids.dtype == np.uint32 and codes.dtype == np.uint8:
        # The native encoder's arrays: one call builds the three lists.
        return _native.chat_token_lists(ids, codes, KINDS, engine)  # type: ignore[no-any-return]
    return (ids.tolist(), *kind_lists(codes))


def kind_lists(codes: np.ndarray) -> tuple[list[int], list[str]]:
    """``special_tokens_mask`` and ``origin`` from each token's kind code."""
    return (codes == CONTROL).view(np.int8).tolist(), _KIND_ARRAY[codes].tolist()


class Columns(NamedTuple):
    """The per-token lists of a conversation, aligned with ``input_ids``."""

    input_ids: list[int]
    special_tokens_mask: list[int]
    origin: list[str]
    message_index: list[int]
    owner_index: list[int]


def tokenize_rendered(tokenizer: Tokenizer, info: TokenizerFacts, rendered: RenderedText) -> Tokens:
    """Encode the rendered text once and own each token."""
    text = rendered.text
    try:
        flat = [x for a, b, _ in rendered.spans for x in (a, b)]
        if flat and not text.isascii():
            flat = _encode.utf8_offsets(text, flat)
        ids, starts, ends = _encode.encode_byte_spans(tokenizer, info, text, flat)
    except UnicodeEncodeError:
        tokenizer.encode(text)  # raises the tokenizer's own InvalidInputError naming the fix
        raise
    span_starts, span_ends = flat[0::2], flat[1::2]
    lo, hi = token_ranges(starts, ends, span_starts, span_ends)
    return owned_tokens(rendered, info, (ids, starts, ends, flat, lo, hi))


def owned_tokens(
    rendered: RenderedText,
    info: TokenizerFacts,
    encoded: tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[int], list[int]],
    codes: np.ndarray | None = None,
) -> Tokens:
    """:class:`Tokens` from an encoding of ``rendered.text``: ``(ids, starts, ends,
    span_bytes, span_lo, span_hi)`` with the content spans in UTF-8 bytes (flat) and the
    token range overlapping each, as :func:`tokenize_rendered` or the native chunk
    encoder of ``render_batch`` computes them; ``codes``: the native encoder's kind code
    of each token (``ChatEncodeJob.wait(lists=False)``)."""
    ids, starts, ends, flat, lo, hi = encoded
    owners = rendered.owners
    return Tokens(
        ids,
        starts,
        ends,
        flat[0::2],
        flat[1::2],
        [o for _, _, o in rendered.spans],
        lo,
        hi,
        tuple([o.kind for o in owners]),
        tuple([o.message_index for o in owners]),
        info,
        0,
        codes,
    )


def token_ranges(
    starts: np.ndarray, ends: np.ndarray, span_starts: list[int], span_ends: list[int]
) -> tuple[list[int], list[int]]:
    """The tokens ``[lo, hi)`` overlapping each byte span.

    Tokens are sorted and contiguous, so they form the range [first token ending after
    the span's start, first token starting at or after its end). A few binary searches
    over memoryviews (items read as Python ints) cost less than converting the bounds to
    arrays for ``np.searchsorted`` (its result, which the tests compare).
    """
    if not span_starts:
        return [], []
    end_view, start_view = memoryview(ends), memoryview(starts)  # type: ignore[arg-type]
    return (
        [bisect_right(end_view, a) for a in span_starts],
        [bisect_left(start_view, b) for b in span_ends],
    )


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

    # Inserted markers get empty offsets at the ends of the text; they are control IDs,
    # which the derived kinds and columns classify as CONTROL (no content owner).
    return Tokens(
        np.concatenate([np.array(front, np.int64), ids, np.array(back, np.int64)]),
        pad(tokens.starts, 0, end),
        pad(tokens.ends, 0, end),
        tokens.span_starts,
        tokens.span_ends,
        tokens.span_owner,
        [i + f for i in tokens.span_lo],
        [i + f for i in tokens.span_hi],
        tokens.owner_kind,
        tokens.owner_message,
        tokens.info,
        f,
    )


def generation_mask(tokens: Tokens, rendered: RenderedText) -> np.ndarray:
    """The assistant mask (int8 array) of a template with ``{% generation %}`` spans."""
    starts, ends = tokens.starts, tokens.ends
    array = np.zeros(len(tokens.ids), dtype=np.int8)
    flat = np.asarray(rendered.generation_spans, dtype=np.int64).reshape(-1)
    bounds = _encode.byte_positions(rendered.text, flat).reshape(-1, 2)
    s = tokens.shift
    for a, b in bounds.tolist():
        array[s:][(ends[s:] > a) & (starts[s:] < b)] = 1
    return array


def response_start(tokens: Tokens, mask: np.ndarray, rendered: RenderedText) -> int:
    """Training boundary of a record with ``{% generation %}`` blocks: the first token of
    the final assistant turn's run of ``mask`` (its :func:`generation_mask`), else the
    token count (the final message is not an assistant's, or its block wrote nothing: the
    last run then belongs to an earlier turn, before the content of a later user or tool
    message). Records without blocks take theirs from
    :func:`tokenpact.chat.supervision.ranges_and_boundary`."""
    n = len(tokens.ids)
    roles = rendered.roles
    if not roles or roles[-1] != "assistant" or not mask.any():
        return n
    runs = np.flatnonzero(np.diff(np.concatenate([[0], mask])) == 1)
    start = int(runs[-1])
    owners = tokens.owner_message
    prompt_end = max(
        (
            hi
            for o, lo, hi in zip(tokens.span_owner, tokens.span_lo, tokens.span_hi, strict=True)
            if lo < hi and 0 <= owners[o] < len(roles) and roles[owners[o]] != "assistant"
        ),
        default=0,
    )
    return start if start >= prompt_end else n


def is_plain_record(rendered: RenderedText, result: Any, add_special_tokens: bool) -> bool:
    """Whether a record with the chunk's native ``result`` (None: not encoded there) is
    the common SFT record finished without :class:`Tokens`: no control spelling in the
    inputs, no post-processor markers, no ``{% generation %}`` blocks."""
    return (
        result is not None
        and rendered.control_in_input is None
        and not add_special_tokens
        and not rendered.generation_spans
    )


def in_spans(span_lo: list[int], span_hi: list[int], token: int, first: int = 0) -> bool:
    """:meth:`Tokens.in_content` on bare token ranges (from span ``first``)."""
    for lo, hi in zip(span_lo[first:], span_hi[first:], strict=True):
        if lo > token:
            return False
        if token < hi:
            return True
    return False
