"""Stop policy: where generation ends, returned with every formatted prompt
and consumed as is by the serving runtime.

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
from typing import Any, Literal

from ..errors import ConfigError, InvalidInputError


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


StopStringTies = Literal["longest", "first_listed"]


@dataclass(frozen=True, init=False)
class StopPolicy:
    """What ends generation: the one stop-policy type, returned by chat rendering and
    consumed by the serving runtime (:class:`tokenpact.runtime.OutputStream`,
    :func:`tokenpact.runtime.compile_request`).

    - ``stop_ids`` (alias ``stop_token_ids``): one control ID (EOS/EOT) stops.
    - ``stop_sequences``: an exact run of generated IDs stops (misses other
      segmentations of the same text, by definition).
    - ``stop_strings``: text matched on the decoded output across token and byte
      boundaries; the earliest completing match wins. ``stop_string_ties`` settles
      several ending on the same character: ``"longest"`` (default) or
      ``"first_listed"`` (vLLM's rule: list order).
    - ``max_new_tokens``: the budget of generated IDs (``None``: no budget).
    - ``include_stop_in_output``: keep the matched stop's text in the visible output (a
      stop ID is then decoded like any generated ID: a special one adds no text while
      the stream skips special tokens, as in vLLM).
    - ``prompt_length``: the prompt boundary the chat renderer found; matching starts
      there (prompt IDs never seed a matcher).

    When several kinds complete at the same ID, a stop ID wins over an ID sequence,
    which wins over a text stop.
    """

    prompt_length: int
    stop_ids: tuple[int, ...]
    stop_sequences: tuple[tuple[int, ...], ...]
    match_scope: str
    include_prompt: bool
    stop_strings: tuple[str, ...]
    max_new_tokens: int | None
    include_stop_in_output: bool
    stop_string_ties: StopStringTies

    def __init__(
        self,
        prompt_length: int = 0,
        stop_ids: Iterable[int] = (),
        stop_sequences: Iterable[Iterable[int]] = (),
        match_scope: str = "generated",
        include_prompt: bool = False,
        *,
        stop_token_ids: Iterable[int] | None = None,
        stop_strings: Iterable[str] = (),
        max_new_tokens: int | None = None,
        include_stop_in_output: bool = False,
        stop_string_ties: StopStringTies = "longest",
    ) -> None:
        if stop_token_ids is not None:
            if stop_ids:
                raise ConfigError("pass stop_ids or stop_token_ids (the same field), not both")
            stop_ids = stop_token_ids
        # The chat renderers build one policy per prompt boundary with a tuple of ints:
        # keep that path free of per-ID work.
        if type(stop_ids) is not tuple or any(
            type(i) is not int or not 0 <= i < _ID_LIMIT for i in stop_ids
        ):
            stop_ids = tuple(_id(i, "stop_ids") for i in _items(stop_ids, "stop_ids"))
        ids: tuple[int, ...] = tuple(dict.fromkeys(stop_ids)) if len(stop_ids) > 1 else stop_ids
        sequences: tuple[tuple[int, ...], ...] = ()
        if stop_sequences:
            sequences = tuple(
                tuple(_id(i, "stop_sequences") for i in _items(s, "stop_sequences"))
                for s in _items(stop_sequences, "stop_sequences")
            )
            if any(not s for s in sequences):
                raise ConfigError("stop_sequences: an empty sequence would stop at once; remove it")
            sequences = tuple(dict.fromkeys(sequences))
        strings: tuple[str, ...] = ()
        if stop_strings:
            if isinstance(stop_strings, str):
                raise ConfigError(
                    "stop_strings takes a list of strings, e.g. stop_strings=['STOP']"
                )
            strings = _items(stop_strings, "stop_strings")
            if any(not isinstance(x, str) or not x for x in strings):
                raise ConfigError("stop_strings must be non-empty strings")
            for x in strings:
                _utf8(x)
            strings = tuple(dict.fromkeys(strings))
        if max_new_tokens is not None and (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or max_new_tokens < 1
        ):
            raise ConfigError(
                f"max_new_tokens must be a positive int or None, not {max_new_tokens!r}"
            )
        if stop_string_ties not in ("longest", "first_listed"):
            raise ConfigError(
                f'stop_string_ties must be "longest" or "first_listed" (vLLM\'s rule), '
                f"not {stop_string_ties!r}"
            )
        if (
            isinstance(prompt_length, bool)
            or not isinstance(prompt_length, int)
            or prompt_length < 0
        ):
            raise ConfigError(f"prompt_length must be an int >= 0, not {prompt_length!r}")
        setattr_ = object.__setattr__
        setattr_(self, "prompt_length", prompt_length)
        setattr_(self, "stop_ids", ids)
        setattr_(self, "stop_sequences", sequences)
        setattr_(self, "match_scope", match_scope)
        setattr_(self, "include_prompt", include_prompt)
        setattr_(self, "stop_strings", strings)
        setattr_(self, "max_new_tokens", max_new_tokens)
        setattr_(self, "include_stop_in_output", bool(include_stop_in_output))
        setattr_(self, "stop_string_ties", stop_string_ties)

    @property
    def stop_token_ids(self) -> frozenset[int]:
        """The stop IDs as a set (the runtime's name for ``stop_ids``)."""
        return frozenset(self.stop_ids)

    def with_prompt_length(self, prompt_length: int) -> StopPolicy:
        return self.replace(prompt_length=prompt_length)

    def replace(self, **changes: Any) -> StopPolicy:
        """A copy with some fields changed (e.g. stop strings added to a rendered one).

        >>> StopPolicy(3, (260,)).replace(stop_strings=["STOP"]).stop_strings
        ('STOP',)
        """
        fields: dict[str, Any] = {
            "prompt_length": self.prompt_length,
            "stop_ids": self.stop_ids,
            "stop_sequences": self.stop_sequences,
            "match_scope": self.match_scope,
            "include_prompt": self.include_prompt,
            "stop_strings": self.stop_strings,
            "max_new_tokens": self.max_new_tokens,
            "include_stop_in_output": self.include_stop_in_output,
            "stop_string_ties": self.stop_string_ties,
        }
        if "stop_token_ids" in changes:
            changes["stop_ids"] = changes.pop("stop_token_ids")
        unknown = set(changes) - set(fields)
        if unknown:
            raise ConfigError(f"StopPolicy has no field(s) {sorted(unknown)}")
        fields.update(changes)
        return StopPolicy(**fields)

    def matcher(self) -> StopMatcher:
        """A fresh streaming matcher for one generation (stop IDs and ID sequences)."""
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
        """The record stored with a rendered conversation (runtime fields when set)."""
        record: dict[str, Any] = {
            "prompt_length": self.prompt_length,
            "single_token_stop_ids": list(self.stop_ids),
            "multi_token_stop_sequences": [list(s) for s in self.stop_sequences],
            "match_scope": self.match_scope,
            "include_prompt": self.include_prompt,
        }
        if self.stop_strings:
            record["stop_strings"] = list(self.stop_strings)
            record["stop_string_ties"] = self.stop_string_ties
        if self.max_new_tokens is not None:
            record["max_new_tokens"] = self.max_new_tokens
        if self.include_stop_in_output:
            record["include_stop_in_output"] = True
        return record

    def to_config(self) -> dict[str, Any]:
        """Canonical dict of what ends generation (versioned runtime state: hash this)."""
        config: dict[str, Any] = {
            "stop_token_ids": sorted(self.stop_ids),
            "stop_sequences": [list(s) for s in self.stop_sequences],
            "stop_strings": list(self.stop_strings),
            "max_new_tokens": self.max_new_tokens,
            "include_stop_in_output": self.include_stop_in_output,
            "match_scope": "generated_suffix_after_prompt_boundary",
        }
        if self.stop_string_ties != "longest":
            config["stop_string_ties"] = self.stop_string_ties
        return config


# Token IDs are 32-bit everywhere (the engines, the runtime, the shard formats).
_ID_LIMIT = 1 << 32


def _id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _ID_LIMIT:
        raise ConfigError(f"{what}: {value!r} is not a token ID (an int in 0..2**32-1)")
    return int(value)


def _items(value: Any, what: str) -> tuple[Any, ...]:
    try:
        return tuple(value)
    except TypeError:
        raise ConfigError(f"{what} takes a list, not {type(value).__name__}") from None


def _utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"stop_strings: {text!r} holds a lone surrogate ({exc.object[exc.start]!r} at "
            f"{exc.start}), which no decoded text can contain"
        ) from None


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
