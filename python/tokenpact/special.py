"""Special tokens and their roles.

A special token is a control symbol with its own ID. Its printed spelling is *not* the
token: plain ``encode(text)`` treats the spelling as ordinary text, and only trusted
insertion (a post-processor, a template, or an explicit ``allowed_special``) emits the ID.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from .errors import ConfigError

# Roles one token holds at most (a tokenizer has one BOS) ...
SINGLE_ROLES = ("bos", "eos", "pad", "unk", "eot")
# ... and roles several tokens may share: document boundaries, conversation roles, tool
# call/result markers, modality placeholders, and reserved (unassigned) slots.
MARKER_ROLES = ("document", "role", "tool", "modality")
SHARED_ROLES = (*MARKER_ROLES, "reserved")
ROLES = (*SINGLE_ROLES, *SHARED_ROLES)

_MARKER_NAME = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class SpecialToken:
    """A control token: its spelling and its role (bos, eos, pad, unk, eot, document, role,
    tool, modality, reserved)."""

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
        if token.role not in SHARED_ROLES and token.role in seen_roles:
            raise ConfigError(
                f"two special tokens have role {token.role!r}; give each role to one token"
            )
        seen.add(token.content)
        seen_roles.add(token.role)
        result.append(token)
    return tuple(result)


def marker(role: str, name: str | None = None) -> SpecialToken:
    """The control token of a marker role with its stable spelling.

    ``marker("document", "start")`` is ``<|document:start|>``, ``marker("role", "user")``
    ``<|role:user|>``, ``marker("tool", "call")`` ``<|tool:call|>``, ``marker("modality",
    "image")`` ``<|modality:image|>``; without a name the spelling is ``<|document|>``.
    The spelling is a pure function of (role, name), so two tokenizers that declare the
    same markers spell them the same way. Names are lowercase ASCII letters, digits and
    ``_``.
    """
    if role not in MARKER_ROLES:
        raise ConfigError(
            f"marker role {role!r} is not one of {', '.join(MARKER_ROLES)}; "
            "bos/eos/pad/unk/eot are SpecialToken(spelling, role)"
        )
    if name is None:
        return SpecialToken(f"<|{role}|>", role)
    if not isinstance(name, str) or _MARKER_NAME.fullmatch(name) is None:
        raise ConfigError(f"marker name {name!r} must be lowercase ASCII letters, digits or '_'")
    return SpecialToken(f"<|{role}:{name}|>", role)


def marker_tokens(
    *,
    document: Iterable[str] = ("start", "end"),
    roles: Iterable[str] = (),
    tools: Iterable[str] = (),
    modalities: Iterable[str] = (),
) -> tuple[SpecialToken, ...]:
    """Marker tokens in their canonical order: document, role, tool, modality, each group
    in the order given. Pass the result (after the bos/eos/... tokens) as a trainer's
    ``special_tokens``: IDs are assigned in list order, so the same declaration gives the
    same IDs in every artifact that lists it at the same place.
    """
    groups = (("document", document), ("role", roles), ("tool", tools), ("modality", modalities))
    tokens = tuple(marker(role, name) for role, names in groups for name in names)
    return normalize_special_tokens(tokens)
