"""Typed conversation messages and the rules of their order.

A conversation is leading system messages, then exchanges: a user message, the
assistant's answer and, when the assistant calls tools, one result per call that
immediately follows it with the same ``call_id``, after which the assistant continues.
Retrieved documents travel beside the messages and are untrusted content, like the
messages themselves.

>>> msgs = [system("Be brief."), user("Weather?"),
...         assistant(tool_calls=[ToolCall("c1", "weather", '{"city": "Paris"}')]),
...         tool_result("c1", "18C rain"), assistant("Rainy, 18C.")]
>>> validate_messages(msgs, mode="training")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ConversationError, MessageContentError

Mode = Literal["training", "generation", "prefill"]
MODES: tuple[str, ...] = ("training", "generation", "prefill")
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def check_text(value: Any, what: str) -> str:
    """``value`` if it is a str of valid Unicode (no lone surrogate), else
    :class:`MessageContentError` naming ``what``."""
    if not isinstance(value, str):
        raise MessageContentError(
            f"{what} must be a str, not {type(value).__name__}; convert it to text first"
        )
    if value.isascii():  # a flag of the string object: no surrogate possible
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MessageContentError(
            f"{what} holds a lone surrogate {value[exc.start]!r} at index {exc.start}, which "
            "is not valid Unicode; decode the source with errors='replace' or remove it"
        ) from None
    return value


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant message; ``arguments`` is JSON text or a mapping."""

    call_id: str
    name: str
    arguments: str | Mapping[str, Any] = "{}"

    def __post_init__(self) -> None:
        check_text(self.call_id, "a tool call's id")
        check_text(self.name, f"the name of tool call {self.call_id!r}")
        if not isinstance(self.arguments, Mapping):
            check_text(self.arguments, f"the arguments of tool call {self.call_id!r}")

    def arguments_text(self) -> str:
        """The arguments as JSON text (mappings are dumped without ASCII escaping)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)

    def to_hf(self) -> dict[str, Any]:
        """The OpenAI / Hugging Face form ``{"id", "type", "function": {...}}``."""
        args = self.arguments if isinstance(self.arguments, str) else dict(self.arguments)
        return {
            "id": self.call_id,
            "type": "function",
            "function": {"name": self.name, "arguments": args},
        }


@dataclass(frozen=True)
class Message:
    """One message. ``tool_calls`` only on assistant messages, ``tool_call_id`` only on tool."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        check_text(self.role, "a message role")
        if self.role not in ROLES:
            raise ConversationError(
                f"message role {self.role!r} is not one of {', '.join(ROLES)}; "
                "map other roles (developer, ipython, observation) before formatting"
            )
        check_text(self.content, f"{self.role} message content")
        if self.tool_call_id is not None:
            check_text(self.tool_call_id, "a tool result's tool_call_id")
        if isinstance(self.tool_calls, str | bytes | Mapping):
            raise MessageContentError("tool_calls must be a list of tool calls")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        for call in self.tool_calls:
            if not isinstance(call, ToolCall):
                raise MessageContentError(
                    f"a tool call must be a ToolCall, not {type(call).__name__}"
                )
        if self.tool_calls and self.role != "assistant":
            raise ConversationError(f"a {self.role} message cannot carry tool calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ConversationError("a tool result needs the call_id of the call it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ConversationError(f"a {self.role} message cannot carry a tool_call_id")

    def to_hf(self) -> dict[str, Any]:
        """The dict form chat templates read."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_hf() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_hf(cls, data: Mapping[str, Any]) -> Message:
        """Read the OpenAI / Hugging Face dict form (``content: None`` becomes ``""``)."""
        if isinstance(data, Message):
            return data
        if not isinstance(data, Mapping) or "role" not in data:
            raise ConversationError(f"a message must be a mapping with a 'role', got {data!r}")
        calls = []
        raw_calls = data.get("tool_calls") or ()
        if not isinstance(raw_calls, list | tuple):
            raise MessageContentError(f"tool_calls must be a list, not {type(raw_calls).__name__}")
        for raw in raw_calls:
            function = raw.get("function", raw) if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping) or "name" not in function:
                raise MessageContentError(
                    f"tool call {raw!r:.80} is not {{'id', 'function': {{'name', 'arguments'}}}}"
                )
            call_id = raw.get("id") or raw.get("call_id")
            if not call_id:
                raise ConversationError(f"tool call {raw!r} has no id; every call needs one")
            calls.append(ToolCall(str(call_id), function["name"], function.get("arguments", "")))
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(calls),
            tool_call_id=data.get("tool_call_id"),
        )


@dataclass(frozen=True)
class Document:
    """A retrieved document: untrusted content with an optional title."""

    text: str
    title: str | None = None

    def __post_init__(self) -> None:
        check_text(self.text, "a document's text")
        if self.title is not None:
            check_text(self.title, "a document's title")

    def to_hf(self) -> dict[str, Any]:
        out = {"text": self.text}
        if self.title is not None:
            out["title"] = self.title
        return out


def system(content: str) -> Message:
    return Message("system", content)


def user(content: str) -> Message:
    return Message("user", content)


def assistant(content: str = "", *, tool_calls: Iterable[ToolCall] = ()) -> Message:
    return Message("assistant", content, tuple(tool_calls))


def tool_result(call_id: str, content: str) -> Message:
    return Message("tool", content, tool_call_id=call_id)


def as_messages(items: Iterable[Message | Mapping[str, Any]]) -> tuple[Message, ...]:
    """Messages from ``Message`` objects or their dict form."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise MessageContentError(
            f"messages must be a list of messages, not {type(items).__name__}; "
            "wrap a single message in a list"
        )
    return tuple(Message.from_hf(m) for m in items)  # type: ignore[arg-type]


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ConversationError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")


# Roles a plain dict message may have on validate_plain's path (a tool result needs a
# tool_call_id, so it takes the full path).
_PLAIN_ROLES = frozenset(("system", "user", "assistant"))


def validate_plain(messages: Any, mode: str) -> bool:
    """True when ``validate_messages(as_messages(messages), mode=mode)`` would pass and
    ``messages`` is the common shape: a list or tuple of plain dicts with a system, user or
    assistant ``role``, str (or None or missing) ``content`` of valid Unicode, no tool
    calls and no ``tool_call_id``. Checked on the dicts directly, without building
    :class:`Message` objects (a tenth of the cost for short conversations). False means
    "not shown here": run the full check, which raises the error or accepts the shapes
    this does not cover."""
    if type(messages) is not list and type(messages) is not tuple:
        return False
    if not messages or mode not in MODES:
        return False
    previous = "system"
    for m in messages:
        if type(m) is not dict:
            return False
        role = m.get("role")
        if type(role) is not str or role not in _PLAIN_ROLES:
            return False
        content = m.get("content")
        if content is not None:
            if type(content) is not str:
                return False
            if not content.isascii():
                try:
                    content.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        if m.get("tool_calls") or m.get("tool_call_id") is not None:
            return False
        # validate_messages' order rules for conversations without tool calls.
        if role == "system":
            if previous != "system":
                return False
        elif role == "user":
            if previous == "user":
                return False
        elif previous == "system" or previous == "assistant":  # an assistant message
            return False
        previous = role
    # generation ends with a user message; training and prefill (no tool calls here)
    # with an assistant one.
    return previous == ("user" if mode == "generation" else "assistant")


def validate_messages(messages: Sequence[Message], *, mode: str = "training") -> None:
    """Check role order and tool pairing; raise ConversationError naming the first problem.

    Rules: system messages lead; then a user message opens each exchange; the assistant
    answers; an assistant message with tool calls is followed immediately by one result
    per call (same ``call_id``, any order) and then by the assistant again. ``training``
    ends with a complete assistant message, ``generation`` with a user message or tool
    results, ``prefill`` with an assistant message (no tool calls) left open.
    """
    check_mode(mode)
    if not messages:
        raise ConversationError("the conversation has no messages; add at least a user message")
    pending: dict[str, int] = {}  # call_id -> index of the calling message
    seen_ids: set[str] = set()
    previous = "system"
    for i, m in enumerate(messages):
        where = f"message {i} ({m.role})"
        if pending and m.role != "tool":
            missing = sorted(pending)
            raise ConversationError(
                f"{where} comes before the results of tool calls {missing} of message "
                f"{pending[missing[0]]}; add one tool result per call right after the call"
            )
        if m.role == "system":
            if previous != "system":
                raise ConversationError(
                    f"{where}: system messages must lead the conversation; move it to the start"
                )
        elif m.role == "user":
            if previous == "user":
                raise ConversationError(
                    f"{where} follows another user message; merge them or add the answer"
                )
            if previous == "tool":
                raise ConversationError(
                    f"{where} follows tool results; the assistant must answer them first"
                )
        elif m.role == "assistant":
            if previous == "system":
                raise ConversationError(f"{where} comes before any user message")
            if previous == "assistant":
                raise ConversationError(
                    f"{where} follows another assistant message; merge them into one turn"
                )
            for call in m.tool_calls:
                if call.call_id in seen_ids:
                    raise ConversationError(
                        f"{where} reuses call_id {call.call_id!r}; call ids must be unique"
                    )
                seen_ids.add(call.call_id)
                pending[call.call_id] = i
        else:  # tool
            if m.tool_call_id not in pending:
                answered = m.tool_call_id in seen_ids
                raise ConversationError(
                    f"{where} answers call_id {m.tool_call_id!r}, which "
                    + (
                        "was already answered"
                        if answered
                        else "no immediately preceding assistant message made"
                    )
                    + "; a result must follow its call with the same call_id"
                )
            del pending[m.tool_call_id]  # type: ignore[arg-type]
        previous = m.role
    last = messages[-1]
    if pending:
        raise ConversationError(
            f"tool calls {sorted(pending)} of message {max(pending.values())} have no result; "
            "add the results, or drop the calls"
        )
    if mode == "training" and last.role != "assistant":
        raise ConversationError(
            f"training mode needs a final assistant message, not {last.role}; "
            "use mode='generation' to prompt for an answer"
        )
    if mode == "generation" and last.role not in ("user", "tool"):
        raise ConversationError(
            f"generation mode needs a final user message or tool results, not {last.role}; "
            "use mode='prefill' to continue an assistant message"
        )
    if mode == "prefill" and (last.role != "assistant" or last.tool_calls):
        raise ConversationError(
            "prefill mode continues a final assistant message without tool calls; "
            f"the last message is {last.role}" + (" with tool calls" if last.tool_calls else "")
        )
