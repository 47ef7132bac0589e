"""Output transport (seed 000 0x0D): sampled IDs -> exact bytes -> valid text ->
stop-safe client text.

Every ID is processed one at a time, so the visible text, the processed IDs and the
finish reason do not depend on how IDs are grouped into pushes. Text is held back only
while it could still be stripped: an incomplete UTF-8 character (the decoder), the
longest suffix that is a live prefix of some stop string (one Aho-Corasick automaton),
and the text of IDs that are a live prefix of some stop ID sequence.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NamedTuple

from .. import _native
from ..errors import InvalidInputError, UnknownTokenError
from .automaton import Automaton
from .decode import IncrementalDecoder
from .stops import StopPolicy

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["FinishReason", "OutputDelta", "OutputStream"]

FinishReason = Literal["stop", "length", "end"]


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


class OutputStream:
    """Stop-safe client text from generated IDs.

    >>> out = OutputStream(tok, StopPolicy(stop_strings=["STOP"]))   # doctest: +SKIP
    >>> out.push([400, 403, 79, 80, 33]).text                        # doctest: +SKIP
    'OK '

    ``prompt_boundary``: how many of the first pushed IDs are prompt; they are consumed
    without being decoded or matched (a stop-looking prompt never stops generation).
    """

    def __init__(self, tok: Tokenizer, policy: StopPolicy, *, prompt_boundary: int = 0) -> None:
        if prompt_boundary < 0:
            raise InvalidInputError("prompt_boundary must be >= 0")
        self.tokenizer = tok
        self.policy = policy
        self._prompt_left = prompt_boundary
        self._decoder = IncrementalDecoder(tok, errors="replace")
        # The hot path calls the engine directly (one native call per ID).
        self._decode_one = self._decoder.engine_push_one
        self._stop_ids = policy.stop_token_ids
        # Stop strings: the Rust automaton (src/runtime/stops.rs); ID sequences are few
        # and short, so their automaton stays in Python.
        self._strings = _native.StopScannerCore(list(policy.stop_strings))
        self._has_strings = bool(policy.stop_strings)
        self._ids_ac = Automaton(policy.stop_sequences)
        self._has_sequences = bool(policy.stop_sequences)
        self._ids_state = 0
        # Text length (chars) before each of the last IDs: where a sequence match starts.
        self._id_offsets: deque[int] = deque(maxlen=max(1, self._ids_ac.longest))
        self._pending = ""  # decoded, not yet visible
        self._text_len = 0  # chars decoded so far
        self._visible_len = 0
        self.processed_ids: list[int] = []
        # Visible text as parts (joining a growing str per token would be quadratic).
        self._visible: list[str] = []
        self.finish_reason: FinishReason | None = None
        self.matched_stop: int | tuple[int, ...] | str | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def visible_text(self) -> str:
        """All text made visible so far."""
        if len(self._visible) > 1:
            self._visible[:] = ["".join(self._visible)]
        return self._visible[0] if self._visible else ""

    @property
    def held_text(self) -> str:
        """Decoded text held back because it may still be part of a stop."""
        return self._pending

    # ------------------------------------------------------------------ public
    def push(self, ids: int | Iterable[int]) -> OutputDelta:
        """Process generated IDs (in order) until a stop; returns the new visible text."""
        batch = (ids,) if isinstance(ids, int) else ids
        mark = len(self._visible)
        consumed = 0
        try:
            for token_id in batch:
                if self.finish_reason is not None:
                    break
                consumed += 1
                if self._prompt_left:
                    self._prompt_left -= 1
                    continue
                self._step(token_id)
        except OverflowError:
            raise UnknownTokenError(
                f"generated IDs must be token IDs of this tokenizer "
                f"(0..{self.tokenizer.vocab_size - 1})"
            ) from None
        if self.finish_reason is None:
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
        if type(token_id) is not int:
            if not isinstance(token_id, int) or isinstance(token_id, bool):
                raise UnknownTokenError(f"generated IDs must be ints; got {token_id!r}")
            token_id = int(token_id)
        policy = self.policy
        self.processed_ids.append(token_id)
        if token_id in self._stop_ids:
            # The text of the IDs before the stop is final: resolve it first; a text
            # stop completing inside it is earlier than the stop ID.
            if self._scan(self._decoder.finish()):
                return
            extra = self.tokenizer.decode([token_id], errors="replace")
            if policy.include_stop_in_output:
                self._pending += extra
            self._end("stop", token_id, len(self._pending))
            return
        text = self._decode_one(token_id)
        hit = -1
        if self._has_sequences:
            self._id_offsets.append(self._text_len)
            self._ids_state = self._ids_ac.step(self._ids_state, token_id)
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
        budget = policy.max_new_tokens
        if budget is not None and len(self.processed_ids) >= budget:
            if not self._scan(self._decoder.finish()):
                self._end("length", None, len(self._pending))

    def _scan(self, text: str) -> bool:
        """Feed decoded text to the stop-string automaton; True if a stop completed."""
        if not text:
            return False
        found = self._strings.feed(text) if self._has_strings else None
        if found is None:
            self._pending += text
            self._text_len += len(text)
            return False
        used, index = found
        stop = self.policy.stop_strings[index]
        self._pending += text[:used]
        self._text_len += used
        cut = len(self._pending)
        if not self.policy.include_stop_in_output:
            cut -= len(stop)
        self._end("stop", stop, cut)
        return True

    def _release_safe(self) -> None:
        """Make visible everything before the earliest live stop prefix."""
        boundary = self._text_len - (self._strings.depth() if self._has_strings else 0)
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
