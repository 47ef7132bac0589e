"""Which tokens of a rendered conversation a model is trained to produce.

The rule (the prefix property): at inference the model is given the render of the
history with the generation prompt, ``render(messages[:i], add_generation_prompt=True)``,
and produces everything the template writes after it for assistant message ``i``
(reasoning wrappers, tool-call syntax, content) through the end-of-turn token. So the
supervised text of turn ``i`` is ``render(messages[:i + 1])[len(prompt):]``, cut after
the first stop ID the template writes there (text the template adds after the
end-of-turn token, such as Qwen's newline after ``<|im_end|>``, is never generated).

A template may render a turn differently once later messages follow (Qwen 3 drops the
reasoning of turns before the last user message). Such a turn's tokens in the full
render are not what the model generated at that point, so they are not supervised;
:func:`supervision_report` names these turns, and :func:`expand_turns` makes one record
per assistant turn, each rendered as the template renders it at that point.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TokenpactError
from . import _encode
from .errors import ChatTemplateError
from .record_errors import split_item

# ``supervise=`` values: every assistant turn the template keeps as generated, or only
# the final message (for records expanded with expand_turns, whose earlier turns are
# supervised in their own records).
SUPERVISE = ("turns", "final")

KEPT = "kept"
SUPERVISED = frozenset({"kept", "prompt_not_prefix"})
REWRITTEN = "rewritten"  # later messages change how the template renders this turn
# The generation prompt is not a prefix of the turn: supervised from where they part.
NOT_PREFIX = "prompt_not_prefix"
FAILED = "render_failed"  # the history alone does not render (the template raises)


@dataclass(frozen=True)
class Turn:
    """Assistant message ``message``: its generated text is ``[start, end)`` (codepoints
    of the full render) when ``status`` is ``"kept"`` (or ``"prompt_not_prefix"``: then
    from where the generation prompt and the turn part); otherwise why it is
    unsupervised (``start == end == 0``)."""

    message: int
    start: int
    end: int
    status: str
    detail: str = ""


def check_supervise(supervise: str) -> str:
    """``supervise``, or a typed error naming the accepted values."""
    if supervise not in SUPERVISE:
        raise ChatTemplateError(
            f"supervise must be one of {', '.join(map(repr, SUPERVISE))}, not {supervise!r}"
        )
    return supervise


def assistant_turns(
    template: Any,
    messages: Sequence[Any],
    options: dict[str, Any],
    text: str,
    roles: Sequence[str],
    supervise: str = "turns",
) -> list[Turn]:
    """The generated text of each assistant message of ``messages`` in ``text`` (their
    render with ``options``), by the prefix property (see the module docstring)."""
    n = len(roles)
    wanted = [
        i
        for i, role in enumerate(roles)
        if role == "assistant" and (supervise == "turns" or i == n - 1)
    ]
    turns = []
    if wanted and wanted[0] == 0:  # no history to prompt with: nothing was asked for
        turns.append(Turn(0, 0, 0, FAILED, "the conversation starts with this turn"))
        wanted = wanted[1:]
    if not wanted:
        return turns
    # Each turn's history with the generation prompt, and (but the final message, whose
    # render is ``text``, cut open in prefill mode) the turn as the last message.
    cuts = [(i, True) for i in wanted] + [(i + 1, False) for i in wanted if i != n - 1]
    try:
        rendered = template.prefix_texts(messages, options, cuts)
    except (TokenpactError, ValueError):
        rendered = None  # some history does not render: find which, one at a time
    for i in wanted:
        try:
            if rendered is not None:
                prompt = rendered[cuts.index((i, True))]
                turn = text if i == n - 1 else rendered[cuts.index((i + 1, False))]
            else:
                alone = [(i, True)] if i == n - 1 else [(i, True), (i + 1, False)]
                prompt, *rest = template.prefix_texts(messages, options, alone)
                turn = rest[0] if rest else text
        except (TokenpactError, ValueError) as exc:
            turns.append(Turn(i, 0, 0, FAILED, str(exc).split("\n")[0][:200]))
            continue
        if i != n - 1 and not text.startswith(turn):
            turns.append(Turn(i, 0, 0, REWRITTEN, _first_difference(turn, text)))
        elif turn.startswith(prompt):
            turns.append(Turn(i, len(prompt), len(turn), KEPT))
        else:
            # The prompt asks for more than the turn holds (R1-distill's prompt ends with
            # "<think>\n", its training render has no reasoning): the turn is supervised
            # from where the two part, the most of it the model can be trained on, and
            # reported.
            k = _common_prefix(prompt, turn)
            turns.append(Turn(i, k, len(turn), NOT_PREFIX, _first_difference(prompt, turn)))
    return turns


def _common_prefix(a: str, b: str) -> int:
    return next(
        (j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _first_difference(a: str, b: str) -> str:
    """Where ``a`` and ``b`` part, with a little context (for reports)."""
    k = _common_prefix(a, b)
    return f"at character {k}: {a[k : k + 24]!r} vs {b[k : k + 24]!r}"


def supervised_ranges(
    turns: list[Turn],
    text: str,
    ids: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    stops: tuple[int, ...],
    in_content: Callable[[int], bool],
    shift: int = 0,
) -> list[tuple[int, int]]:
    """Token range ``[lo, hi)`` of each kept turn of ``turns``, in order (``starts``/
    ``ends``: UTF-8 byte offsets of the tokens in ``text``; ``shift``: post-processor
    tokens before it).

    A turn ends after the first stop ID the template wrote in it (never one printed by
    content); a turn without one (GLM-4 writes no end-of-turn token) takes the stop
    tokens that directly follow it, as the model stops on them."""
    kept = [t for t in turns if t.status in SUPERVISED]
    if not kept:
        return []
    # Turns are in order and disjoint, so the positions are sorted (utf8_offsets' rule).
    bounds = [x for t in kept for x in (t.start, t.end)]
    if not text.isascii():
        bounds = _encode.utf8_offsets(text, bounds)
    n = len(ids)
    # Binary searches over memoryviews, as ownership.token_ranges does; post-processor
    # markers before the text (empty offsets) are skipped with ``lo=shift``.
    end_view = memoryview(ends)  # type: ignore[arg-type]
    start_view = memoryview(starts)  # type: ignore[arg-type]
    # Where the stop IDs are, found once with numpy (a turn's tokens are not walked one
    # by one in Python).
    at_stop = ids == stops[0] if stops else np.zeros(n, dtype=bool)
    for stop in stops[1:]:
        at_stop |= ids == stop
    stop_at = np.flatnonzero(at_stop).tolist()
    out = []
    for k in range(len(kept)):
        a, b = bounds[2 * k], bounds[2 * k + 1]
        lo = bisect_right(end_view, a, shift)
        if a >= b:  # the template wrote nothing for this turn (GLM-4, empty content)
            out.append((lo, lo))
            continue
        hi = max(lo, bisect_left(start_view, b, shift))
        j = bisect_left(stop_at, lo)
        while j < len(stop_at) and stop_at[j] < hi and in_content(stop_at[j]):
            j += 1
        if j < len(stop_at) and stop_at[j] < hi:  # the first stop the template wrote
            hi = stop_at[j] + 1
        else:
            while hi < n and ids.item(hi) in stops and not in_content(hi):
                hi += 1
        out.append((lo, hi))
    return out


def ranges_and_boundary(
    template: Any,
    messages: Sequence[Any],
    options: dict[str, Any],
    rendered: Any,
    tokens: tuple[np.ndarray, np.ndarray, np.ndarray],
    in_content: Callable[[int], bool],
    stops: tuple[int, ...],
    training: bool,
    supervise: str,
    shift: int = 0,
) -> tuple[list[tuple[int, int]], int]:
    """The supervised token ranges of a record rendered without ``{% generation %}``
    blocks (``tokens``: IDs and byte offsets of ``rendered.text``) and its training
    boundary: the first token after the final message's generation prompt (the token
    count when the final message is not a supervised assistant turn, or not training)."""
    ids, starts, ends = tokens
    roles = rendered.roles
    turns = assistant_turns(template, messages, options, rendered.text, roles, supervise)
    ranges = supervised_ranges(turns, rendered.text, ids, starts, ends, stops, in_content, shift)
    kept = [t for t in turns if t.status in SUPERVISED]
    boundary = len(ids)
    if training and kept and kept[-1].message == len(roles) - 1:
        boundary = ranges[-1][0]
    return [r for r in ranges if r[0] < r[1]], boundary


@dataclass(frozen=True)
class RecordReport:
    """The assistant turns of one record that are not supervised, and why."""

    record: int
    turns: tuple[Turn, ...]


def supervision_report(template: Any, records: Sequence[Any], **options: Any) -> list[RecordReport]:
    """The records with assistant turns that the training render leaves unsupervised
    (rewritten by later messages, a generation prompt that is not a prefix of the turn,
    a history that does not render), one :class:`RecordReport` each, in order."""
    out = []
    for k, item in enumerate(records):
        messages, extra = split_item(item, k)
        opts = dict(
            {"add_generation_prompt": False, "continue_final_message": False},
            **options,
            **extra,
        )
        rendered = template.render_text(list(messages), **opts)
        turns = assistant_turns(template, messages, opts, rendered.text, rendered.roles)
        bad = tuple(t for t in turns if t.status != KEPT)
        if bad:
            out.append(RecordReport(k, bad))
    return out


def expand_turns(record: Any) -> list[Any]:
    """One record per assistant message of ``record`` (a message list or a dict with
    ``"messages"``): the conversation up to and including that message, so that each
    turn is rendered as the template renders it at that point. Render them with
    ``supervise="final"``, so each turn is supervised in exactly one record."""
    if isinstance(record, dict):
        messages = record.get("messages")
        if not isinstance(messages, list):
            raise ChatTemplateError('a record dict needs a "messages" list')
        return [
            dict(record, messages=messages[: i + 1])
            for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant"
        ]
    if not isinstance(record, list):
        raise ChatTemplateError("a record is a list of messages or a dict with 'messages'")
    return [
        record[: i + 1]
        for i, m in enumerate(record)
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
