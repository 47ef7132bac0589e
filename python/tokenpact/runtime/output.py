"""Output transport: sampled IDs -> exact bytes -> valid text ->
stop-safe client text.

Every ID is processed one at a time, so the visible text, the processed IDs and the
finish reason do not depend on how IDs are grouped into pushes. Text is held back only
while it could still be stripped: an incomplete UTF-8 character (the decoder), the
longest suffix that is a live prefix of some stop string (one Aho-Corasick automaton),
and the text of IDs that are a live prefix of some stop ID sequence.

The per-ID loop runs in Rust (``src/runtime/output.rs``);
:class:`~tokenpact.runtime.output_reference.ReferenceOutputStream` is the same
algorithm in Python, and the tests check both against a naive search.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NamedTuple

from .. import _native
from ..errors import InvalidInputError, UnknownTokenError
from .decode import NOT_ID_BATCHES, _prompt_list
from .stops import StopPolicy

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = ["FINISH_REASONS", "FinishReason", "HoldRule", "OutputDelta", "OutputStream"]

# stop: a stop ID, sequence or string matched; length: max_new_tokens reached; end: the
# source ran out; cancelled: the client or server called cancel(); deadline: the stream's
# deadline passed before the next push (or expire() was called).
FinishReason = Literal["stop", "length", "end", "cancelled", "deadline"]
FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "length", "end", "cancelled", "deadline")
# The external signals a stream can end on (cancellation, deadline).
Interruption = Literal["cancelled", "deadline"]
HoldRule = Literal["live_prefix", "fixed_window"]


class OutputDelta(NamedTuple):
    """What one :meth:`OutputStream.push` made visible.

    ``consumed``: how many of the pushed IDs were processed (IDs after a stop are not).
    ``matched_stop``: the stop ID, ID sequence or stop string that ended generation.
    """

    text: str
    finished: bool
    finish_reason: FinishReason | None
    matched_stop: int | tuple[int, ...] | str | None
    consumed: int


# OutputDelta(...) runs the NamedTuple's generated Python __new__, which calls this;
# OutputStream.push calls it directly once per generated ID.
_new_tuple = tuple.__new__


def _stream_args(
    tok: Tokenizer,
    policy: StopPolicy | None,
    prompt_ids: Iterable[int] | None,
    prompt_boundary: int,
) -> tuple[list[int], StopPolicy]:
    """Checked prompt IDs and policy (shared with the Python reference stream)."""
    if isinstance(prompt_boundary, bool) or not isinstance(prompt_boundary, int):
        raise InvalidInputError("prompt_boundary must be an int >= 0")
    if prompt_boundary < 0:
        raise InvalidInputError("prompt_boundary must be >= 0")
    if prompt_ids is not None and prompt_boundary:
        raise InvalidInputError(
            "pass prompt_ids (the prompt up front) or prompt_boundary (the prompt pushed "
            "first), not both"
        )
    if policy is None:
        policy = StopPolicy()
    elif not isinstance(policy, StopPolicy):
        raise InvalidInputError(
            f"policy must be a StopPolicy (tokenpact.runtime.StopPolicy, the type "
            f"Conversation.stop_policy has), not {type(policy).__name__}"
        )
    return _prompt_list(tok, prompt_ids), policy


def _deadline_arg(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
        raise InvalidInputError(
            f"deadline must be a time.monotonic() instant (a number) or None, not {deadline!r}"
        )
    return float(deadline)


def _window(policy: StopPolicy, hold: str) -> int | None:
    """Characters a fixed window holds back (vLLM's ``stop_buffer_length``), or None."""
    if hold == "live_prefix":
        return None
    if hold != "fixed_window":
        raise InvalidInputError(
            f'hold must be "live_prefix" or "fixed_window" (vLLM\'s), not {hold!r}'
        )
    if not policy.stop_strings or policy.include_stop_in_output:
        return 0
    return max(len(s) for s in policy.stop_strings) - 1


class _StreamEnd:
    """What both output streams (this Rust-backed one and the Python reference) share:
    the finish state, the visible text parts, and the external signals that end a
    stream without flushing."""

    deadline: float | None
    finish_reason: FinishReason | None
    matched_stop: int | tuple[int, ...] | str | None
    _visible: list[str]

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def visible_text(self) -> str:
        """All text made visible so far."""
        if len(self._visible) > 1:
            self._visible[:] = ["".join(self._visible)]
        return self._visible[0] if self._visible else ""

    def _deadline_passed(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def cancel(self) -> OutputDelta:
        """End the stream now with finish reason ``"cancelled"`` (nothing is flushed)."""
        return self.interrupt("cancelled")

    def expire(self) -> OutputDelta:
        """End the stream now with finish reason ``"deadline"`` (nothing is flushed)."""
        return self.interrupt("deadline")

    def interrupt(self, reason: Interruption) -> OutputDelta:
        """End the stream on an external signal; a finished stream keeps its reason."""
        if reason not in ("cancelled", "deadline"):
            raise InvalidInputError(f'reason must be "cancelled" or "deadline", not {reason!r}')
        if self.finish_reason is None:
            self.finish_reason = reason
        return OutputDelta("", True, self.finish_reason, self.matched_stop, 0)


class OutputStream(_StreamEnd):
    """Stop-safe client text from generated IDs.

    >>> out = OutputStream(tok, StopPolicy(stop_strings=["STOP"]))   # doctest: +SKIP
    >>> out.push([400, 403, 79, 80, 33]).text                        # doctest: +SKIP
    'OK '

    ``prompt_ids``: the prompt (or a tail of it) the generated IDs continue; it primes
    the decoder, so the visible text is ``decode(prompt + generated)[len(decode(prompt)):]``
    (a SentencePiece/Metaspace model keeps the first generated token's leading space).
    ``prompt_boundary``: how many of the first pushed IDs are prompt instead; they prime
    the decoder the same way and are never matched (a stop-looking prompt never stops
    generation). Pass one of the two.

    ``skip_special_tokens`` (default ``True``, as vLLM and transformers' generation
    pipelines): special IDs add no text; ``False`` prints their spellings.

    ``hold``: ``"live_prefix"`` (default) holds back only a suffix that can still start
    a stop string; ``"fixed_window"`` holds the last ``max(len(stop)) - 1`` characters
    whatever they are (nothing with ``include_stop_in_output``), as vLLM's detokenizer,
    so each delta is the one vLLM streams. The final text is the same either way.

    When several kinds of stop complete on the same ID: stop ID, then ID sequence, then
    stop string.

    External signals end a stream too: :meth:`cancel` (finish reason ``"cancelled"``)
    and ``deadline`` (a :func:`time.monotonic` instant; the first push at or after it
    processes nothing and finishes with ``"deadline"``; :meth:`expire` does the same at
    once). An interrupted stream flushes nothing: text held back as a possible stop
    stays unsent (``held_text`` still shows it), and ``processed_ids`` is what was
    inspected before the signal.
    """

    def __init__(
        self,
        tok: Tokenizer,
        policy: StopPolicy | None = None,
        *,
        prompt_ids: Iterable[int] | None = None,
        prompt_boundary: int = 0,
        skip_special_tokens: bool = True,
        hold: HoldRule = "live_prefix",
        deadline: float | None = None,
    ) -> None:
        prompt, policy = _stream_args(tok, policy, prompt_ids, prompt_boundary)
        self.deadline = _deadline_arg(deadline)
        window = _window(policy, hold)
        self.tokenizer = tok
        self.hold = hold
        self.policy = policy
        self.skip_special_tokens = skip_special_tokens
        skip = sorted(set(tok.special_tokens.values())) if skip_special_tokens else []
        self._engine = _native.OutputEngineCore(
            tok.engine,
            sorted(policy.stop_token_ids),
            [list(s) for s in policy.stop_sequences],
            list(policy.stop_strings),
            policy.max_new_tokens,
            policy.include_stop_in_output,
            prompt_boundary,
            prompt,
            skip,
            policy.stop_string_ties == "first_listed",
            window,
        )
        self._push_one = self._engine.push_one
        self._visible: list[str] = []
        self.finish_reason: FinishReason | None = None
        self.matched_stop: int | tuple[int, ...] | str | None = None

    @property
    def held_text(self) -> str:
        """Decoded text held back because it may still be part of a stop."""
        return str(self._engine.held())

    @property
    def processed_ids(self) -> list[int]:
        """Generated IDs inspected so far, including the one that stopped generation."""
        return list(self._engine.processed())

    def push(self, ids: int | Iterable[int]) -> OutputDelta:
        """Process generated IDs (in order) until a stop; returns the new visible text."""
        if self.finish_reason is not None:
            return OutputDelta("", True, self.finish_reason, self.matched_stop, 0)
        # The deadline check inline, not _deadline_passed(): one push per generated token
        # makes a method call here a measurable share of the per-token cost.
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return self.interrupt("deadline")
        try:
            if type(ids) is int:
                # One native call per generated ID: the text, the count and the finish state.
                text, consumed, state = self._push_one(ids)
            else:
                if isinstance(ids, NOT_ID_BATCHES):
                    raise UnknownTokenError(f"generated IDs must be ints; got {ids!r:.40}")
                batch = [ids] if isinstance(ids, int) else list(ids)
                if any(type(i) is not int for i in batch):
                    bad = next(i for i in batch if not isinstance(i, int) or isinstance(i, bool))
                    raise UnknownTokenError(f"generated IDs must be ints; got {bad!r}")
                text, consumed = self._engine.push([int(i) for i in batch])
                state = self._engine.finish_state()
        except (OverflowError, TypeError, StopIteration):
            raise UnknownTokenError(
                "generated IDs must be token IDs of this tokenizer "
                f"(0..{self.tokenizer.vocab_size - 1})"
            ) from None
        if text:
            self._visible.append(text)
        if state is None:
            # Still running (so no finish reason and no matched stop): the delta built
            # without OutputDelta.__new__'s Python frame, a measurable share per token.
            return _new_tuple(OutputDelta, (text, False, None, None, consumed))
        self._record(state)
        return OutputDelta(text, True, self.finish_reason, self.matched_stop, consumed)

    def finish(self) -> OutputDelta:
        """The source ran out: flush everything held (no stop can complete any more)."""
        if self.finish_reason is not None:
            return OutputDelta("", True, self.finish_reason, self.matched_stop, 0)
        text = str(self._engine.end())
        if text:
            self._visible.append(text)
        state = self._engine.finish_state()
        if state is not None:
            self._record(state)
        return OutputDelta(text, True, self.finish_reason, self.matched_stop, 0)

    def _record(self, state: tuple[str, int]) -> None:
        kind, value = state
        policy = self.policy
        if kind == "stop_id":
            self.finish_reason, self.matched_stop = "stop", value
        elif kind == "sequence":
            self.finish_reason, self.matched_stop = "stop", policy.stop_sequences[value]
        elif kind == "string":
            self.finish_reason, self.matched_stop = "stop", policy.stop_strings[value]
        elif kind == "length":
            self.finish_reason = "length"
        else:
            self.finish_reason = "end"
