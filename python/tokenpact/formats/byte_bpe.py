"""Byte-level BPE constructors behind ``Tokenizer.from_merges`` / ``from_merge_records`` /
``from_ranks``: each builds the Rust core and the tokenizer's special-token table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import _native
from ..patterns import resolve_pattern
from ..special import SpecialToken, normalize_special_tokens

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def tokenizer_from_merges(
    cls: type[Tokenizer],
    merges: Sequence[tuple[int, int]],
    *,
    pattern: str,
    special_tokens: Iterable[SpecialToken | str],
    training: dict[str, Any] | None,
) -> Tokenizer:
    specials = normalize_special_tokens(special_tokens)
    base = 256 + len(merges)
    pairs = [(t, base + i) for i, t in enumerate(specials)]
    name, source = resolve_pattern(pattern)
    merge_list = [(int(a), int(b)) for a, b in merges]
    core = _native.BpeCore.from_merges(merge_list, source, name, [(t.content, i) for t, i in pairs])
    bos = next((t.content for t, _ in pairs if t.role == "bos"), None)
    post = {"type": "prepend_bos", "token": bos} if bos else None
    return cls(
        core,
        pattern=source,
        semantics="merge_ranks",
        special_tokens=pairs,
        post_processor=post,
        training=training,
    )


def tokenizer_from_merge_records(
    cls: type[Tokenizer],
    records: Sequence[tuple[int, int, int]],
    *,
    vocab: Sequence[bytes],
    pattern: str,
    special_tokens: Sequence[tuple[SpecialToken, int]],
    post_processor: dict[str, Any] | None,
) -> Tokenizer:
    name, source = resolve_pattern(pattern)
    pairs = [(t, int(i)) for t, i in special_tokens]
    core = _native.BpeCore.from_records(
        [bytes(v) for v in vocab],
        [(int(a), int(b), int(c)) for a, b, c in records],
        source,
        name,
        [(t.content, i) for t, i in pairs],
    )
    return cls(
        core,
        pattern=source,
        semantics="merge_records",
        special_tokens=pairs,
        post_processor=post_processor,
    )


def tokenizer_from_ranks(
    cls: type[Tokenizer],
    ranks: Sequence[bytes],
    *,
    pattern: str,
    special_tokens: dict[str, int] | None,
    roles: dict[str, str] | None,
) -> Tokenizer:
    from ..tokenizer import KNOWN_ROLES as known_roles

    specials = dict(special_tokens or {})
    roles = dict(roles or {})
    pairs = []
    for content, token_id in specials.items():
        role = roles.get(content, known_roles.get(content, "reserved"))
        pairs.append((SpecialToken(content, role), int(token_id)))
    # A role other than "reserved" must be unique; keep the first holder of each role.
    seen: set[str] = set()
    unique = []
    for tok, i in sorted(pairs, key=lambda p: p[1]):
        if tok.role != "reserved" and tok.role in seen:
            tok = SpecialToken(tok.content, "reserved")
        seen.add(tok.role)
        unique.append((tok, i))
    name, source = resolve_pattern(pattern)
    core = _native.BpeCore.from_ranks(
        [bytes(r) for r in ranks], source, name, [(t.content, i) for t, i in unique]
    )
    bos = next((t.content for t, _ in unique if t.role == "bos"), None)
    post = {"type": "prepend_bos", "token": bos} if bos else None
    return cls(
        core,
        pattern=source,
        semantics="tiktoken_ranks",
        special_tokens=unique,
        post_processor=post,
    )


def tokenizer_from_core(
    cls: type[Tokenizer],
    core: Any,
    *,
    pattern: str,
    special_tokens: Sequence[tuple[SpecialToken, int]],
    source: dict[str, Any],
) -> Tokenizer:
    """A tiktoken-rank tokenizer around an already built ``BpeCore`` (Tekken files, whose
    ranks start after the special IDs); ``add_special_tokens`` prepends the bos token."""
    _, pattern_source = resolve_pattern(pattern)
    bos = next((t.content for t, _ in special_tokens if t.role == "bos"), None)
    return cls(
        core,
        pattern=pattern_source,
        semantics="tiktoken_ranks",
        special_tokens=list(special_tokens),
        post_processor={"type": "prepend_bos", "token": bos} if bos else None,
        source=source,
    )
