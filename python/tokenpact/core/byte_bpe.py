"""Specs of byte-level BPE tokenizers built from in-memory tables: ranked merges
(``Tokenizer.from_merges``), explicit merge records (``from_merge_records``) and
tiktoken ranks (``from_ranks``). Each assigns the special tokens and their roles and, when
there is a ``bos`` token, the post-processor that prepends it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..components.processors import PostProcessor, PrependBos, template_node
from ..special import KNOWN_ROLES, SHARED_ROLES, SpecialToken, normalize_special_tokens
from .models import MergeRecords, RankedMerges, TiktokenRanks
from .spec import TokenizerSpec


def prepend_bos(specials: Sequence[tuple[SpecialToken, int]]) -> PrependBos | None:
    """The post-processor that prepends the ``bos`` token, or None without one."""
    bos = next((t.content for t, _ in specials if t.role == "bos"), None)
    return PrependBos(bos) if bos else None


def merges_spec(
    merges: Sequence[tuple[int, int]],
    *,
    pattern: str,
    special_tokens: Iterable[SpecialToken | str] = (),
) -> TokenizerSpec:
    """Ranked merges over bytes: merge ``r`` creates ID ``256 + r``; special tokens get
    the IDs after the merges, in declared order."""
    specials = normalize_special_tokens(special_tokens)
    base = 256 + len(merges)
    pairs = [(t, base + i) for i, t in enumerate(specials)]
    model = RankedMerges([(int(a), int(b)) for a, b in merges])
    return TokenizerSpec.with_pattern(
        model, pattern, special_tokens=pairs, post_processor=prepend_bos(pairs)
    )


def records_spec(
    records: Sequence[tuple[int, int, int]],
    *,
    vocab: Sequence[bytes],
    pattern: str,
    special_tokens: Sequence[tuple[SpecialToken, int]] = (),
    post_processor: PostProcessor | Mapping[str, Any] | None = None,
) -> TokenizerSpec:
    """Explicit merge records ``(left, right, new_id)`` in rank order over ``vocab``."""
    model = MergeRecords(
        [bytes(v) for v in vocab], [(int(a), int(b), int(c)) for a, b, c in records]
    )
    return TokenizerSpec.with_pattern(
        model,
        pattern,
        special_tokens=[(t, int(i)) for t, i in special_tokens],
        post_processor=template_node(post_processor),
    )


def rank_specials(
    special_tokens: Mapping[str, int] | None, roles: Mapping[str, str] | None
) -> list[tuple[SpecialToken, int]]:
    """Special tokens of a rank file by ID, with roles from ``roles`` or the well-known
    spellings; a single role (bos, eos, ...) goes to its first holder only."""
    roles = dict(roles or {})
    pairs = [
        (SpecialToken(content, roles.get(content, KNOWN_ROLES.get(content, "reserved"))), int(i))
        for content, i in (special_tokens or {}).items()
    ]
    seen: set[str] = set()
    unique = []
    for tok, i in sorted(pairs, key=lambda p: p[1]):
        if tok.role not in SHARED_ROLES and tok.role in seen:
            tok = SpecialToken(tok.content, "reserved")
        seen.add(tok.role)
        unique.append((tok, i))
    return unique


def ranks_spec(
    ranks: Sequence[bytes],
    *,
    pattern: str,
    special_tokens: Mapping[str, int] | None = None,
    roles: Mapping[str, str] | None = None,
) -> TokenizerSpec:
    """tiktoken ranks: ``ranks[i]`` is the byte piece with rank/ID ``i``."""
    specials = rank_specials(special_tokens, roles)
    return TokenizerSpec.with_pattern(
        TiktokenRanks([bytes(r) for r in ranks]),
        pattern,
        special_tokens=specials,
        post_processor=prepend_bos(specials),
    )
