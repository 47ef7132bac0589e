"""Which added-token spellings one call recognizes: the trust rule behind
``allowed_special`` / ``disallowed_special``, and the cached matchers that apply it.

A mixin of :class:`~tokenpact.Tokenizer`, kept apart so each file stays one concept.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from . import _native
from .core import Capability
from .errors import ConfigError, SpecialTokenError
from .special import AddedTokenFlags, flagged_matcher

SpecialSpec = Literal["all"] | Collection[str]


class SpecialPolicyMixin:
    """Every added token, special or not, matches only with explicit permission."""

    _core: Any
    _added: dict[str, int]
    _special_ids: dict[str, int]
    _added_flags: dict[str, AddedTokenFlags]
    _matchers: dict[frozenset[str], Any]
    _capabilities: frozenset[Capability]

    def _gated(self) -> dict[str, int]:
        """Every added token, special or not: all need explicit permission to match."""
        cached = getattr(self, "_gated_cache", None)
        if cached is None:
            cached = {**self._added, **self._special_ids}
            self._gated_cache = cached
        return cached

    def _special_set(self, spec: SpecialSpec, arg: str) -> frozenset[str]:
        if spec == "all":
            return frozenset(self._gated())
        if isinstance(spec, str):
            raise ConfigError(f'{arg} takes "all" or a set of spellings, not the string {spec!r}')
        chosen = frozenset(spec)
        unknown = sorted(chosen - self._gated().keys())
        if unknown:
            raise ConfigError(
                f"{arg} names {unknown}, which are not special tokens of this tokenizer; "
                f"known: {sorted(self._special_ids)[:10]}"
            )
        return chosen

    def _matcher(self, spellings: frozenset[str]) -> Any:
        m = self._matchers.get(spellings)
        if m is None:
            gated = self._gated()
            if not self._added_flags:
                m = _native.SpecialMatcher([(s, gated[s]) for s in sorted(spellings)])
            else:
                # The engine normalizes ``normalized`` tokens when it can (declared).
                normalizer = (
                    self._core if Capability.ADDED_TOKEN_NORMALIZER in self._capabilities else None
                )
                m = flagged_matcher(spellings, gated, self._added_flags, normalizer)
            self._matchers[spellings] = m
        return m

    @property
    def added_token_flags(self) -> dict[str, AddedTokenFlags]:
        """Hugging Face matching flags of the added tokens that have any (see
        :class:`AddedTokenFlags`); every other added token is matched plainly."""
        return dict(self._added_flags)

    def _policy(self, allowed_special: SpecialSpec, disallowed_special: SpecialSpec) -> tuple:
        if not allowed_special and not disallowed_special:
            # The default policy: no added token is recognized; per-call cost matters.
            return None, None
        allowed = self._special_set(allowed_special, "allowed_special")
        if disallowed_special == "all":
            disallowed = frozenset(self._gated()) - allowed
        else:
            disallowed = self._special_set(disallowed_special, "disallowed_special") - allowed
        return (
            self._matcher(allowed) if allowed else None,
            self._matcher(disallowed) if disallowed else None,
        )

    @staticmethod
    def _check_disallowed(text: str, matcher: Any) -> None:
        hit = matcher.find_first(text)
        if hit is not None:
            spelling = hit[1]
            raise SpecialTokenError(
                f"text contains the special-token spelling {spelling!r}, which this call "
                "disallows. To encode it as its control ID pass "
                f"allowed_special={{{spelling!r}}} (or 'all'); to encode it as ordinary text "
                "pass disallowed_special=() (the default)."
            )
