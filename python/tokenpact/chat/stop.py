"""Stop policy: where generation ends, returned with every formatted prompt (seed 0x09A).

A stop can be a single ID (end of turn, end of sequence) or an ordered sequence of IDs
that needs streaming state. Matching starts at the prompt boundary: the prompt itself
never stops generation.

>>> policy = StopPolicy(prompt_length=3, stop_ids=(260, 257), stop_sequences=((83, 84),))
>>> m = policy.matcher()
>>> [m.feed(i) for i in (65, 83)], m.feed(84).stop
([None, None], (83, 84))
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


@dataclass(frozen=True)
class StopHit:
    """A stop found at generated position ``index`` (the stop's last ID)."""

    index: int
    stop: tuple[int, ...]
    reason: str  # "stop_id" or "stop_sequence"

    @property
    def output_end(self) -> int:
        """Where to cut the generated IDs so that the stop itself is not output."""
        return self.index + 1 - len(self.stop)


@dataclass(frozen=True)
class StopPolicy:
    """Single stop IDs, ordered stop sequences and the boundary matching starts from."""

    prompt_length: int
    stop_ids: tuple[int, ...] = ()
    stop_sequences: tuple[tuple[int, ...], ...] = ()
    match_scope: str = "generated"
    include_prompt: bool = False

    def __post_init__(self) -> None:
        ids = self.stop_ids
        if type(ids) is not tuple or any(type(i) is not int for i in ids):
            object.__setattr__(self, "stop_ids", tuple(int(i) for i in ids))
        if self.stop_sequences:
            sequences = tuple(tuple(int(i) for i in s) for s in self.stop_sequences)
            if any(not s for s in sequences):
                raise ConfigError("a stop sequence needs at least one ID")
            object.__setattr__(self, "stop_sequences", sequences)
        elif type(self.stop_sequences) is not tuple:
            object.__setattr__(self, "stop_sequences", ())
        if self.prompt_length < 0:
            raise ConfigError(f"prompt_length must be >= 0, not {self.prompt_length}")

    def with_prompt_length(self, prompt_length: int) -> StopPolicy:
        return StopPolicy(prompt_length, self.stop_ids, self.stop_sequences)

    def matcher(self) -> StopMatcher:
        """A fresh streaming matcher for one generation."""
        return StopMatcher(self)

    def find(self, ids: Sequence[int], *, includes_prompt: bool = False) -> StopHit | None:
        """The first stop in generated ``ids`` (skip the prompt if ``includes_prompt``)."""
        matcher = self.matcher()
        start = self.prompt_length if includes_prompt else 0
        for i in ids[start:]:
            hit = matcher.feed(i)
            if hit is not None:
                return hit
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_length": self.prompt_length,
            "single_token_stop_ids": list(self.stop_ids),
            "multi_token_stop_sequences": [list(s) for s in self.stop_sequences],
            "match_scope": self.match_scope,
            "include_prompt": self.include_prompt,
        }


class StopMatcher:
    """Streaming stop detection over generated IDs; the longest stop ending here wins."""

    def __init__(self, policy: StopPolicy) -> None:
        self._ids = frozenset(policy.stop_ids)
        # Longest first, so a sequence that ends with a stop ID reports the whole sequence.
        self._sequences = sorted(policy.stop_sequences, key=len, reverse=True)
        longest = max((len(s) for s in self._sequences), default=1)
        self._window: deque[int] = deque(maxlen=longest)
        self._position = -1

    def reset(self) -> None:
        self._window.clear()
        self._position = -1

    def feed(self, token_id: int) -> StopHit | None:
        """Add one generated ID; return the stop it completes, if any."""
        self._position += 1
        self._window.append(int(token_id))
        window = tuple(self._window)
        for seq in self._sequences:
            if len(seq) <= len(window) and window[len(window) - len(seq) :] == seq:
                return StopHit(self._position, seq, "stop_sequence")
        if token_id in self._ids:
            return StopHit(self._position, (int(token_id),), "stop_id")
        return None

    def feed_many(self, ids: Iterable[int]) -> StopHit | None:
        for i in ids:
            hit = self.feed(i)
            if hit is not None:
                return hit
        return None
