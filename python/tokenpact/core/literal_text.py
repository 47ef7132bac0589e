"""What literal control-marker text in content becomes: the literal-text policy.

A control token's spelling (``<|eot|>``, ``<|role:user|>``) can occur in text a user
typed. A tokenizer contract declares one of four answers:

``ordinary``
    The spelling encodes as ordinary text pieces, never as the control ID (what plain
    ``Tokenizer.encode`` does).
``escaped``
    An escape character (default ``\\``) is inserted before every literal spelling, then
    the text encodes as ordinary pieces. The escape is reversible: ``unescape`` of the
    decoded text gives the original back exactly, and a later stage that re-encodes the
    decoded text can tell a literal marker from one a template inserted.
``allowed``
    In *trusted* text (the caller's own: a system prompt it wrote, a template) the
    spelling becomes the control ID. Untrusted text still encodes it as ordinary text:
    the trust rule (control IDs never come from untrusted content) wins over the policy.
``rejected``
    Text holding a literal spelling raises :class:`~tokenpact.errors.SpecialTokenError`.

The policy works on any :class:`~tokenpact.core.Tokenizer` through its public
``encode`` arguments (``allowed_special`` / ``disallowed_special``), so the trust rule is
enforced by the same engine code as everywhere else.

A tokenizer carries its contract's policy (``tok.literal_text``, set with
``tok.with_literal_text``). The default, ``LiteralTextPolicy()`` (``ordinary``), is not
written anywhere, so artifacts that keep it keep their identity; any other policy is in
the config (``"literal_text"``), hence the semantic hash, the manifest and the saved
artifact (``policy.json``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

LITERAL_POLICIES = ("ordinary", "escaped", "allowed", "rejected")


@functools.lru_cache(maxsize=64)
def _spelling_pattern(spellings: tuple[str, ...]) -> re.Pattern[str]:
    """The alternation of ``spellings`` (longest first), compiled once per spelling set:
    every escape, unescape and check of a tokenizer's text reuses one compiled pattern."""
    return re.compile("|".join(re.escape(s) for s in spellings))


@dataclass(frozen=True)
class LiteralTextPolicy:
    """One of ``ordinary``, ``escaped``, ``allowed``, ``rejected`` and, for ``escaped``,
    the escape character (one character that no control spelling contains)."""

    mode: str = "ordinary"
    escape: str = "\\"

    def __post_init__(self) -> None:
        if self.mode not in LITERAL_POLICIES:
            raise ConfigError(
                f"literal text policy {self.mode!r} is not one of {', '.join(LITERAL_POLICIES)}"
            )
        if not isinstance(self.escape, str) or len(self.escape) != 1:
            raise ConfigError(f"the escape must be one character, not {self.escape!r}")

    def _pattern(self, tok: Tokenizer) -> re.Pattern[str] | None:
        spellings = sorted(tok.special_tokens, key=lambda s: (-len(s), s))
        clash = [s for s in spellings if self.escape in s]
        if clash:
            raise ConfigError(
                f"the escape {self.escape!r} occurs in the control spelling {clash[0]!r}; "
                "pick an escape character no control token contains"
            )
        if not spellings:
            return None
        # Longest spelling first: the leftmost match is also the longest one.
        return _spelling_pattern(tuple(spellings))

    def escape_text(self, tok: Tokenizer, text: str) -> str:
        """``text`` with the escape inserted before every literal control spelling."""
        pattern = self._pattern(tok)
        if pattern is None:
            return text
        return pattern.sub(lambda m: self.escape + m.group(0), text)

    def unescape_text(self, tok: Tokenizer, text: str) -> str:
        """Undo :meth:`escape_text`: one escape before each control spelling is removed
        (``unescape_text(tok, escape_text(tok, t)) == t`` for every ``t``)."""
        pattern = self._pattern(tok)
        if pattern is None:
            return text
        out: list[str] = []
        last = 0
        for m in pattern.finditer(text):
            start = m.start()
            cut = start - 1 if start > last and text[start - 1] == self.escape else start
            out.append(text[last:cut])
            out.append(m.group(0))
            last = m.end()
        out.append(text[last:])
        return "".join(out)

    def encode(self, tok: Tokenizer, text: str, *, trusted: bool = False) -> list[int]:
        """Encode content under this policy. ``trusted`` matters to ``allowed`` only:
        untrusted text never yields a control ID."""
        if self.mode == "escaped":
            return tok.encode(self.escape_text(tok, text))
        if self.mode == "rejected":
            return tok.encode(text, disallowed_special="all")
        if self.mode == "allowed" and trusted and tok.special_tokens:
            return tok.encode(text, allowed_special="all")
        return tok.encode(text)


DEFAULT_LITERAL_TEXT = LiteralTextPolicy()


def literal_text_config(policy: LiteralTextPolicy) -> dict[str, Any]:
    """A literal-text policy as the config (and the semantic hash) records it."""
    return {"type": "literal_text", "mode": policy.mode, "escape": policy.escape}


def literal_text_from_config(node: Any) -> LiteralTextPolicy:
    """The :class:`LiteralTextPolicy` a config node describes; ConfigError when the node
    is malformed (a wrong type, an unknown mode or field, a missing field)."""
    if not isinstance(node, Mapping) or node.get("type") != "literal_text":
        raise ConfigError(
            f'a literal text policy must be an object with "type": "literal_text", not {node!r}'
        )
    fields = set(node) - {"type"}
    if fields != {"mode", "escape"}:
        raise ConfigError(
            f"a literal text policy has the fields mode and escape, not {sorted(fields)}"
        )
    mode, escape = node["mode"], node["escape"]
    if not isinstance(mode, str):
        raise ConfigError(f"literal text policy mode must be a string, not {mode!r}")
    return LiteralTextPolicy(mode, escape)
