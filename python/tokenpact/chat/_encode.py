"""Tokenize a rendered conversation once, with control tokens recognized outside content.

The rendered string is encoded in a single pass (pre-tokenization flows across content
boundaries exactly as Hugging Face's does), every added or special token is allowed, and
codepoint ``untrusted`` spans (the content) are excluded from matching. The result stays
in numpy arrays with UTF-8 byte offsets, so ownership and masks are computed without
per-token Python objects.

Per-tokenizer facts the chat package needs (control IDs, spellings, BOS/EOS, the
post-processor's prefix and suffix) are computed once and cached weakly.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer

# Markers that look like control tokens; printed as ordinary text they are a template bug
# (the failure of a chat template that inserts plain strings instead of special IDs).
MARKER_RE = re.compile(r"<\|[^|<>\s]{1,64}\|>|<｜[^｜<>\s]{1,64}｜>")
# The origin of each per-token kind code (``Conversation.origin``), in the order of the
# codes the native chunk encoder writes.
KINDS: tuple[str, ...] = ("control", "template", "content", "document", "tools")


@dataclass(frozen=True, eq=False)
class TokenizerFacts:
    """What formatting needs to know about one tokenizer, computed once."""

    control_ids: np.ndarray  # sorted IDs of every control (special) token
    is_control: np.ndarray  # bool lookup table indexed by ID (np.isin is 10x slower here)
    control_set: frozenset[int]
    spelling_of: dict[int, str]
    spelling_re: re.Pattern[str] | None  # any control spelling, longest first
    bos_id: int | None
    eos_id: int | None
    post_prefix: tuple[int, ...]  # control IDs the post-processor puts before a sequence
    post_suffix: tuple[int, ...]
    # The native matcher a render encodes with: ordinary added tokens everywhere, every
    # control outside content spans (when available).
    matcher: Any
    # The native matcher of the control spellings alone: where content holds one.
    control_matcher: Any
    # The native engine, when available: its cached int objects make ID lists (a
    # reference per ID instead of an int made and freed per ID).
    engine: Any = None

    def find_control_spelling(self, text: str) -> str | None:
        """The first control spelling inside ``text``, or None."""
        if self.control_matcher is not None:
            hit = self.control_matcher.find_first(text)
            return None if hit is None else str(hit[1])
        found = self.spelling_re.search(text) if self.spelling_re is not None else None
        return None if found is None else found.group(0)


# Per tokenizer, per set of turn markers (ordinary added tokens a template treats as control).
_FACTS: weakref.WeakKeyDictionary[Any, dict[frozenset[str], TokenizerFacts]] = (
    weakref.WeakKeyDictionary()
)


def _post_processor_ends(tok: Tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    post = tok.post_processor
    specials = tok.special_tokens
    if not post:
        return (), ()
    if post.get("type") == "prepend_bos":
        token = specials.get(str(post.get("token")))
        return ((token,) if token is not None else ()), ()
    items = list(post.get("single") or [])
    where = next((k for k, item in enumerate(items) if item[0] == "sequence"), len(items))

    def ids(part: list[Any]) -> tuple[int, ...]:
        return tuple(specials[i[1]] for i in part if i[0] == "special" and i[1] in specials)

    return ids(items[:where]), ids(items[where + 1 :])


def _native_engine(tok: Tokenizer) -> Any:
    """``tok``'s native engine (``Tokenizer.engine``), or None (a stand-in without one)."""
    from .. import _native

    core = getattr(tok, "engine", None)
    return core if isinstance(core, _native.Engine) else None


def facts(tok: Tokenizer, markers: frozenset[str] = frozenset()) -> TokenizerFacts:
    """The cached :class:`TokenizerFacts` of ``tok``; ``markers`` are ordinary added
    tokens a template treats as control (its turn markers, :func:`turn_markers`)."""
    per_tok = _FACTS.get(tok)
    found = None if per_tok is None else per_tok.get(markers)
    if found is not None:
        return found
    # Ordinary added tokens are content (matched in messages too, as transformers matches
    # them); only specials, and the template's turn markers, are control.
    added = tok.added_tokens
    promoted = frozenset(m for m in markers if m in added)
    spellings = {**{m: added[m] for m in promoted}, **tok.special_tokens}
    control_ids = np.array(sorted(set(spellings.values())), dtype=np.int64)
    ordered = sorted(spellings, key=len, reverse=True)
    spelling_re = re.compile("|".join(map(re.escape, ordered))) if ordered else None
    matcher = control_matcher = None
    special_matcher = getattr(tok, "special_matcher", None)
    if special_matcher is not None:
        # The engine's Aho-Corasick matchers (Tokenizer.special_matcher): every control
        # allowed (outside content spans, which the engine calls exclude), and the
        # control spellings alone.
        matcher = special_matcher(spellings, promoted=promoted)
        control_matcher = special_matcher(spellings, find_only=True) if spellings else None
    prefix, suffix = _post_processor_ends(tok)
    table = np.zeros(max(int(tok.vocab_size), int(control_ids.max(initial=-1)) + 1), dtype=bool)
    table[control_ids] = True
    found = TokenizerFacts(
        control_ids=control_ids,
        is_control=table,
        control_set=frozenset(int(i) for i in control_ids.tolist()),
        spelling_of={int(v): k for k, v in spellings.items()},
        spelling_re=spelling_re,
        bos_id=tok.bos_id,
        eos_id=tok.eos_id,
        post_prefix=prefix,
        post_suffix=suffix,
        matcher=matcher,
        control_matcher=control_matcher,
        engine=_native_engine(tok),
    )
    _FACTS.setdefault(tok, {})[markers] = found
    return found


# A benign conversation, rendered without a generation prompt: the added tokens its render
# holds are what the template writes around every turn (a generation prompt may also open
# the reasoning block, R1's `<think>`, which the model then writes in its turns).
_PROBES: tuple[list[dict[str, str]], ...] = (
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Thanks"},
    ],
    [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Thanks"},
    ],
)


def turn_markers(tok: Tokenizer, render: Any) -> frozenset[str]:
    """The ordinary added tokens a template writes around plain turns (DeepSeek's
    ``<｜User｜>`` / ``<｜Assistant｜>``): role markers that the tokenizer file happens to
    declare non-special. ``render(messages)`` returns the template's text without a
    generation prompt; content spellings of these tokens must not open a turn, so chat
    treats them as control. Tokens written only inside turns (Qwen's ``<think>``,
    ``<tool_call>``) are not markers and match in content as in transformers."""
    ordinary = [s for s in tok.added_tokens if s not in tok.special_tokens]
    if not ordinary:
        return frozenset()
    found: set[str] = set()
    for probe in _PROBES:
        try:
            text = str(render(probe))
        except Exception:  # a template that refuses this probe (roles, system) says nothing
            continue
        found.update(s for s in ordinary if s in text)
    return frozenset(found)


def byte_positions(text: str, positions: np.ndarray) -> np.ndarray:
    """UTF-8 byte offsets of codepoint ``positions`` in ``text`` (``len(text)`` allowed)."""
    if text.isascii() or not len(positions):
        return positions.astype(np.int64)
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    starts = np.flatnonzero((data & 0xC0) != 0x80)
    starts = np.append(starts, data.size)
    return starts[positions.astype(np.int64)]


def utf8_offsets(text: str, positions: list[int]) -> list[int]:
    """UTF-8 byte offsets of the sorted codepoint ``positions`` in ``text``.

    Few positions (span boundaries) on a short text: summing the encoded length of each
    stretch between two positions beats scanning the whole text with numpy.
    """
    if text.isascii() or not positions:
        return positions
    out = []
    cursor = offset = 0
    for position in positions:
        if position < cursor:  # not sorted: start over from the beginning
            cursor = offset = 0
        offset += len(text[cursor:position].encode("utf-8"))
        cursor = position
        out.append(offset)
    return out


@dataclass(frozen=True, eq=False)
class Encoded:
    """IDs of a rendered text, with UTF-8 byte offsets of each token and of each span."""

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    span_starts: np.ndarray
    span_ends: np.ndarray


def encode_untrusted_spans(
    tok: Tokenizer, text: str, spans: list[tuple[int, int]], info: TokenizerFacts | None = None
) -> Encoded:
    """Encode ``text`` allowing every control token except inside codepoint ``spans``.

    ``spans`` must be sorted and disjoint.
    """
    info = info or facts(tok)
    try:
        flat = utf8_offsets(text, [x for span in spans for x in span])
        ids, starts, ends = encode_byte_spans(tok, info, text, flat)
    except UnicodeEncodeError:
        tok.encode(text)  # raises the tokenizer's own InvalidInputError naming the fix
        raise
    return Encoded(
        ids, starts, ends, np.array(flat[0::2], dtype=np.int64), np.array(flat[1::2], np.int64)
    )


def encode_byte_spans(
    tok: Tokenizer, info: TokenizerFacts, text: str, flat: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IDs and UTF-8 byte offsets of ``text`` with control tokens allowed outside the
    byte spans ``flat`` (``[start0, end0, start1, end1, ...]``, sorted, disjoint)."""
    core = info.engine
    if core is not None and info.matcher is not None:
        # Fast path: the engine call behind Tokenizer.encode_structured, without building
        # per-token strings (Conversation derives pieces lazily when they are displayed).
        byte_spans = list(zip(flat[0::2], flat[1::2], strict=True)) if flat else None
        ids, starts, ends = core.encode_with_offsets(text, info.matcher, byte_spans)
        return ids, starts, ends
    codepoints = _codepoint_spans(text, flat)
    enc = tok.encode_structured(
        text,
        allowed_special="all",
        coordinate="raw_utf8_bytes",
        untrusted_spans=codepoints,
        truncation=False,  # a rendered conversation is cut by its own budget
        padding=False,
    )
    offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
    return np.asarray(enc.ids, dtype=np.int64), offsets[:, 0], offsets[:, 1]


def _codepoint_spans(text: str, flat: list[int]) -> list[tuple[int, int]]:
    """Byte spans back to codepoint spans (the public API takes codepoints)."""
    if text.isascii():
        return list(zip(flat[0::2], flat[1::2], strict=True))
    data = text.encode("utf-8")
    points = [len(data[:b].decode("utf-8")) for b in flat]
    return list(zip(points[0::2], points[1::2], strict=True))


ChunkEncoder = Callable[..., Any]  # start(texts, spans, kinds, threads, renders=None)


def chunk_encoder(tok: Tokenizer, info: TokenizerFacts) -> ChunkEncoder | None:
    """``start(texts, spans, span_kinds, threads)``: the native encoder of a chunk of
    rendered texts (codepoint ``spans`` flat per text, content excluded from control
    matching, each span's owner kind code), which returns a job at once and encodes on
    worker threads; ``job.wait(lists=False)`` gives, per text, ``(encoded, codes)``: what
    :func:`~tokenpact.chat.ownership.owned_tokens` takes. None when this tokenizer goes
    through the public encode path (no native engine, or no control spellings): the
    render core then encodes each record on the calling thread."""
    core = info.engine
    if core is None or info.matcher is None:
        return None
    # One encoder per tokenizer: building it copies the control table (one flag per ID),
    # which a batch call of a few records (a chunk of the process executor) would pay each time.
    found = _CHUNK_ENCODERS.get(info)
    if found is not None and found[0] is core:
        return found[1]
    from .. import _native

    encoder = _native.ChatChunkEncoder(core, info.matcher, info.is_control, list(KINDS))
    _CHUNK_ENCODERS[info] = (core, encoder.start)
    return encoder.start


_CHUNK_ENCODERS: weakref.WeakKeyDictionary[TokenizerFacts, tuple[Any, ChunkEncoder]] = (
    weakref.WeakKeyDictionary()
)
