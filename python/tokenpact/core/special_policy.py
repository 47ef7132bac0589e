"""Which added-token spellings one call recognizes: the trust rule behind
``allowed_special`` / ``disallowed_special``, and the cached matchers that apply it.

Every added token, special or not, matches only with explicit permission. The functions
take the :class:`~tokenpact.core.Tokenizer` whose policy they apply; it owns the matcher
cache (``Tokenizer._matcher``) and the table of gated spellings (``Tokenizer._gated()``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

from .. import _native
from ..errors import ConfigError, SpecialTokenError
from ..special import flagged_matcher
from .engine import Capability

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

SpecialSpec = Literal["all"] | Collection[str]


def special_set(tok: Tokenizer, spec: SpecialSpec, arg: str) -> frozenset[str]:
    """The spellings an ``allowed_special`` / ``disallowed_special`` argument names."""
    gated = tok._gated()
    if spec == "all":
        return frozenset(gated)
    if isinstance(spec, str):
        raise ConfigError(f'{arg} takes "all" or a set of spellings, not the string {spec!r}')
    chosen = frozenset(spec)
    unknown = sorted(chosen - gated.keys())
    if unknown:
        raise ConfigError(
            f"{arg} names {unknown}, which are not special tokens of this tokenizer; "
            f"known: {sorted(tok._special_ids)[:10]}"
        )
    return chosen


def build_matcher(tok: Tokenizer, spellings: frozenset[str]) -> Any:
    """The native matcher of ``spellings`` (``Tokenizer._matcher`` caches it per set)."""
    gated = tok._gated()
    if not tok._added_flags:
        return _native.SpecialMatcher([(s, gated[s]) for s in sorted(spellings)])
    # The engine normalizes ``normalized`` tokens when it can (declared).
    normalizer = tok._core if Capability.ADDED_TOKEN_NORMALIZER in tok._capabilities else None
    return flagged_matcher(spellings, gated, tok._added_flags, normalizer)


def resolve(
    tok: Tokenizer, allowed_special: SpecialSpec, disallowed_special: SpecialSpec
) -> tuple[Any, Any]:
    """``(allowed matcher, disallowed matcher)`` of one call; None where nothing is named.

    Callers on a hot path test ``allowed_special or disallowed_special`` first: the default
    policy (nothing recognized, nothing refused) needs no call."""
    if not allowed_special and not disallowed_special:
        return None, None
    allowed = special_set(tok, allowed_special, "allowed_special")
    if disallowed_special == "all":
        disallowed = frozenset(tok._gated()) - allowed
    else:
        disallowed = special_set(tok, disallowed_special, "disallowed_special") - allowed
    return (
        tok._matcher(allowed) if allowed else None,
        tok._matcher(disallowed) if disallowed else None,
    )


def check_disallowed(text: str, disallowed: Any) -> None:
    """Raise SpecialTokenError when ``text`` holds a spelling the call disallows."""
    hit = disallowed.find_first(text)
    if hit is not None:
        spelling = hit[1]
        raise SpecialTokenError(
            f"text contains the special-token spelling {spelling!r}, which this call "
            "disallows. To encode it as its control ID pass "
            f"allowed_special={{{spelling!r}}} (or 'all'); to encode it as ordinary text "
            "pass disallowed_special=() (the default)."
        )
