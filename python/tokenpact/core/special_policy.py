"""Which added-token spellings one call recognizes: the trust rule behind
``allowed_special`` / ``disallowed_special``, and the cached matchers that apply it.

Ordinary (non-special) added tokens are content: every call matches them in text, with
their ``lstrip`` / ``rstrip`` / ``single_word`` / ``normalized`` flags, exactly as Hugging
Face ``tokenizers`` matches its added vocabulary. Control (special) tokens are matched only
where a call allows them: a spelling the call does not allow stays ordinary text, skipped
in place as ``tokenizers`` skips specials under ``encode_special_tokens=True``, and the
engine keeps control IDs out of segmentation, so content never yields one.

:class:`SpecialTokenPolicy` owns a tokenizer's added-token tables and the matchers built
from them; the :class:`~tokenpact.core.Tokenizer` builds one from its spec and holds it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from .. import _native
from ..errors import ConfigError, SpecialTokenError, UnknownTokenError
from ..special import flagged_matcher

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..special import AddedTokenFlags

SpecialSpec = Literal["all"] | Collection[str]

# What a matched spelling may become in one call (the native matcher's gates).
ORDINARY, CONTROL, BLOCKED = "ordinary", "control", "blocked"


class SpecialTokenPolicy:
    """The added tokens of one tokenizer and the trust rule over them.

    Its tables (read them, never change them): ``special_ids`` (control tokens, spelling
    -> ID), ``added`` (non-special added tokens: content), ``gated`` (every added token
    by spelling; a special wins a spelling both declare), ``flags`` (Hugging Face
    matching flags, in HF's match order, of the tokens that have any),
    ``special_id_set``, ``added_id_set``, ``ordinary`` (the spellings that are content
    only) and ``max_id`` (the largest added-token ID, -1 without any). The native
    matchers of the calls are built from them on first use and cached per allowed set.
    """

    def __init__(
        self,
        special_ids: Mapping[str, int],
        added: Mapping[str, int],
        flags: Mapping[str, AddedTokenFlags],
        normalizer: Any = None,
    ) -> None:
        """``normalizer``: the engine that normalizes ``normalized`` tokens (None when
        it cannot: its engine lacks the added-token-flags capability)."""
        self.special_ids = dict(special_ids)
        self.added = dict(added)
        self.flags = dict(flags)
        self.gated = {**self.added, **self.special_ids}
        self.ordinary = frozenset(self.added) - self.special_ids.keys()
        self.special_id_set = frozenset(self.special_ids.values())
        self.added_id_set = frozenset(self.added.values())
        # The largest added-token ID (-1 without any): the vocabulary reaches past it.
        self.max_id = max([*self.special_ids.values(), *self.added.values()], default=-1)
        self._normalizer = normalizer
        self._matchers: dict[tuple[frozenset[str], frozenset[str]], Any] = {}
        self._spelling_matchers: dict[frozenset[str], Any] = {}

    # ------------------------------------------------------------------ one call's sets
    def special_set(self, spec: SpecialSpec, arg: str) -> frozenset[str]:
        """The spellings an ``allowed_special`` / ``disallowed_special`` argument names:
        ``"all"`` means every control token; a set may also name ordinary added tokens."""
        if spec == "all":
            return frozenset(self.special_ids)
        if isinstance(spec, str):
            raise ConfigError(f'{arg} takes "all" or a set of spellings, not the string {spec!r}')
        chosen = frozenset(spec)
        unknown = sorted(chosen - self.gated.keys())
        if unknown:
            raise ConfigError(
                f"{arg} names {unknown}, which are not special tokens of this tokenizer; "
                f"known: {sorted(self.special_ids)[:10]}"
            )
        return chosen

    def gate_of(self, spelling: str, allowed: frozenset[str], promoted: frozenset[str]) -> str:
        """What ``spelling`` may become in a call that allows the controls ``allowed``;
        ``promoted`` ordinary tokens count as controls (a chat template's turn markers)."""
        if spelling not in self.special_ids and spelling not in promoted:
            return ORDINARY
        return CONTROL if spelling in allowed else BLOCKED

    def resolve(
        self, allowed_special: SpecialSpec, disallowed_special: SpecialSpec
    ) -> tuple[Any, Any]:
        """``(matcher, disallowed matcher)`` of one call; each None where it has nothing
        to do.

        The default policy (no control allowed, none refused) is :attr:`default_matcher`:
        callers on a hot path test ``allowed_special or disallowed_special`` first."""
        if not allowed_special and not disallowed_special:
            return self.default_matcher, None
        if not disallowed_special and isinstance(allowed_special, str) and allowed_special == "all":
            return self.all_allowed_matcher, None
        named = self.special_set(allowed_special, "allowed_special") if allowed_special else None
        # Naming an ordinary added token changes nothing: it matches in every call.
        allowed = frozenset() if named is None else frozenset(named & self.special_ids.keys())
        if not disallowed_special:
            disallowed: frozenset[str] = frozenset()
        elif disallowed_special == "all":
            disallowed = frozenset(self.special_ids) - allowed
        else:
            disallowed = self.special_set(disallowed_special, "disallowed_special") - allowed
        return (
            self.matcher(allowed),
            self.spelling_matcher(disallowed) if disallowed else None,
        )

    # ------------------------------------------------------------------ matchers
    def matcher(self, allowed: frozenset[str], promoted: frozenset[str] = frozenset()) -> Any:
        """The native matcher of a call allowing the control spellings ``allowed`` (None
        when nothing can match), built once per set; ``promoted`` ordinary tokens count as
        controls (a chat template's turn markers)."""
        key = (allowed, promoted)
        if key in self._matchers:
            return self._matchers[key]
        m = self._matchers[key] = self._build_matcher(allowed, promoted)
        return m

    @cached_property
    def all_allowed_matcher(self) -> Any:
        """The matcher of ``allowed_special="all"`` (every control spelling), kept so
        that such a call does not rebuild the set of spellings and its hash each time."""
        return self.matcher(frozenset(self.special_ids))

    @cached_property
    def default_matcher(self) -> Any:
        """The matcher of the default policy: ordinary added tokens only (None without)."""
        return self.matcher(frozenset())

    def spelling_matcher(self, spellings: frozenset[str]) -> Any:
        """A matcher that finds ``spellings`` as written (``find_first``), cached: the
        disallowed check and the chat layer's search for control spellings in content."""
        m = self._spelling_matchers.get(spellings)
        if m is None:
            gated = self.gated
            if not self.flags:
                m = _native.SpecialMatcher([(s, gated[s]) for s in sorted(spellings)])
            else:
                m = flagged_matcher(spellings, gated, self.flags, self._normalizer)
            self._spelling_matchers[spellings] = m
        return m

    def special_matcher(
        self, controls: Iterable[str], *, promoted: Iterable[str] = (), find_only: bool = False
    ) -> Any:
        """``Tokenizer.special_matcher``: :meth:`matcher` (or, ``find_only``,
        :meth:`spelling_matcher`) of spellings that must all be added tokens (an unknown
        one raises :class:`~tokenpact.errors.UnknownTokenError`)."""
        chosen, lifted = frozenset(controls), frozenset(promoted)
        unknown = sorted((chosen | lifted) - self.gated.keys())
        if unknown:
            raise UnknownTokenError(f"not an added token of this tokenizer: {unknown[:5]}")
        if find_only:
            return self.spelling_matcher(chosen)
        return self.matcher(chosen, promoted=lifted)

    def _build_matcher(self, allowed: frozenset[str], promoted: frozenset[str]) -> Any:
        """The native matcher of one call allowing the control spellings ``allowed``, or
        None when nothing can match (no ordinary added token and no allowed control).
        ``promoted``: ordinary added tokens treated as controls (never matched in
        content).

        With ordinary added tokens (Hugging Face's added vocabulary) every added token is
        in the automaton: a control the call does not allow still wins the
        leftmost-longest match over an overlapping spelling and is then skipped, so text
        around it encodes as ``tokenizers`` encodes it with
        ``encode_special_tokens=True``. Without them (tiktoken's model: every added token
        is a control) the automaton holds the allowed spellings alone, as tiktoken's
        does. The two differ only where spellings overlap."""
        if not self.ordinary:
            if not allowed:
                return None
            gated = {s: self.gated[s] for s in allowed}
        else:
            gated = self.gated
        if not self.flags:
            order = sorted(gated)
            return _native.SpecialMatcher(
                [(s, gated[s]) for s in order],
                None,
                None,
                [self.gate_of(s, allowed, promoted) for s in order],
            )
        return flagged_matcher(
            frozenset(gated),
            gated,
            self.flags,
            self._normalizer,
            gate=lambda s: self.gate_of(s, allowed, promoted),
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
