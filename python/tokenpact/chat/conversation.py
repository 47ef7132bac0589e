"""The formatted conversation: IDs with their provenance, masks, boundary and identities.

Every per-token list is aligned with ``input_ids``:

- ``origin``: ``"control"`` (a control ID inserted by the template or grammar: the only
  trusted path), ``"template"`` (ordinary text written by the template: role labels,
  separators), ``"content"`` (message content, tool-call arguments, tool results),
  ``"document"`` (retrieved documents) or ``"tools"`` (tool schemas).
- ``message_index``: the message whose content produced the token, else -1.
- ``owner_index``: index into ``owners`` (labels such as ``messages[2].content``), else -1.
- ``special_tokens_mask``: 1 exactly where ``origin`` is ``"control"``.
- ``assistant_mask``: 1 on tokens the model is trained to produce (response-only loss).

``prompt_boundary`` is where generated output starts (generation and prefill: the end of
the prompt; training: the start of the final assistant response).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ._encode import KINDS, MARKER_RE, facts
from .errors import ConversationError
from .stop import StopPolicy

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer
    from ..encoding import Encoding
    from ._encode import TokenizerFacts

CONTROL, TEMPLATE, CONTENT, DOCUMENT, TOOLS = range(5)
_KIND_ARRAY = np.array(KINDS, dtype=object)
# Accounting part of each role's content; other template roles count as user input.
_ROLE_PART = {
    "system": "n_system",
    "developer": "n_system",
    "assistant": "n_assistant",
    "tool": "n_tools",
    "observation": "n_tools",
    "ipython": "n_tools",
    "function": "n_tools",
}


class Owner(NamedTuple):
    """A source of untrusted text: its kind code, message index (or -1) and label."""

    kind: int
    message_index: int
    label: str


class TokenSource(Protocol):
    """The columnar record a rendered :class:`Conversation` views (one record of a
    render: :class:`tokenpact.chat.columns.TokenRecord`, or a slice of
    :class:`~tokenpact.chat.RenderedColumns`): each method builds the named lists."""

    def id_list(self) -> tuple[list[int]]: ...

    def token_lists(self) -> tuple[list[int], list[int], list[str]]: ...

    def index_lists(self) -> tuple[list[int], list[int]]: ...

    def mask_list(self) -> tuple[list[int]]: ...


class _FromRecord:
    """The per-token list field ``name`` of a rendered conversation, built from the
    columnar record it views on first read (``build(record)`` returns the lists named
    by ``group``, which are stored together) and from then on a plain attribute: a
    non-data descriptor, so the stored value is read without calling it (and a
    conversation built field by field, or copied, holds its lists from the start)."""

    def __init__(
        self, name: str, build: Callable[[TokenSource], tuple[Any, ...]], group: tuple[str, ...]
    ) -> None:
        self.name = name
        self.build = build
        self.group = group

    def __get__(self, conv: Any, owner: type | None = None) -> Any:
        if conv is None:
            return self
        fields = conv.__dict__
        record = fields.get("_record")
        if record is None:
            raise AttributeError(f"'Conversation' object has no attribute {self.name!r}")
        # Two threads reading at once both build the same lists; either result stands.
        for name, value in zip(self.group, self.build(record), strict=True):
            fields.setdefault(name, value)
        return fields[self.name]


@dataclass(frozen=True, eq=False, repr=False)
class Conversation:
    """A formatted conversation; see the module docstring for the fields.

    A rendered conversation is a view of its columnar record (token IDs, kind codes,
    content runs, the assistant ranges): its per-token lists are built on first read,
    then kept (``render_batch``'s calling thread spends nothing on lists its caller never
    reads). Copies and pickles hold every list; a conversation built from its fields
    (``Conversation(...)``, ``dataclasses.replace``) holds the lists it was given.
    """

    input_ids: list[int]
    special_tokens_mask: list[int]
    origin: list[str]
    message_index: list[int]
    owner_index: list[int]
    owners: tuple[str, ...]
    assistant_mask: list[int]
    prompt_boundary: int
    stop_policy: StopPolicy
    tokenizer_hash: str
    template_hash: str
    mode: str
    roles: tuple[str, ...] = ()
    text: str | None = None
    byte_offsets: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    tokenizer: Tokenizer | None = field(default=None, repr=False)

    @classmethod
    def view(cls, record: TokenSource, **fields: Any) -> Conversation:
        """The conversation of a columnar ``record``: every field but the per-token lists
        given (``tokenizer_hash`` defaults to the tokenizer's), the lists read from
        ``record`` on first access."""
        conv = object.__new__(cls)
        # The frozen dataclass's __init__ sets its fields one object.__setattr__ at a time,
        # a measurable share of a short conversation's cost: one dict update here.
        conv.__dict__.update(fields, _record=record)
        if "tokenizer_hash" not in fields:
            conv.__dict__["tokenizer_hash"] = fields["tokenizer"].semantic_hash
        return conv

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getstate__(self) -> dict[str, Any]:
        # Pickles and copies hold the built lists, not the record they come from.
        state = {f: getattr(self, f) for f in _FIELDS}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (
            f"Conversation(mode={self.mode!r}, tokens={len(self.input_ids)}, "
            f"prompt_boundary={self.prompt_boundary}, controls={sum(self.special_tokens_mask)}, "
            f"template_hash={self.template_hash[:19]}...)"
        )

    # ------------------------------------------------------------------ views
    @cached_property
    def offsets(self) -> list[tuple[int, int]]:
        """Codepoint ``(start, end)`` of each token in ``text`` (empty if no text)."""
        if self.text is None or self.byte_offsets is None:
            return [(0, 0)] * len(self.input_ids)
        from ..encoding import byte_to_char_offsets

        starts, ends = byte_to_char_offsets(self.text, *self.byte_offsets)
        return list(zip(starts.tolist(), ends.tolist(), strict=True))

    def pieces(self) -> list[str]:
        """Each token's text (control tokens as their spelling); for display."""
        tok = self._require_tokenizer("pieces")
        return [tok.token_bytes(i).decode("utf-8", errors="replace") for i in self.input_ids]

    def accounting(self) -> dict[str, int]:
        """Token counts per part: template (controls + template text), system, user,
        assistant, tools (schemas, calls, results) and documents."""
        counts = dict.fromkeys(
            ("n_template", "n_system", "n_user", "n_assistant", "n_tools", "n_documents"), 0
        )
        counts["n_total"] = len(self.input_ids)
        for origin, msg, owner in zip(
            self.origin, self.message_index, self.owner_index, strict=True
        ):
            if origin in ("control", "template"):
                counts["n_template"] += 1
            elif origin == "document":
                counts["n_documents"] += 1
            elif origin == "tools" or ".tool_calls" in self.owners[owner]:
                counts["n_tools"] += 1
            else:
                role = self.roles[msg] if 0 <= msg < len(self.roles) else "user"
                counts[_ROLE_PART.get(role, "n_user")] += 1
        return counts

    def to_record(self, sample_id: str) -> Any:
        """A :class:`tokenpact.batch.SequenceRecord` supervising ``assistant_mask``."""
        from ..batch import SequenceRecord

        return SequenceRecord(
            sample_id,
            np.asarray(self.input_ids, dtype=np.int64),
            special_tokens_mask=np.asarray(self.special_tokens_mask, dtype=bool),
            token_owners=np.asarray(self.origin),
            target_supervision=np.asarray(self.assistant_mask, dtype=bool),
        )

    def to_encoding(self) -> Encoding:
        """This conversation as an :class:`~tokenpact.Encoding` whose provenance holds both
        the tokenizer hash and the template hash.

        Origins keep the conversation's labels (``control``, ``template``, ``content``,
        ``document``, ``tools``); control tokens have ``sequence_ids`` ``None``; offsets are
        codepoints of the rendered ``text`` (empty when the formatter produced no text).
        """
        from ..encoding import Encoding, EncodingProvenance

        tok = self._require_tokenizer("to_encoding")
        ids = list(self.input_ids)
        spell = getattr(tok, "id_to_token", None)
        tokens = [spell(i) or "" for i in ids] if callable(spell) else self.pieces()
        return Encoding(
            ids=ids,
            tokens=tokens,
            offsets=self.offsets,
            coordinate="raw_codepoints",
            special_tokens_mask=list(self.special_tokens_mask),
            origins=list(self.origin),
            attention_mask=[1] * len(ids),
            type_ids=[0] * len(ids),
            sequence_ids=[None if o == "control" else 0 for o in self.origin],
            original_length=0 if self.text is None else len(self.text),
            provenance=EncodingProvenance(self.tokenizer_hash, self.template_hash),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every aligned vector and the identities."""
        return {
            "input_ids": list(self.input_ids),
            "special_tokens_mask": list(self.special_tokens_mask),
            "origin": list(self.origin),
            "message_index": list(self.message_index),
            "owner_index": list(self.owner_index),
            "owners": list(self.owners),
            "assistant_mask": list(self.assistant_mask),
            "prompt_boundary": self.prompt_boundary,
            "stop_policy": self.stop_policy.to_json(),
            "tokenizer_hash": self.tokenizer_hash,
            "template_hash": self.template_hash,
            "mode": self.mode,
        }

    # ------------------------------------------------------------------ audit
    def _require_tokenizer(self, what: str) -> Tokenizer:
        if self.tokenizer is None:
            raise ConversationError(f"{what} needs the tokenizer; build the conversation with one")
        return self.tokenizer

    def problems(self) -> list[str]:
        """Everything :meth:`validate` objects to (empty when the conversation is sound)."""

        n = len(self.input_ids)
        out: list[str] = []
        for name in ("special_tokens_mask", "origin", "message_index", "owner_index"):
            if len(getattr(self, name)) != n:
                out.append(f"{name} has {len(getattr(self, name))} items but input_ids has {n}")
        if len(self.assistant_mask) != n:
            out.append(f"assistant_mask has {len(self.assistant_mask)} items, input_ids {n}")
        if out:
            return out
        if not 0 <= self.prompt_boundary <= n:
            out.append(f"prompt_boundary {self.prompt_boundary} lies outside 0..{n}")
        for t, (mask, origin) in enumerate(zip(self.special_tokens_mask, self.origin, strict=True)):
            if mask != (origin == "control"):
                out.append(f"token {t}: special_tokens_mask {mask} disagrees with origin {origin}")
                break
        tok = self.tokenizer
        if tok is None:
            return out
        info = facts(tok)
        ids = self.input_ids
        for t, i in enumerate(ids):
            if i in info.control_set and self.origin[t] != "control":
                label = self.owners[self.owner_index[t]] if self.owner_index[t] >= 0 else "?"
                out.append(
                    f"token {t} is control ID {i} ({info.spelling_of.get(i)!r}) but came from "
                    f"{self.origin[t]} ({label}); control IDs must come from trusted insertion"
                )
        out.extend(_boundary_problems(ids, info))
        out.extend(_plain_marker_problems(self, tok, info, MARKER_RE))
        return out

    def validate(self) -> Conversation:
        """Raise ConversationError listing every problem; return ``self`` when sound.

        Checks: aligned vectors; control IDs only from trusted insertion; a single BOS;
        no doubled EOS; the post-processor's markers not doubled (two owners of the same
        boundary); no control marker printed as plain template text.
        """
        found = self.problems()
        if found:
            raise ConversationError(
                "the conversation is malformed:\n  - " + "\n  - ".join(found[:20])
            )
        return self

    @classmethod
    def from_ids(
        cls, tokenizer: Tokenizer, ids: Sequence[int], *, mode: str = "generation"
    ) -> Conversation:
        """Wrap IDs produced elsewhere (another library's chat output) to audit them.

        Provenance is unknown, so every control ID counts as trusted control and every
        other token as template text; :meth:`validate` then checks BOS/EOS ownership and
        control markers printed as plain text.
        """
        from ..contract import template_hash

        info = facts(tokenizer)
        ids = [int(i) for i in ids]
        control = [1 if i in info.control_set else 0 for i in ids]
        stops = tuple(i for i in (info.eos_id,) if i is not None)
        return cls(
            input_ids=ids,
            special_tokens_mask=control,
            origin=["control" if c else "template" for c in control],
            message_index=[-1] * len(ids),
            owner_index=[-1] * len(ids),
            owners=(),
            assistant_mask=[0] * len(ids),
            prompt_boundary=len(ids),
            stop_policy=StopPolicy(len(ids), stops),
            tokenizer_hash=tokenizer.semantic_hash,
            template_hash=template_hash(None),
            mode=mode,
            tokenizer=tokenizer,
        )


def _boundary_problems(ids: list[int], info: TokenizerFacts) -> list[str]:
    out = []
    if info.bos_id is not None:
        where = [t for t, i in enumerate(ids) if i == info.bos_id]
        if len(where) > 1:
            out.append(
                f"BOS ({info.spelling_of.get(info.bos_id)!r}) appears {len(where)} times, at "
                f"{where[:5]}: the template and the post-processor both add it; keep one owner "
                "(render with add_special_tokens=False)"
            )
    if info.eos_id is not None:
        doubled = [t for t in range(1, len(ids)) if ids[t] == ids[t - 1] == info.eos_id]
        if doubled:
            out.append(
                f"EOS ({info.spelling_of.get(info.eos_id)!r}) is doubled at {doubled[:5]}: two "
                "stages close the same sequence; keep one owner of EOS"
            )
    prefix = list(info.post_prefix)
    if prefix and prefix != [info.bos_id] and ids[: 2 * len(prefix)] == prefix * 2:
        spelled = "".join(info.spelling_of.get(i, "?") for i in prefix)
        out.append(
            f"the post-processor's prefix {spelled!r} appears twice at the start: the template "
            "already writes it; render with add_special_tokens=False"
        )
    return out


def _plain_marker_problems(
    conv: Conversation, tok: Tokenizer, info: TokenizerFacts, marker_re: Any
) -> list[str]:
    """Control spellings (or control-looking markers) in template text, as ordinary pieces.
    An ordinary added token is one token, not pieces: it ends a run like a control."""
    out: list[str] = []
    run: list[int] = []
    runs: list[tuple[int, list[int]]] = []
    added = frozenset(tok.added_tokens.values())
    for t, (i, origin) in enumerate(zip(conv.input_ids, conv.origin, strict=True)):
        if origin == "template" and i not in added:
            if not run:
                runs.append((t, run))
            run.append(i)
        elif run:
            run = []
    for start, ids in runs:
        text = tok.decode_bytes(ids).decode("utf-8", errors="replace")
        known = info.find_control_spelling(text)
        if known is not None:
            out.append(
                f"template text at token {start} prints {known!r} as ordinary text, not as "
                f"control ID {tok.special_tokens.get(known, tok.added_tokens.get(known))}: the "
                "model sees plain pieces instead of a boundary; emit the control token"
            )
            continue
        marker = marker_re.search(text)
        if marker is not None:
            out.append(
                f"template text at token {start} prints the control-looking marker "
                f"{marker.group(0)!r}, which this tokenizer has no control token for; the "
                "template and the tokenizer do not belong together"
            )
    return out


# The per-token lists of a rendered conversation, read from its record on first access:
# input_ids alone (an SFT caller reads the IDs and the mask only) or with the kind lists
# (one native call makes the three), the index lists that most callers never read, and
# the assistant mask.
_TOKEN_GROUP = ("input_ids", "special_tokens_mask", "origin")


def _token_lists(record: TokenSource) -> tuple[Any, ...]:
    return record.token_lists()


for _name, _build, _group in (
    ("input_ids", lambda r: r.id_list(), ("input_ids",)),
    ("special_tokens_mask", _token_lists, _TOKEN_GROUP),
    ("origin", _token_lists, _TOKEN_GROUP),
    ("message_index", lambda r: r.index_lists(), ("message_index", "owner_index")),
    ("owner_index", lambda r: r.index_lists(), ("message_index", "owner_index")),
    ("assistant_mask", lambda r: r.mask_list(), ("assistant_mask",)),
):
    setattr(Conversation, _name, _FromRecord(_name, _build, _group))
_FIELDS = tuple(f.name for f in fields(Conversation))


def build(
    *,
    tokenizer: Tokenizer,
    ids: np.ndarray,
    kinds: np.ndarray,
    owner: np.ndarray,
    owners: Sequence[Owner],
    assistant_mask: np.ndarray,
    prompt_boundary: int,
    stop_policy: StopPolicy,
    template_hash: str,
    mode: str,
    roles: tuple[str, ...],
    text: str | None = None,
    byte_offsets: tuple[np.ndarray, np.ndarray] | None = None,
) -> Conversation:
    """Assemble a Conversation from aligned numpy arrays (the grammar formatter's path)."""
    message_of = np.array([o.message_index for o in owners] + [-1], dtype=np.int64)
    if stop_policy.prompt_length != prompt_boundary:
        stop_policy = stop_policy.with_prompt_length(int(prompt_boundary))
    conv = object.__new__(Conversation)
    conv.__dict__.update(  # every field, as __init__ sets them (one update)
        input_ids=ids.tolist(),
        special_tokens_mask=(kinds == CONTROL).view(np.int8).tolist(),
        origin=_KIND_ARRAY[kinds].tolist(),
        message_index=message_of[owner].tolist(),
        owner_index=owner.tolist(),
        owners=tuple([o.label for o in owners]),
        assistant_mask=assistant_mask.astype(np.int8, copy=False).tolist(),
        prompt_boundary=int(prompt_boundary),
        stop_policy=stop_policy,
        tokenizer_hash=tokenizer.semantic_hash,
        template_hash=template_hash,
        mode=mode,
        roles=roles,
        text=text,
        byte_offsets=byte_offsets,
        tokenizer=tokenizer,
    )
    return conv
