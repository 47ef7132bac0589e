"""Which added-token spellings one call recognizes: the trust rule behind
``allowed_special`` / ``disallowed_special``, and the cached matchers that apply it.

Ordinary (non-special) added tokens are content: every call matches them in text, with
their ``lstrip`` / ``rstrip`` / ``single_word`` / ``normalized`` flags, exactly as Hugging
Face ``tokenizers`` matches its added vocabulary. Control (special) tokens are matched only
where a call allows them: a spelling the call does not allow stays ordinary text, skipped
in place as ``tokenizers`` skips specials under ``encode_special_tokens=True``, and the
engine keeps control IDs out of segmentation, so content never yields one.

The functions take the :class:`~tokenpact.core.Tokenizer` whose policy they apply; it owns
the matcher caches (``Tokenizer._matcher``, ``Tokenizer._spelling_matcher``) and the tables
of spellings (``Tokenizer._gated()``: every added token; ``Tokenizer.special_tokens``).
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

# What a matched spelling may become in one call (the native matcher's gates).
ORDINARY, CONTROL, BLOCKED = "ordinary", "control", "blocked"


def special_set(tok: Tokenizer, spec: SpecialSpec, arg: str) -> frozenset[str]:
    """The spellings an ``allowed_special`` / ``disallowed_special`` argument names:
    ``"all"`` means every control token; a set may also name ordinary added tokens."""
    if spec == "all":
        return frozenset(tok._special_ids)
    if isinstance(spec, str):
        raise ConfigError(f'{arg} takes "all" or a set of spellings, not the string {spec!r}')
    chosen = frozenset(spec)
    unknown = sorted(chosen - tok._gated().keys())
    if unknown:
        raise ConfigError(
            f"{arg} names {unknown}, which are not special tokens of this tokenizer; "
            f"known: {sorted(tok._special_ids)[:10]}"
        )
    return chosen


def gate_of(
    tok: Tokenizer, spelling: str, allowed: frozenset[str], promoted: frozenset[str]
) -> str:
    """What ``spelling`` may become in a call that allows the controls ``allowed``;
    ``promoted`` ordinary tokens count as controls (a chat template's turn markers)."""
    if spelling not in tok._special_ids and spelling not in promoted:
        return ORDINARY
    return CONTROL if spelling in allowed else BLOCKED


def build_matcher(
    tok: Tokenizer, allowed: frozenset[str], promoted: frozenset[str] = frozenset()
) -> Any:
    """The native matcher of one call allowing the control spellings ``allowed``, or None
    when nothing can match (no ordinary added token and no allowed control).
    ``promoted``: ordinary added tokens treated as controls (never matched in content).

    With ordinary added tokens (Hugging Face's added vocabulary) every added token is in
    the automaton: a control the call does not allow still wins the leftmost-longest match
    over an overlapping spelling and is then skipped, so text around it encodes as
    ``tokenizers`` encodes it with ``encode_special_tokens=True``. Without them (tiktoken's
    model: every added token is a control) the automaton holds the allowed spellings
    alone, as tiktoken's does. The two differ only where spellings overlap.
    ``Tokenizer._matcher`` caches it."""
    if not tok._ordinary:
        if not allowed:
            return None
        gated = {s: tok._gated()[s] for s in allowed}
    else:
        gated = tok._gated()
    if not tok._added_flags:
        order = sorted(gated)
        return _native.SpecialMatcher(
            [(s, gated[s]) for s in order],
            None,
            None,
            [gate_of(tok, s, allowed, promoted) for s in order],
        )
    return flagged_matcher(
        frozenset(gated),
        gated,
        tok._added_flags,
        _normalizer(tok),
        gate=lambda s: gate_of(tok, s, allowed, promoted),
    )


def spelling_matcher(tok: Tokenizer, spellings: frozenset[str]) -> Any:
    """A matcher that finds ``spellings`` as written (``find_first``): the disallowed
    check and the chat layer's search for control spellings in content."""
    gated = tok._gated()
    if not tok._added_flags:
        return _native.SpecialMatcher([(s, gated[s]) for s in sorted(spellings)])
    return flagged_matcher(spellings, gated, tok._added_flags, _normalizer(tok))


def _normalizer(tok: Tokenizer) -> Any:
    """The engine that normalizes ``normalized`` tokens, when it can (declared)."""
    return tok._core if Capability.ADDED_TOKEN_FLAGS in tok._capabilities else None


def resolve(
    tok: Tokenizer, allowed_special: SpecialSpec, disallowed_special: SpecialSpec
) -> tuple[Any, Any]:
    """``(matcher, disallowed matcher)`` of one call; each None where it has nothing to do.

    The default policy (no control allowed, none refused) is ``tok._default_matcher``:
    callers on a hot path test ``allowed_special or disallowed_special`` first."""
    if not allowed_special and not disallowed_special:
        return tok._default_matcher, None
    named = special_set(tok, allowed_special, "allowed_special") if allowed_special else None
    # Naming an ordinary added token changes nothing: it matches in every call.
    allowed = frozenset() if named is None else frozenset(named & tok._special_ids.keys())
    if not disallowed_special:
        disallowed: frozenset[str] = frozenset()
    elif disallowed_special == "all":
        disallowed = frozenset(tok._special_ids) - allowed
    else:
        disallowed = special_set(tok, disallowed_special, "disallowed_special") - allowed
    return (
        tok._matcher(allowed),
        tok._spelling_matcher(disallowed) if disallowed else None,
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
