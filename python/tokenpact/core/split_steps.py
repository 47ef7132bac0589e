"""The split steps the native engines run, derived from a typed pre-tokenizer.

A :class:`~tokenpact.core.TokenizerSpec` holds its pre-tokenizer as a
:mod:`tokenpact.components` node; the engines take a chain of steps
``[source, name, behaviour, invert]`` (``name`` picks a hand-written scanner such as
``hf:whitespace`` or a built-in pattern, ``source`` is the regex or the step's text).
:func:`chain_steps` is the one derivation, used for a file's chain and a trainer's alike;
the canonical config lists these steps (what the semantic hash has always covered).

A chain the engines cannot run raises :class:`StepError`, which carries the place, the
problem and the fix separately so the ``tokenizer.json`` reader can name its file.
"""

from __future__ import annotations

import re
from typing import Any

from ..components import Regex
from ..components import pre_tokenizers as cp
from ..errors import ConfigError
from ..patterns import GPT2, resolve_pattern

# HF pre-tokenizer type -> (engine scanner, split behaviour) of the character-class
# scanners without options.
SCANNERS = {
    "Whitespace": ("hf:whitespace", "matches_only"),
    "WhitespaceSplit": ("hf:whitespace_split", "matches_only"),
    "BertPreTokenizer": ("hf:bert", "matches_only"),
}

_PREPEND_SCHEMES = {"always", "first", "never"}


class StepError(ConfigError):
    """A pre-tokenizer the engines cannot run: ``where`` (``pre_tokenizer[i]...``),
    ``problem`` and ``fix``."""

    def __init__(self, where: str, problem: str, fix: str) -> None:
        super().__init__(f"{where}: {problem}; {fix}")
        self.where, self.problem, self.fix = where, problem, fix


def unsupported(where: str, kind: object) -> StepError:
    return StepError(
        where,
        f"component type {kind!r} is not supported by tokenpact yet",
        "convert the tokenizer to a supported form or file an issue naming this type",
    )


def scanner_step(
    kind: str, *, behavior: str = "Isolated", individual_digits: bool = False, delimiter: str = ""
) -> list[Any] | None:
    """Engine step ``[source, name, behaviour, invert]`` of a character-class
    pre-tokenizer (None when ``kind`` is not one). ``delimiter`` is one character."""
    if kind in SCANNERS:
        name, how = SCANNERS[kind]
        return ["", name, how, False]
    if kind == "Punctuation":
        return ["", "hf:punct", behavior, False]
    if kind == "Digits":
        return ["", "hf:numeric", "Isolated" if individual_digits else "Contiguous", False]
    if kind == "CharDelimiterSplit":
        return [delimiter, "hf:delim", "Removed", False]
    return None


def split_step(regex: str, behavior: str, invert: bool) -> list[Any]:
    """Engine step of a ``Split`` on the regex source ``regex`` (a literal ``String``
    pattern arrives escaped); a built-in pattern's source runs its hand-written scanner."""
    name, source = resolve_pattern(regex)
    return [source, name, behavior, invert]


def metaspace_steps(replacement: str, scheme: str, split: bool) -> list[list[Any]]:
    """Engine steps of ``Metaspace``: the rewrite, then (``split``) the split on its char."""
    steps = [[replacement, f"hf:metaspace_{scheme}", "Isolated", False]]
    if split:
        steps.append([replacement, "hf:delim", "MergedWithNext", False])
    return steps


def _first_only(where: str, i: int, what: str) -> None:
    # Text-rewriting pre-tokenizers apply to each piece they receive; the engine runs
    # them on whole special-token segments, which is what HF does when they come first.
    if i > 0:
        raise StepError(where, f"{what} after another pre-tokenizer", f"put {what} first")


def _metaspace(where: str, item: cp.Metaspace) -> list[list[Any]]:
    replacement = item.replacement
    if not isinstance(replacement, str) or len(replacement) != 1:
        raise StepError(f"{where}.replacement", repr(replacement), "give exactly one char")
    scheme = item.prepend_scheme
    if scheme not in _PREPEND_SCHEMES:
        raise StepError(f"{where}.prepend_scheme", repr(scheme), "use always, first or never")
    # Legacy files carry add_prefix_space; HF refuses one that contradicts the scheme.
    legacy = item.extra.get("add_prefix_space")
    if "add_prefix_space" in item.extra and bool(legacy) != (scheme != "never"):
        raise StepError(
            f"{where}.add_prefix_space",
            f"{legacy!r} contradicts prepend_scheme {scheme!r}",
            "drop add_prefix_space or make the two agree",
        )
    return metaspace_steps(replacement, scheme, bool(item.split))


def _scanner(where: str, item: cp.PreTokenizer) -> list[Any] | None:
    delimiter = item.given("delimiter", None) if isinstance(item, cp.CharDelimiterSplit) else ""
    if isinstance(item, cp.CharDelimiterSplit) and (
        not isinstance(delimiter, str) or len(delimiter) != 1
    ):
        raise StepError(where, f"delimiter {delimiter!r}", "give exactly one character")
    return scanner_step(
        item.TYPE,
        behavior=str(getattr(item, "behavior", "Isolated")),
        individual_digits=bool(getattr(item, "individual_digits", False)),
        delimiter=delimiter if isinstance(delimiter, str) else "",
    )


def chain_items(node: cp.PreTokenizer | None) -> list[cp.PreTokenizer]:
    """The members of a pre-tokenizer chain (a ``Sequence``'s, or the node itself)."""
    if node is None:
        return []
    return list(node.pretokenizers) if isinstance(node, cp.Sequence) else [node]


def chain_steps(
    node: cp.PreTokenizer | None, *, byte_level_ok: bool = True
) -> tuple[list[list[Any]], bool]:
    """Engine steps of any model's pre-tokenizer, and whether the chain ends in ByteLevel.

    One derivation for every model: the character-class scanners, ``Split``, the text
    rewrites (``Metaspace``, ``ByteLevel(add_prefix_space)``; first in the chain) and a
    final ``ByteLevel`` (only with ``byte_level_ok``: byte-level BPE; a BPE without it, or
    with no pre-tokenizer at all, works over characters). StepError names what the
    engines cannot run.
    """
    steps: list[list[Any]] = []
    byte_level = False
    for i, item in enumerate(chain_items(node)):
        kind = item.TYPE
        where = f"pre_tokenizer[{i}]"
        if byte_level:
            raise StepError(where, f"{kind} after ByteLevel", "put ByteLevel last")
        scanner = _scanner(where, item)
        if scanner is not None:
            steps.append(scanner)
        elif isinstance(item, cp.Split):
            pattern = item.pattern
            regex = pattern.pattern if isinstance(pattern, Regex) else re.escape(pattern)
            steps.append(split_step(regex, str(item.behavior), bool(item.invert)))
        elif isinstance(item, cp.Metaspace):
            _first_only(where, i, "Metaspace")
            steps.extend(_metaspace(where, item))
        elif isinstance(item, cp.ByteLevel) and byte_level_ok:
            # A file's ByteLevel without the key does not add a prefix space.
            if item.given("add_prefix_space", False):
                _first_only(where, i, "ByteLevel(add_prefix_space=true)")
                steps.append(["", "hf:prefix_space", "Isolated", False])
            if item.use_regex:
                steps.append([GPT2, "gpt2", "Isolated", False])
            byte_level = True
        else:
            raise unsupported(where, kind)
    return steps, byte_level


def pre_tokenizer_steps(node: cp.PreTokenizer | None) -> list[list[Any]]:
    """Engine steps of a typed pre-tokenizer over strings (no ByteLevel)."""
    return chain_steps(node, byte_level_ok=False)[0]
