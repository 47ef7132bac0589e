"""Atomic truncation: drop whole conversation groups, oldest first.

Groups: the leading system messages (fixed), each older exchange (a user message with
everything up to the next user message, so a tool call and its result always travel
together; droppable) and the current exchange from the last user message on, with the
generation prefix (fixed). While the formatted length exceeds the limit the oldest
droppable group goes; when none is left, :class:`FixedGrammarExceedsContext` is raised.
Nothing is ever sliced inside a group, and the result is formatted afresh, so the
grammar stays intact.

>>> result = truncate(compiler, messages, limit=130, mode="generation")   # doctest: +SKIP
>>> len(result.conversation), [d.message_indices for d in result.dropped]  # doctest: +SKIP
(109, [(1, 2)])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .conversation import Conversation
from .errors import ConversationError, FixedGrammarExceedsContext
from .messages import Message, as_messages, validate_messages


class Formatter(Protocol):
    """What truncation needs: ``SequenceCompiler`` and ``ChatTemplate`` both provide it."""

    def format(
        self, messages: Sequence[Any], *, mode: str, tools: Any = None, documents: Any = None
    ) -> Conversation: ...


@dataclass(frozen=True)
class Group:
    """Consecutive messages that are kept or dropped together."""

    message_indices: tuple[int, ...]
    retention: Literal["fixed", "droppable"]
    kind: str  # "system", "exchange" or "current"


@dataclass(frozen=True)
class DroppedGroup:
    """A dropped group: its messages, roles and the tokens the drop saved."""

    message_indices: tuple[int, ...]
    roles: tuple[str, ...]
    tokens: int
    per_message: tuple[int, ...]  # exact turn lengths when the formatter is additive, else ()


@dataclass(frozen=True)
class TruncationResult:
    """The fitted conversation and what truncation did."""

    conversation: Conversation
    kept_indices: tuple[int, ...]
    dropped: tuple[DroppedGroup, ...]
    original_length: int
    limit: int

    @property
    def accounting(self) -> dict[str, int]:
        """Per-part token counts of the kept conversation (see Conversation.accounting)."""
        return self.conversation.accounting()


def plan_groups(messages: Sequence[Message]) -> list[Group]:
    """The default groups: system (fixed), older exchanges (droppable), current (fixed)."""
    n = len(messages)
    lead = next((k for k, m in enumerate(messages) if m.role != "system"), n)
    users = [k for k in range(lead, n) if messages[k].role == "user"]
    current = users[-1] if users else lead
    groups = [Group(tuple(range(lead)), "fixed", "system")] if lead else []
    starts = [k for k in users if k < current]
    if starts and starts[0] > lead:
        starts.insert(0, lead)  # messages before the first user message join the first exchange
    # One boundary per start: the next start, or the current exchange for the last one.
    for a, b in zip(starts, [*starts[1:], current][: len(starts)], strict=True):
        groups.append(Group(tuple(range(a, b)), "droppable", "exchange"))
    if current < n:
        groups.append(Group(tuple(range(current, n)), "fixed", "current"))
    return groups


def check_groups(messages: Sequence[Message], groups: Sequence[Group]) -> None:
    """Groups must cover every message once, in order, and keep tool pairs together."""
    flat = [i for g in groups for i in g.message_indices]
    if flat != list(range(len(messages))):
        raise ConversationError(
            "truncation groups must list every message exactly once, in order; "
            f"got {[list(g.message_indices) for g in groups]}"
        )
    group_of = {i: k for k, g in enumerate(groups) for i in g.message_indices}
    calls = {call.call_id: i for i, m in enumerate(messages) for call in m.tool_calls}
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id in calls:
            j = calls[m.tool_call_id]
            if group_of[i] != group_of[j]:
                raise ConversationError(
                    f"truncation groups split the tool call of message {j} from its result in "
                    f"message {i} (call_id {m.tool_call_id!r}); put both in one group"
                )


def truncate(
    formatter: Formatter,
    messages: Sequence[Any],
    *,
    limit: int,
    mode: str = "generation",
    groups: Sequence[Group] | None = None,
    tools: Any = None,
    documents: Any = None,
) -> TruncationResult:
    """Fit ``messages`` into ``limit`` tokens by dropping whole groups, oldest first.

    ``messages`` may be ``Message`` objects or dicts (dicts are passed to the formatter
    unchanged, so extra keys reach a Hugging Face template).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ConversationError(f"limit must be a positive number of tokens, not {limit!r}")
    typed = as_messages(messages)
    validate_messages(typed, mode=mode)
    plan = list(groups) if groups is not None else plan_groups(typed)
    check_groups(typed, plan)

    def render(kept: Sequence[int]) -> Conversation:
        return formatter.format(
            [messages[i] for i in kept], mode=mode, tools=tools, documents=documents
        )

    lengths = _additive_lengths(formatter, typed, mode, documents)
    kept = list(range(len(typed)))
    dropped: list[DroppedGroup] = []
    conversation = render(kept)
    original = length = len(conversation)
    remaining = [g for g in plan if g.retention == "droppable"]
    while length > limit:
        if not remaining:
            parts = conversation.accounting()
            detail = ", ".join(f"{k[2:]} {v}" for k, v in parts.items() if v and k != "n_total")
            raise FixedGrammarExceedsContext(
                f"the parts truncation may not drop need {length} tokens ({detail}) but the "
                f"limit is {limit}; raise the limit or shorten the system prompt or the current "
                "message (tokenpact never slices inside a turn)",
                limit=limit,
                fixed_length=length,
                accounting=parts,
            )
        victim = remaining.pop(0)
        kept = [i for i in kept if i not in victim.message_indices]
        conversation = render(kept)
        per_message = tuple(lengths[i] for i in victim.message_indices) if lengths else ()
        dropped.append(
            DroppedGroup(
                victim.message_indices,
                tuple(typed[i].role for i in victim.message_indices),
                length - len(conversation),
                per_message,
            )
        )
        length = len(conversation)
    return TruncationResult(conversation, tuple(kept), tuple(dropped), original, limit)


def _additive_lengths(
    formatter: Any, messages: Sequence[Message], mode: str, documents: Any
) -> list[int] | None:
    """Exact per-message turn lengths when the formatter's length model is additive."""
    model = getattr(formatter, "length_model", None)
    if model is None:
        return None
    lengths = model(messages, mode=mode, documents=documents or ())
    out = [0] * len(messages)
    for turn in lengths.turns:
        if turn.message_index >= 0:
            out[turn.message_index] = turn.total
    return out
