"""Detectors of SFT batches whose loss misses part of what the model generates: an
assistant turn whose end-of-turn token, or whose reasoning or tool-call wrapper
(``<think>``, ``</tool_call>``), is left unsupervised next to supervised tokens.

A supervised run is a stretch of tokens whose labels are kept. Going forward from its
end to the next control token, and backward from its start to the previous one, the
tokens passed are the same turn (control tokens delimit turns): an unsupervised stop ID
there means the model never learns to end such a turn, an unsupervised wrapper that it
never learns to open or close its reasoning or tool call.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from .batch_checks import Found, convention
from .findings import detector
from .subject import Subject

if TYPE_CHECKING:
    from ..core import Tokenizer

# Added tokens spelled as one marker (``<think>``, ``</tool_call>``, ``<｜tool▁call▁end｜>``):
# the wrappers templates write around reasoning and tool calls.
_MARKER = re.compile(r"<[^<>\s]{1,40}>|<｜[^｜\s]{1,40}｜>")


def _stop_ids(subject: Subject) -> set[int]:
    """EOS and the stop IDs of the subject's chat template (rendered once)."""
    if "stop_ids" not in subject.cache:
        found: set[int] = set()
        if subject.eos is not None:
            found.add(int(subject.eos))
        if subject.template and subject.tokenizer is not None:
            from ..chat import ChatTemplate

            specials = {k: v for k, v in subject.template_specials.items() if v is not None}
            try:
                template = ChatTemplate(
                    subject.template, subject.tokenizer, special_tokens=specials
                )
                conv = template.render(
                    [{"role": "user", "content": "a"}], add_generation_prompt=True
                )
                found.update(conv.stop_policy.stop_ids)
            except Exception:  # noqa: BLE001 - template-render-failed reports it
                pass
        subject.cache["stop_ids"] = found
    result: set[int] = subject.cache["stop_ids"]
    return result


def _supervised(subject: Subject) -> np.ndarray | None:
    """Per token: whether it is a target (labels shifted or not, as the batch has them)."""
    batch = subject.batch
    if batch is None or batch.labels is None:
        return None
    kind = convention(batch, subject.ignore_index)
    if kind is None:
        return None
    real = batch.real
    kept = (batch.labels != subject.ignore_index) & real
    if kind == "unshifted":
        return kept  # type: ignore[no-any-return]
    predicted = np.zeros_like(kept)
    predicted[:, 1:] = kept[:, :-1] & real[:, 1:]
    return predicted


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(
        zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True)
    )


@detector(
    "assistant-turn-unsupervised",
    failure="assistant turn's end-of-turn or wrappers left out of the loss",
    needs=("batch", "tokenizer"),
)
def assistant_turn_unsupervised(subject: Subject) -> Found:
    batch, tok = subject.batch, subject.tokenizer
    sup = _supervised(subject)
    if batch is None or tok is None or sup is None:
        return
    control = set(tok.special_tokens.values())
    stops = _stop_ids(subject) & control if control else _stop_ids(subject)
    wrappers = {i for s, i in tok.added_tokens.items() if _MARKER.fullmatch(s)} - control
    unended: list[tuple[int, int]] = []
    unwrapped: dict[int, int] = {}
    where_wrapped: list[tuple[int, int]] = []
    for row, s, e in batch.segments():
        ids = batch.input_ids[row, s:e].tolist()
        flags = sup[row, s:e]
        n = len(ids)
        for a, b in _runs(flags):
            t = b
            while t < n and ids[t] not in control and not flags[t]:
                if ids[t] in wrappers:
                    unwrapped[ids[t]] = unwrapped.get(ids[t], 0) + 1
                    where_wrapped.append((row, s + t))
                t += 1
            if t < n and ids[t] in stops and not flags[t]:
                unended.append((row, s + t))
            t = a - 1
            while t >= 0 and ids[t] not in control and not flags[t]:
                if ids[t] in wrappers:
                    unwrapped[ids[t]] = unwrapped.get(ids[t], 0) + 1
                    where_wrapped.append((row, s + t))
                t -= 1
    fix = (
        "supervise everything the model generates after each turn's generation prompt through "
        "its end-of-turn token (tokenpact.chat assistant_mask, or tokenpact chat encode)"
    )
    if unended:
        pieces = sorted({_piece(tok, int(batch.input_ids[r, c])) for r, c in unended})
        yield (
            f"{len(unended)} supervised assistant turn(s) end with an unsupervised end-of-turn "
            f"token {', '.join(pieces)} (at {_at(unended)}): the model never learns to stop "
            "after such a turn",
            fix,
        )
    if unwrapped:
        names = ", ".join(f"{_piece(tok, i)} x{k}" for i, k in sorted(unwrapped.items()))
        yield (
            f"reasoning or tool-call wrappers next to supervised tokens are unsupervised ({names}; "
            f"at {_at(where_wrapped)}): the model never learns to open or close them",
            fix,
        )


def _piece(tok: Tokenizer, i: int) -> str:
    return repr(tok.decode([i]))


def _at(spots: list[tuple[int, int]], limit: int = 3) -> str:
    return ", ".join(f"[{r}, {c}]" for r, c in spots[:limit])
