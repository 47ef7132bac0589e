"""A declared sequence grammar compiled to IDs by trusted insertion.

A conversation is an optional BOS, one turn per message and, in generation mode, an
open assistant header. A turn is ``HEADER_START role HEADER_END separator``, the body
(content, with tool calls or a tool result between their wrapper controls), then EOT,
except for the open final turn of prefill mode. Documents are turns of their own role
after the leading system messages.

Control IDs are appended directly; the role label, the separator and all content go
through plain ``encode`` (no control spelling is ever recognized there), each segment on
its own, as Llama 3's reference formatter does. Lengths are therefore additive:
``L = 1 + sum_i(2 + r_i + h + c_i + w_i + e_i) + g_m`` (``r`` role IDs, ``h`` separator
IDs, ``c`` content IDs, ``w`` wrapper controls, ``e`` 1 if the turn closes, ``g`` the
generation suffix), which :meth:`SequenceCompiler.length_model` reports.

>>> tok = tp.Tokenizer.from_merges([], special_tokens=SEED_SPECIAL_TOKENS)  # doctest: +SKIP
>>> SequenceCompiler(tok).compile([user("hi")], mode="generation").input_ids  # doctest: +SKIP
[256, 258, 117, 115, 101, 114, 259, 10, 10, 104, 105, 260, 258, 97, ...]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract import template_hash as _template_hash
from ..contract.declarations import template_declaration
from ..special import SpecialToken
from .conversation import CONTENT, CONTROL, DOCUMENT, TEMPLATE, Conversation, Owner, build
from .errors import ConversationError
from .messages import Document, Message, as_messages, validate_messages
from .stop import StopPolicy

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer

# The synthetic control set of the built-in example grammar: with no merges, a
# byte tokenizer built from these gives bytes 0..255 and controls 256..265.
SEED_SPECIAL_TOKENS: tuple[SpecialToken, ...] = (
    SpecialToken("<|bos|>", "bos"),
    SpecialToken("<|eos|>", "eos"),
    SpecialToken("<|start_header|>"),
    SpecialToken("<|end_header|>"),
    SpecialToken("<|eot|>", "eot"),
    SpecialToken("<|tool_call|>"),
    SpecialToken("<|/tool_call|>"),
    SpecialToken("<|tool_result|>"),
    SpecialToken("<|/tool_result|>"),
    SpecialToken("<|pad|>", "pad"),
)

_CONTROL_FIELDS = (
    "bos",
    "header_start",
    "header_end",
    "eot",
    "eos",
    "tool_call_start",
    "tool_call_end",
    "tool_result_start",
    "tool_result_end",
)


@dataclass(frozen=True)
class SequenceGrammar:
    """Control spellings and text rules of a chat format (defaults: the example grammar)."""

    bos: str | None = "<|bos|>"
    header_start: str = "<|start_header|>"
    header_end: str = "<|end_header|>"
    header_separator: str = "\n\n"
    eot: str = "<|eot|>"
    eos: str | None = "<|eos|>"
    tool_call_start: str | None = "<|tool_call|>"
    tool_call_end: str | None = "<|/tool_call|>"
    tool_result_start: str | None = "<|tool_result|>"
    tool_result_end: str | None = "<|/tool_result|>"
    document_role: str = "document"
    tool_call_format: str = "{name} {arguments}"
    stop_roles: tuple[str, ...] = ("eot", "eos")
    stop_sequences: tuple[str, ...] = ()
    name: str = "sequence-grammar"

    @classmethod
    def llama3(cls) -> SequenceGrammar:
        """Llama 3's header/EOT format (tool calls as ``<|python_tag|>`` ... ``<|eom_id|>``)."""
        return cls(
            bos="<|begin_of_text|>",
            header_start="<|start_header_id|>",
            header_end="<|end_header_id|>",
            eot="<|eot_id|>",
            eos="<|end_of_text|>",
            tool_call_start="<|python_tag|>",
            tool_call_end="<|eom_id|>",
            tool_result_start=None,
            tool_result_end=None,
            document_role="ipython",
            name="llama3",
        )

    def to_config(self) -> dict[str, Any]:
        """The canonical description that the template hash covers."""
        config = asdict(self)
        config["stop_roles"] = list(self.stop_roles)
        config["stop_sequences"] = list(self.stop_sequences)
        return config


@dataclass(frozen=True)
class TurnLength:
    """The length-model parts of one turn: ``2 + role + separator + content + wrappers + eot``."""

    message_index: int  # -1 for a document turn
    role: str
    role_ids: int
    separator_ids: int
    content_ids: int
    wrapper_ids: int
    eot: int

    @property
    def total(self) -> int:
        return (
            2 + self.role_ids + self.separator_ids + self.content_ids + self.wrapper_ids + self.eot
        )


@dataclass(frozen=True)
class LengthModel:
    """``L = bos + sum(turn totals) + generation suffix`` for one conversation and mode."""

    bos: int
    turns: tuple[TurnLength, ...]
    generation_suffix: int

    @property
    def total(self) -> int:
        return self.bos + sum(t.total for t in self.turns) + self.generation_suffix


class SequenceCompiler:
    """Compiles typed messages with a :class:`SequenceGrammar` and a tokenizer."""

    def __init__(self, tokenizer: Tokenizer, grammar: SequenceGrammar | None = None) -> None:
        self.tokenizer = tokenizer
        self.grammar = grammar or SequenceGrammar()
        controls = {**tokenizer.added_tokens, **tokenizer.special_tokens}
        self._ids: dict[str, int | None] = {}
        for name in _CONTROL_FIELDS:
            spelling = getattr(self.grammar, name)
            if spelling is None:
                self._ids[name] = None
                continue
            if spelling not in controls:
                raise ConversationError(
                    f"the grammar's {name} {spelling!r} is not a special or added token of this "
                    "tokenizer, so it would be printed as plain text; declare it "
                    "when training the tokenizer, or use the tokenizer's own spelling"
                )
            self._ids[name] = int(controls[spelling])
        self._role_cache: dict[str, list[int]] = {}
        self._separator = tokenizer.encode(self.grammar.header_separator)
        source = json.dumps(self.grammar.to_config(), sort_keys=True, ensure_ascii=False)
        self.declaration = template_declaration(
            source, name=self.grammar.name, modes=("generation", "training")
        )
        self.template_hash = _template_hash(self.declaration)
        stop_ids = []
        for role in self.grammar.stop_roles:
            if role not in ("eot", "eos") or self._ids.get(role) is None:
                raise ConversationError(f"stop role {role!r} has no control token in this grammar")
            stop_ids.append(int(self._ids[role]))  # type: ignore[arg-type]
        sequences = tuple(tuple(tokenizer.encode(s)) for s in self.grammar.stop_sequences)
        self._stops = StopPolicy(0, tuple(stop_ids), sequences)

    def _role(self, role: str) -> list[int]:
        ids = self._role_cache.get(role)
        if ids is None:
            ids = self._role_cache[role] = self.tokenizer.encode(role)
        return ids

    def _wrapper(self, start: str, end: str, what: str) -> tuple[int, int]:
        a, b = self._ids[start], self._ids[end]
        if a is None or b is None:
            raise ConversationError(
                f"the conversation has {what} but the grammar declares no {start}/{end} wrapper"
            )
        return a, b

    def _turns(
        self, messages: Sequence[Message], documents: Sequence[Document], mode: str
    ) -> tuple[list[list[tuple[list[int], int, int]]], list[Owner], list[TurnLength], list[bool]]:
        """Segments ``(ids, kind, owner)`` of each turn, the owners and the length parts."""
        encode = self.tokenizer.encode
        owners: list[Owner] = []
        turns: list[list[tuple[list[int], int, int]]] = []
        lengths: list[TurnLength] = []
        assistant: list[bool] = []
        leading = next((k for k, m in enumerate(messages) if m.role != "system"), len(messages))
        # Documents sit after the leading system messages; (message index or -1, item, k).
        order: list[tuple[int, Message | Document, int]] = [
            (i, m, 0) for i, m in enumerate(messages[:leading])
        ]
        order += [(-1, d, k) for k, d in enumerate(documents)]
        order += [(i, m, 0) for i, m in enumerate(messages[leading:], start=leading)]
        last = len(messages) - 1

        def owned(text: str, kind: int, index: int, label: str) -> tuple[list[int], int, int]:
            owners.append(Owner(kind, index, label))
            return (encode(text), kind, len(owners) - 1)

        for index, item, doc_k in order:
            role = self.grammar.document_role if index < 0 else item.role  # type: ignore[union-attr]
            body: list[tuple[list[int], int, int]] = []
            wrappers = 0
            if isinstance(item, Document):
                text = item.text if item.title is None else f"{item.title}\n{item.text}"
                body.append(owned(text, DOCUMENT, -1, f"documents[{doc_k}]"))
            elif item.role == "tool":
                a, b = self._wrapper("tool_result_start", "tool_result_end", "tool results")
                body.append(([a], CONTROL, -1))
                body.append(owned(item.content, CONTENT, index, f"messages[{index}].content"))
                body.append(([b], CONTROL, -1))
                wrappers += 2
            else:
                if item.content:
                    body.append(owned(item.content, CONTENT, index, f"messages[{index}].content"))
                for k, call in enumerate(item.tool_calls):
                    a, b = self._wrapper("tool_call_start", "tool_call_end", "tool calls")
                    text = self.grammar.tool_call_format.format(
                        name=call.name, arguments=call.arguments_text(), call_id=call.call_id
                    )
                    label = f"messages[{index}].tool_calls[{k}]"
                    body += [
                        ([a], CONTROL, -1),
                        owned(text, CONTENT, index, label),
                        ([b], CONTROL, -1),
                    ]
                    wrappers += 2
            closes = not (mode == "prefill" and index == last)
            segments = self._header(role) + body
            if closes:
                segments.append(([self._ids["eot"]], CONTROL, -1))  # type: ignore[list-item]
            content = sum(len(ids) for ids, kind, _ in body if kind != CONTROL)
            lengths.append(
                TurnLength(
                    index,
                    role,
                    len(self._role(role)),
                    len(self._separator),
                    content,
                    wrappers,
                    int(closes),
                )
            )
            turns.append(segments)
            assistant.append(role == "assistant" and index >= 0)
        return turns, owners, lengths, assistant

    def _header(self, role: str) -> list[tuple[list[int], int, int]]:
        return [
            ([self._ids["header_start"]], CONTROL, -1),  # type: ignore[list-item]
            (self._role(role), TEMPLATE, -1),
            ([self._ids["header_end"]], CONTROL, -1),  # type: ignore[list-item]
            (self._separator, TEMPLATE, -1),
        ]

    def _prepare(
        self, messages: Iterable[Any], documents: Iterable[Any], mode: str
    ) -> tuple[tuple[Message, ...], tuple[Document, ...]]:
        msgs = as_messages(messages)
        validate_messages(msgs, mode=mode)
        docs = tuple(d if isinstance(d, Document) else Document(**d) for d in documents)
        return msgs, docs

    def length_model(
        self, messages: Iterable[Any], *, mode: str = "training", documents: Iterable[Any] = ()
    ) -> LengthModel:
        """The length model (:class:`LengthModel`) with every part measured by real
        encodings."""
        msgs, docs = self._prepare(messages, documents, mode)
        _, _, lengths, _ = self._turns(msgs, docs, mode)
        suffix = 2 + len(self._role("assistant")) + len(self._separator)
        return LengthModel(
            int(self._ids["bos"] is not None), tuple(lengths), suffix if mode == "generation" else 0
        )

    def compile(
        self, messages: Iterable[Any], *, mode: str = "training", documents: Iterable[Any] = ()
    ) -> Conversation:
        """Compile messages in ``mode`` (``training``, ``generation`` or ``prefill``)."""
        msgs, docs = self._prepare(messages, documents, mode)
        turns, owners, _, assistant = self._turns(msgs, docs, mode)
        segments: list[tuple[list[int], int, int, int]] = []  # ids, kind, owner, assistant
        if self._ids["bos"] is not None:
            segments.append(([self._ids["bos"]], CONTROL, -1, 0))
        response_start = -1
        for turn, is_assistant in zip(turns, assistant, strict=True):
            pos = sum(len(s[0]) for s in segments)
            for k, (seg_ids, kind, seg_owner) in enumerate(turn):
                # Everything after an assistant header (body, wrappers, EOT) is the response.
                segments.append((seg_ids, kind, seg_owner, int(is_assistant and k >= 4)))
            if is_assistant:
                response_start = pos + sum(len(s[0]) for s in turn[:4])
        if mode == "generation":
            segments += [(i, kind, o, 0) for i, kind, o in self._header("assistant")]
        sizes = [len(s[0]) for s in segments]
        ids = np.array([i for s in segments for i in s[0]], dtype=np.int64)
        kinds = np.repeat(np.array([s[1] for s in segments], dtype=np.int64), sizes)
        owner = np.repeat(np.array([s[2] for s in segments], dtype=np.int64), sizes)
        mask = np.repeat(np.array([s[3] for s in segments], dtype=np.int8), sizes)
        boundary = len(ids)
        if mode == "training" and response_start >= 0:
            boundary = response_start
        return build(
            tokenizer=self.tokenizer,
            ids=ids,
            kinds=kinds,
            owner=owner,
            owners=owners,
            assistant_mask=mask,
            prompt_boundary=boundary,
            stop_policy=self._stops,
            template_hash=self.template_hash,
            mode=mode,
            roles=tuple(m.role for m in msgs),
        )

    def format(
        self,
        messages: Iterable[Any],
        *,
        mode: str = "generation",
        tools: Any = None,
        documents: Iterable[Any] | None = None,
    ) -> Conversation:
        """Same as :meth:`compile` (the formatter protocol truncation uses).

        Tool schemas are application configuration that this grammar does not print.
        """
        return self.compile(messages, mode=mode, documents=documents or ())
