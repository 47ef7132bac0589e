"""Old-vocabulary facts about a new tokenizer: the prefix proof and row decompositions.

``prefix_problems`` is the append-only proof: every old ID keeps its
bytes, every special token its ID and role, every merge its rank, and the pre-tokenizer
is unchanged. An empty list means the old tokenizer is an exact prefix of the new one.
"""

from __future__ import annotations

from .. import files
from ..core import Tokenizer
from ..errors import ConfigError, TokenpactError
from .layout import canonical_layout, check_extensible
from .reference import segment


def id_space(tok: Tokenizer) -> int:
    """Number of IDs including non-special added tokens (``vocab_size`` counts the model
    pieces and the special tokens only)."""
    return max([tok.vocab_size, *(i + 1 for i in tok.added_tokens.values())])


def id_pieces(tok: Tokenizer) -> list[bytes | None]:
    """The bytes of every ID (a special or added token: its spelling; a gap: None), read
    in one call instead of one ``token_bytes`` per ID."""
    pieces: list[bytes | None] = list(tok.vocab())
    pieces += [None] * (id_space(tok) - len(pieces))
    for content, i in (*tok.special_tokens.items(), *tok.added_tokens.items()):
        pieces[i] = content.encode("utf-8")
    return pieces


def _normalizer(tok: Tokenizer) -> object:
    return tok.spec.normalizer


def _piece(tok: Tokenizer, i: int) -> bytes | None:
    try:
        return tok.token_bytes(i)
    except TokenpactError:
        return None


def _pattern_spellings(tok: Tokenizer) -> set[str]:
    """The pattern, and its spelling in a tokenizer.json (Oniguruma reads a possessive
    interval differently, so the export drops the '+'; both split text identically)."""
    spellings = {tok.pattern}
    try:
        spellings.add(files.hf_pattern(tok))
    except TokenpactError:
        pass
    return spellings


def prefix_problems(old: Tokenizer, new: Tokenizer, *, limit: int = 20) -> list[str]:
    """Reasons the old tokenizer is not an ID prefix of the new one (empty: it is)."""
    problems: list[str] = []
    old_n, new_n = id_space(old), id_space(new)
    if new_n < old_n:
        problems.append(f"the new vocabulary is smaller ({new_n} < {old_n})")
    old_pieces, new_pieces = id_pieces(old), id_pieces(new)
    shared = min(old_n, new_n)
    if old_pieces[:shared] != new_pieces[:shared]:
        for i in range(shared):
            a, b = old_pieces[i], new_pieces[i]
            if a != b:
                problems.append(f"ID {i} changed from {a!r} to {b!r}")
                if len(problems) >= limit:
                    return problems
    new_specials, new_roles = new.special_tokens, new.special_token_roles
    for content, i in old.special_tokens.items():
        if new_specials.get(content) != i:
            problems.append(f"special {content!r} moved from ID {i} to {new_specials.get(content)}")
        elif new_roles.get(content) != old.special_token_roles[content]:
            problems.append(f"special {content!r} changed role")
    for content, i in old.added_tokens.items():
        if new.added_tokens.get(content) != i:
            problems.append(f"added token {content!r} moved from ID {i}")
    old_merges = old.merges
    if new.merges[: len(old_merges)] != old_merges:
        first = next(
            (r for r, (a, b) in enumerate(zip(old_merges, new.merges, strict=False)) if a != b),
            min(len(old_merges), len(new.merges)),
        )
        problems.append(f"merge rank {first} changed (old merges must keep their ranks)")
    if new.pattern not in _pattern_spellings(old):
        problems.append("the pre-tokenizer pattern changed")
    if _normalizer(old) != _normalizer(new):
        problems.append("the normalizer changed")
    return problems[:limit]


def decompositions(old: Tokenizer, new: Tokenizer) -> dict[int, list[int]]:
    """For each new ID, the old IDs its piece splits into under the old tokenizer (FVT).

    Byte-level BPE pieces are segmented on bytes with the old merges (no pre-tokenizer,
    so a piece like ``" ="`` keeps its leading space inside one decomposition); added
    tokens are encoded as text; control tokens and reserved IDs have none (empty).
    """
    control = set(new.special_tokens.values())
    added = {i: c for c, i in new.added_tokens.items()}
    ranks: dict[tuple[int, int], int] | None = None
    to_id: list[int] = []
    try:
        check_extensible(old)
        layout = canonical_layout(old)
        ranks = {pair: r for r, pair in enumerate(layout.merges)}
        to_id = layout.to_id
    except ConfigError:
        ranks = None
    out: dict[int, list[int]] = {}
    for i in range(id_space(old), id_space(new)):
        if i in control:
            out[i] = []
        elif i in added:
            out[i] = list(old.encode(added[i]))
        else:
            piece = _piece(new, i)
            if piece is None:
                out[i] = []
            elif ranks is not None:
                out[i] = [to_id[c] for c in segment(piece, ranks)]
            else:
                try:
                    out[i] = list(old.encode(piece.decode("utf-8")))
                except (UnicodeDecodeError, TokenpactError):
                    out[i] = []
    return out
