"""The output transport in pure Python: the executable spec of
:class:`tokenpact.runtime.OutputStream` (whose per-ID loop runs in Rust,
``src/runtime/output.rs``). Differential tests check both against a naive search.

Every ID is processed one at a time, so the visible text, the processed IDs and the
finish reason do not depend on how IDs are grouped into pushes. Text is held back only
while it could still be stripped: an incomplete UTF-8 character (the decoder), the
longest suffix that is a live prefix of some stop string (one Aho-Corasick automaton),
and the text of IDs that are a live prefix of some stop ID sequence.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import UnknownTokenError
from .automaton import Automaton
from .decode import IncrementalDecoder
from .output import (
    FinishReason,
    HoldRule,
    OutputDelta,
    _deadline_arg,
    _stream_args,
    _StreamEnd,
    _window,
)
from .stops import StopPolicy

if TYPE_CHECKING:
    from ..core import Tokenizer

__all__ = ["ReferenceOutputStream"]


class ReferenceOutputStream(_StreamEnd):
    """Stop-safe client text from generated IDs.

    >>> out = OutputStream(tok, StopPolicy(stop_strings=["STOP"]))   # doctest: +SKIP
    >>> out.push([400, 403, 79, 80, 33]).text                        # doctest: +SKIP
    'OK '

    ``prompt_ids`` / ``prompt_boundary``, ``skip_special_tokens`` and ``hold``: as
    :class:`~tokenpact.runtime.OutputStream`.
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
        self._window = _window(policy, hold)
        # Window mode: text length after the last ID that left the decoder holding
        # nothing (vLLM's DecodeStream adds a token's text only then).
        self._settled = 0
        self.tokenizer = tok
        self.policy = policy
        self._prompt_left = prompt_boundary
        self._prompt: list[int] = []
        self._skip = skip_special_tokens
        self._decoder = self._new_decoder(prompt)
        self._text_ac = Automaton(
            policy.stop_strings, first_listed=policy.stop_string_ties == "first_listed"
        )
        self._ids_ac = Automaton(policy.stop_sequences)
        self._text_state = 0
        self._ids_state = 0
        # Text length (chars) before each of the last IDs: where a sequence match starts.
        self._id_offsets: deque[int] = deque(maxlen=max(1, self._ids_ac.longest))
        self._pending = ""  # decoded, not yet visible
        self._text_len = 0  # chars decoded so far
        self._visible_len = 0
        self.processed_ids: list[int] = []
        # Visible text as parts (joining a growing str per token would be quadratic).
        self._visible: list[str] = []
        # Characters that can start a stop string: text without any of them cannot
        # advance the automaton from its root, so it skips the per-character walk.
        self._starts = frozenset(s[0] for s in policy.stop_strings)
        self.finish_reason: FinishReason | None = None
        self.matched_stop: int | tuple[int, ...] | str | None = None

    def _new_decoder(self, prompt: list[int]) -> IncrementalDecoder:
        return IncrementalDecoder(
            self.tokenizer,
            errors="replace",
            skip_special_tokens=self._skip,
            prompt_ids=prompt or None,
        )

    @property
    def held_text(self) -> str:
        """Decoded text held back because it may still be part of a stop."""
        return self._pending

    # ------------------------------------------------------------------ public
    def push(self, ids: int | Iterable[int]) -> OutputDelta:
        """Process generated IDs (in order) until a stop; returns the new visible text."""
        if not self.finished and self._deadline_passed():
            return self.interrupt("deadline")
        batch = [ids] if isinstance(ids, int) else list(ids)
        mark = len(self._visible)
        consumed = 0
        for token_id in batch:
            if self.finished:
                break
            consumed += 1
            if self._prompt_left:
                self._prompt_left -= 1
                self._prompt.append(token_id)
                if not self._prompt_left:
                    self._decoder = self._new_decoder(self._prompt)
                continue
            self._step(token_id)
        if not self.finished:
            self._release_safe()
        return self._delta(mark, consumed)

    def finish(self) -> OutputDelta:
        """The source ran out: flush everything held (no stop can complete any more)."""
        mark = len(self._visible)
        if not self.finished:
            if not self._scan(self._decoder.finish()):
                self._end("end", None, len(self._pending))
        return self._delta(mark, 0)

    # ------------------------------------------------------------------ steps
    def _delta(self, mark: int, consumed: int) -> OutputDelta:
        return OutputDelta(
            "".join(self._visible[mark:]),
            self.finished,
            self.finish_reason,
            self.matched_stop,
            consumed,
        )

    def _step(self, token_id: int) -> None:
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise UnknownTokenError(f"generated IDs must be ints; got {token_id!r}")
        policy = self.policy
        self.processed_ids.append(token_id)
        if token_id in policy.stop_token_ids:
            # Kept, the stop ID is decoded like any generated ID (a special one adds no
            # text while special tokens are skipped, as in vLLM) and scanned with the
            # text before it; dropped, the text before it is final.
            text = self._decoder.push(token_id) if policy.include_stop_in_output else ""
            if self._scan(text + self._decoder.finish()):
                return
            self._end("stop", token_id, len(self._pending))
            return
        self._id_offsets.append(self._text_len)
        self._ids_state = self._ids_ac.step(self._ids_state, token_id)
        text = self._decoder.push(token_id)
        hit = self._ids_ac.match(self._ids_state)
        if hit >= 0:
            sequence = self._ids_ac.patterns[hit]
            if policy.include_stop_in_output:
                self._pending += text + self._decoder.finish()
                cut = len(self._pending)
            else:
                self._pending += text
                cut = self._id_offsets[-len(sequence)] - self._visible_len
            self._end("stop", tuple(sequence), cut)  # type: ignore[arg-type]
            return
        if self._scan(text):
            return
        if self._window is not None and not self._decoder.held_bytes:
            self._settled = self._text_len
        budget = policy.max_new_tokens
        if budget is not None and len(self.processed_ids) >= budget:
            if not self._scan(self._decoder.finish()):
                self._end("length", None, len(self._pending))

    def _scan(self, text: str) -> bool:
        """Feed decoded text to the stop-string automaton; True if a stop completed."""
        if not text:
            return False
        ac = self._text_ac
        if not ac.patterns or (self._text_state == 0 and self._starts.isdisjoint(text)):
            self._pending += text
            self._text_len += len(text)
            return False
        state = self._text_state
        for k, char in enumerate(text):
            state = ac.step(state, char)
            hit = ac.match(state)
            if hit >= 0:
                stop = ac.patterns[hit]
                self._pending += text[: k + 1]
                self._text_len += k + 1
                cut = len(self._pending)
                if not self.policy.include_stop_in_output:
                    cut -= len(stop)
                self._text_state = state
                self._end("stop", "".join(stop), cut)  # type: ignore[arg-type]
                return True
        self._text_state = state
        self._pending += text
        self._text_len += len(text)
        return False

    def _release_safe(self) -> None:
        """Make visible everything before the earliest live stop prefix."""
        if self._window is None:
            boundary = self._text_len - self._text_ac.depth[self._text_state]
        else:  # the last `window` characters of the settled text, whatever they are
            boundary = max(self._visible_len, self._settled - self._window)
        live_ids = self._ids_ac.depth[self._ids_state]
        if live_ids:
            boundary = min(boundary, self._id_offsets[-live_ids])
        n = boundary - self._visible_len
        if n > 0:
            self._visible.append(self._pending[:n])
            self._pending = self._pending[n:]
            self._visible_len += n

    def _end(
        self, reason: FinishReason, matched: int | tuple[int, ...] | str | None, cut: int
    ) -> None:
        self._visible.append(self._pending[: max(0, cut)])
        self._visible_len += max(0, cut)
        self._pending = ""
        self.finish_reason = reason
        self.matched_stop = matched
