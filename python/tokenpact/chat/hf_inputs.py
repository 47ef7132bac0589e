"""Template inputs as ``transformers`` prepares them, with every untrusted string tracked.

``transformers`` (v5) drops message keys whose value is None, rebuilds all template data
from plain JSON types (anything else becomes a ``"<TypeName>"`` placeholder), and copies
a message's reasoning under its aliases. The same steps run here so templates see the
same data, except that each string of a message (other than its ``role``), of a tool
schema or of a document becomes a :class:`~tokenpact.chat.spans.SpanStr` owned by its
path (``messages[2].content``, ``tools[0]``, ``documents[1].text``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .conversation import CONTENT, DOCUMENT, TOOLS, Owner
from .errors import ChatTemplateError, MessageContentError
from .messages import Document, Message, check_text
from .spans import SpanStr

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")

# A role is structure, not content: templates build control tokens from it
# (GLM-4 writes "<|" + role + "|>"), so it must be a short identifier; so must message
# keys, which templates may print (message.items()) untracked.
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")
_NAMES_SEEN: set[str] = set()  # names already checked (a few; capped)
# The namedtuple's generated __new__ is a Python function; tuple.__new__ builds the same.
_new_owner = tuple.__new__


class Tracker:
    """Allocates owners while wrapping inputs; notes whether any holds a control spelling."""

    def __init__(
        self,
        find_control: Callable[[str], str | None],
        defang: Callable[[str], str] | None,
        find_first: Callable[[str], tuple[int, str] | None] | None = None,
    ):
        """``find_control(text)``: the first control spelling in ``text`` or None;
        ``find_first``, when given, the native matcher's ``find_first`` behind it (called
        directly: this runs for every string of every message)."""
        self.owners: list[Owner] = []
        self.found_control: str | None = None
        self._find = find_control
        self._find_first = find_first
        self._defang = defang

    def string(self, text: str, kind: int, message_index: int, label: str) -> str:
        if type(text) is not str:
            text = str.__str__(text)  # subclasses (enums, our own SpanStr) become plain
        if not text:
            return text
        if self.found_control is None:
            if self._find_first is not None:
                hit = self._find_first(text)
                if hit is not None:
                    self.found_control = str(hit[1])
            else:
                self.found_control = self._find(text)
        if self._defang is not None:
            text = self._defang(text)
        owners = self.owners
        owners.append(_new_owner(Owner, (kind, message_index, label)))  # Owner(...), no frame
        out = str.__new__(SpanStr, text)  # track(), inlined: this runs for every string
        out._spans = ((0, len(text), len(owners) - 1),)
        return out


def plain_data(value: Any) -> Any:
    """``transformers``' ``_plain_template_data`` for trusted inputs (template kwargs)."""
    return _wrap(value, None, CONTENT, -1, "")


# Deepest nesting of structured content (tool arguments, content parts) a template sees.
MAX_CONTENT_DEPTH = 64


def _wrap(
    value: Any, tracker: Tracker | None, kind: int, index: int, label: str, depth: int = 0
) -> Any:
    if value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, str):
        if tracker is None:
            return str.__str__(value)
        check_text(value, label)
        return tracker.string(value, kind, index, label)
    if isinstance(value, (bool, int)):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if depth >= MAX_CONTENT_DEPTH:
        # Also stops a structure that contains itself.
        raise MessageContentError(
            f"{label} nests deeper than {MAX_CONTENT_DEPTH} levels; flatten it"
        )
    deeper = depth + 1
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            # Keys inside content (tool-call argument names) are content too; templates
            # print them through tojson.
            k = _wrap(key, tracker, kind, index, f"{label}.{key}#key") if tracker else key
            out[k] = _wrap(item, tracker, kind, index, f"{label}.{key}", deeper)
        return out
    if isinstance(value, list):
        return [
            _wrap(v, tracker, kind, index, f"{label}[{k}]", deeper) for k, v in enumerate(value)
        ]
    if isinstance(value, tuple):
        return tuple(
            _wrap(v, tracker, kind, index, f"{label}[{k}]", deeper) for k, v in enumerate(value)
        )
    if isinstance(value, np.generic):
        return _wrap(value.item(), tracker, kind, index, label, deeper)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _wrap(fields, tracker, kind, index, label, deeper)
    if callable(getattr(value, "model_dump", None)):
        return _wrap(value.model_dump(), tracker, kind, index, label, deeper)
    return f"<{type(value).__name__}>"


def _as_dict(message: Any, index: int) -> Mapping[str, Any]:
    if isinstance(message, Message):
        return message.to_hf()
    if isinstance(message, Mapping):
        return message
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        return {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
    if callable(getattr(message, "model_dump", None)):
        return dict(message.model_dump())
    raise ChatTemplateError(
        f"message {index} must be a dict or a tokenpact.chat.Message, not {type(message).__name__}"
    )


def _check_name(value: Any, index: int, what: str) -> str:
    """Roles and message keys are structure: short identifiers, never content."""
    # isinstance first: an unhashable value (a list as role) must not reach the set lookup.
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ChatTemplateError(
            f"message {index} has {what} {value!r}; it must be a short identifier (letters, "
            "digits, _ or -) because templates print it as structure (GLM-4 builds control "
            "tokens from the role)"
        )
    if len(_NAMES_SEEN) < 1024:
        _NAMES_SEEN.add(str.__str__(value))
    return str.__str__(value)


def wrap_messages(messages: Sequence[Any], tracker: Tracker) -> list[dict[str, Any]]:
    """Messages as template data: None values dropped, strings tracked, reasoning aliased."""
    # A plain list (the common case) skips the two ABC isinstance checks.
    if type(messages) is not list and (
        isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence)
    ):
        raise MessageContentError(
            f"messages must be a list of messages, not {type(messages).__name__}; "
            "wrap a single message in a list"
        )
    out = []
    string = tracker.string
    for i, raw in enumerate(messages):
        message: dict[str, Any] = {}
        for key, value in (raw if type(raw) is dict else _as_dict(raw, i)).items():
            if value is None:
                continue  # transformers drops None values (OpenAI's content=None, say)
            if key not in _NAMES_SEEN:  # the common case skips the call
                key = _check_name(key, i, "key")
            if key == "role":
                known = type(value) is str and value in _NAMES_SEEN
                message[key] = value if known else _check_name(value, i, "role")
            elif type(value) is str:  # the common case, without _wrap's type dispatch
                label = f"messages[{i}].{key}"
                if not value.isascii():  # ASCII holds no lone surrogate: no call
                    check_text(value, label)
                message[key] = string(value, CONTENT, i, label)
            else:
                message[key] = _wrap(value, tracker, CONTENT, i, f"messages[{i}].{key}")
        if "reasoning_content" in message or "thinking" in message or "reasoning" in message:
            reasoning = next(
                (message[k] for k in REASONING_FIELDS if message.get(k) is not None), None
            )
            if reasoning is not None:
                message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def wrap_tools(tools: Sequence[Any] | None, tracker: Tracker) -> list[Any] | None:
    """Tool schemas (dicts; callables are not converted: pass their JSON schema)."""
    if tools is None:
        return None
    out = []
    for k, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ChatTemplateError(
                f"tool {k} must be a JSON-schema dict (transformers.utils.get_json_schema "
                "converts a function)"
            )
        out.append(_wrap(tool, tracker, TOOLS, -1, f"tools[{k}]"))
    return out


def wrap_documents(documents: Sequence[Any] | None, tracker: Tracker) -> list[Any] | None:
    if documents is None:
        return None
    out = []
    for k, doc in enumerate(documents):
        data = doc.to_hf() if isinstance(doc, Document) else doc
        if not isinstance(data, Mapping):
            raise ChatTemplateError("documents must be dicts with 'title' and 'text' keys")
        out.append(_wrap(data, tracker, DOCUMENT, -1, f"documents[{k}]"))
    return out
