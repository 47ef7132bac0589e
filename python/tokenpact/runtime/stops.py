"""Stop policy (seed 000 0x0D "Specifying when generation stops"), fixed before
generation begins: control IDs, exact ID sequences, text stop strings and a budget of
generated IDs. Matching starts at the prompt boundary: prompt IDs never seed a matcher.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

__all__ = ["StopPolicy"]


@dataclass(frozen=True)
class StopPolicy:
    """What ends generation.

    - ``stop_token_ids``: one control ID (EOS/EOT) stops; it adds no text.
    - ``stop_sequences``: an exact run of generated IDs stops (misses other
      segmentations of the same text, by definition).
    - ``stop_strings``: text matched on the decoded output across token and byte
      boundaries; the earliest completing match wins, ties go to the longest.
    - ``max_new_tokens``: the budget of generated IDs (``None``: no budget).
    - ``include_stop_in_output``: keep the matched stop's text in the visible output.

    When several kinds complete at the same ID, a stop ID wins over an ID sequence,
    which wins over a text stop.
    """

    stop_token_ids: frozenset[int] = field(default_factory=frozenset)
    stop_sequences: tuple[tuple[int, ...], ...] = ()
    stop_strings: tuple[str, ...] = ()
    max_new_tokens: int | None = None
    include_stop_in_output: bool = False

    def __init__(
        self,
        *,
        stop_token_ids: Iterable[int] = (),
        stop_sequences: Iterable[Iterable[int]] = (),
        stop_strings: Iterable[str] = (),
        max_new_tokens: int | None = None,
        include_stop_in_output: bool = False,
    ) -> None:
        ids = frozenset(_id(i, "stop_token_ids") for i in stop_token_ids)
        sequences = tuple(tuple(_id(i, "stop_sequences") for i in s) for s in stop_sequences)
        if any(not s for s in sequences):
            raise ConfigError("stop_sequences: an empty sequence would stop at once; remove it")
        if isinstance(stop_strings, str):
            raise ConfigError("stop_strings takes a list of strings, e.g. stop_strings=['STOP']")
        strings = tuple(stop_strings)
        if any(not isinstance(s, str) or not s for s in strings):
            raise ConfigError("stop_strings must be non-empty strings")
        if max_new_tokens is not None and (
            not isinstance(max_new_tokens, int) or max_new_tokens < 1
        ):
            raise ConfigError(
                f"max_new_tokens must be a positive int or None, not {max_new_tokens!r}"
            )
        object.__setattr__(self, "stop_token_ids", ids)
        object.__setattr__(self, "stop_sequences", tuple(dict.fromkeys(sequences)))
        object.__setattr__(self, "stop_strings", tuple(dict.fromkeys(strings)))
        object.__setattr__(self, "max_new_tokens", max_new_tokens)
        object.__setattr__(self, "include_stop_in_output", bool(include_stop_in_output))

    def to_config(self) -> dict[str, Any]:
        """Canonical dict (the policy is versioned runtime state: hash this)."""
        return {
            "stop_token_ids": sorted(self.stop_token_ids),
            "stop_sequences": [list(s) for s in self.stop_sequences],
            "stop_strings": list(self.stop_strings),
            "max_new_tokens": self.max_new_tokens,
            "include_stop_in_output": self.include_stop_in_output,
            "match_scope": "generated_suffix_after_prompt_boundary",
        }


def _id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{what}: {value!r} is not a token ID (a non-negative int)")
    return value
