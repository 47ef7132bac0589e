"""Special tokens and their roles.

A special token is a control symbol with its own ID. Its printed spelling is *not* the
token: plain ``encode(text)`` treats the spelling as ordinary text, and only trusted
insertion (a post-processor, a template, or an explicit ``allowed_special``) emits the ID.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from .errors import ConfigError

ROLES = ("bos", "eos", "pad", "unk", "eot", "reserved")


@dataclass(frozen=True)
class SpecialToken:
    """A control token: its spelling and its role (bos, eos, pad, unk, eot, reserved)."""

    content: str
    role: str = "reserved"

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) or not self.content:
            raise ConfigError("a special token needs a non-empty string spelling")
        if self.role not in ROLES:
            raise ConfigError(
                f"special token {self.content!r} has unknown role {self.role!r}; "
                f"use one of {', '.join(ROLES)}"
            )


class AddedTokenFlags(NamedTuple):
    """How Hugging Face matches an added token in text (its ``AddedToken`` flags).

    ``single_word``: a match next to a word character (``\\w``) is not the token.
    ``lstrip`` / ``rstrip``: the token absorbs the whitespace on its left / right (its
    offsets cover it). ``normalized``: the token is matched in the normalized text,
    its spelling normalized too. All false: the spelling is matched in the raw text.
    """

    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False


def flagged_matcher(
    spellings: frozenset[str],
    ids: Mapping[str, int],
    flags: Mapping[str, AddedTokenFlags],
    core: Any,
    gate: Callable[[str], str] | None = None,
) -> Any:
    """The native matcher for ``spellings`` when some added tokens carry flags.

    ``flags`` is in Hugging Face's pattern order (special tokens first), which decides
    between equal spellings; ``core`` is an engine whose normalizer serves ``normalized``
    tokens (None: an engine without that capability); ``gate`` says what each spelling
    may become ("ordinary", "control" or "blocked"; every one "control" when omitted).
    """
    from . import _native

    rank = {s: i for i, s in enumerate(flags)}
    order = sorted(spellings, key=lambda s: (rank.get(s, len(rank)), s))
    plain = AddedTokenFlags()
    per_token = [
        (f.single_word, f.lstrip, f.rstrip, f.normalized)
        for f in (flags.get(s, plain) for s in order)
    ]
    gates = None if gate is None else [gate(s) for s in order]
    return _native.SpecialMatcher([(s, ids[s]) for s in order], per_token, core, gates)


# Roles of well-known spellings when a file (tiktoken) does not declare roles.
KNOWN_ROLES = {
    "<|begin_of_text|>": "bos",
    "<|end_of_text|>": "eos",
    "<|endoftext|>": "eos",
    "<|eot_id|>": "eot",
    "<|bos|>": "bos",
    "<|eos|>": "eos",
    "<|pad|>": "pad",
    "<|unk|>": "unk",
    "<|eot|>": "eot",
}


DEFAULT_SPECIAL_TOKENS: tuple[SpecialToken, ...] = (
    SpecialToken("<|bos|>", "bos"),
    SpecialToken("<|eos|>", "eos"),
    SpecialToken("<|pad|>", "pad"),
    SpecialToken("<|unk|>", "unk"),
    SpecialToken("<|eot|>", "eot"),
)


def normalize_special_tokens(
    tokens: object,
) -> tuple[SpecialToken, ...]:
    """Accept SpecialToken objects, plain strings (role ``reserved``) or (content, role) pairs."""
    if tokens is None:
        return ()
    result: list[SpecialToken] = []
    seen: set[str] = set()
    seen_roles: set[str] = set()
    for item in tokens:  # type: ignore[attr-defined]
        if isinstance(item, SpecialToken):
            token = item
        elif isinstance(item, str):
            token = SpecialToken(item)
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            token = SpecialToken(str(item[0]), str(item[1]))
        else:
            raise ConfigError(
                f"cannot read special token {item!r}; pass tp.SpecialToken(content, role)"
            )
        if token.content in seen:
            raise ConfigError(f"special token {token.content!r} is declared twice")
        if token.role != "reserved" and token.role in seen_roles:
            raise ConfigError(
                f"two special tokens have role {token.role!r}; give each role to one token"
            )
        seen.add(token.content)
        seen_roles.add(token.role)
        result.append(token)
    return tuple(result)
