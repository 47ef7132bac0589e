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
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _native
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


# Conversation fields built on first read (see Conversation.__getattr__): the instance
# dict holds, under each builder's key, a function returning that group's lists in order.
# The token lists come as one group, or (a batch's records, whose SFT callers read
# input_ids and the mask, rarely the kinds) as input_ids alone and the two kind lists.
_INDEX_BUILDER = "_build_index_columns"
_TOKEN_BUILDER = "_build_token_columns"
_IDS_BUILDER = "_build_input_ids"
_KINDS_BUILDER = "_build_kind_columns"
_MASK_BUILDER = "_build_assistant_mask"
_LAZY_GROUPS: dict[str, tuple[str, ...]] = {
    _INDEX_BUILDER: ("message_index", "owner_index"),
    _TOKEN_BUILDER: ("input_ids", "special_tokens_mask", "origin"),
    _IDS_BUILDER: ("input_ids",),
    _KINDS_BUILDER: ("special_tokens_mask", "origin"),
    _MASK_BUILDER: ("assistant_mask",),
}
# Each field's builder keys, in _LAZY_GROUPS order (input_ids has two).
_BUILDERS_OF: dict[str, tuple[str, ...]] = {
    name: tuple(key for key, names in _LAZY_GROUPS.items() if name in names)
    for names in _LAZY_GROUPS.values()
    for name in names
}


class SplitTokenLists(NamedTuple):
    """``assemble``'s ``columns`` built by two functions: ``ids()`` returns
    ``(input_ids,)``, ``kinds()`` returns ``(special_tokens_mask, origin)``."""

    ids: Callable[[], tuple[list[int]]]
    kinds: Callable[[], tuple[list[int], list[str]]]


class Owner(NamedTuple):
    """A source of untrusted text: its kind code, message index (or -1) and label."""

    kind: int
    message_index: int
    label: str


@dataclass(frozen=True, eq=False, repr=False)
class Conversation:
    """A formatted conversation; see the module docstring for the fields."""

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

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes missing from the instance. The per-token lists of a
        # rendered conversation are built on first read, by the builders ``assemble``
        # left: ``message_index`` and ``owner_index`` (most callers never read them), and
        # ``input_ids``, ``special_tokens_mask`` and ``origin`` from the token arrays,
        # and ``assistant_mask`` from its token ranges (so that ``render_batch``'s calling
        # thread, which holds the GIL while native threads encode, spends it neither on
        # lists the caller may never read nor on the collector traversing them).
        key = build = None
        for key in _BUILDERS_OF.get(name, ()):
            build = self.__dict__.get(key)
            if build is not None:
                break
        if build is None:
            raise AttributeError(f"'Conversation' object has no attribute {name!r}")
        # Two threads reading at once both build the same lists; either result stands.
        self.__dict__.update(zip(_LAZY_GROUPS[key], build(), strict=True))  # type: ignore[index]
        self.__dict__.pop(key, None)  # type: ignore[arg-type]
        return self.__dict__[name]

    def __getstate__(self) -> dict[str, Any]:
        # Pickles and copies hold the built lists, not the builders (and their arrays).
        for key, names in _LAZY_GROUPS.items():
            if key in self.__dict__:
                getattr(self, names[0])
        return dict(self.__dict__)

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


def prebuild(conv: Conversation) -> None:
    """Build ``conv``'s lazy ``input_ids`` (with its group) and ``assistant_mask`` now
    (what their first read would do; the other lists stay lazy)."""
    if _TOKEN_BUILDER in conv.__dict__ or _IDS_BUILDER in conv.__dict__:
        conv.input_ids  # noqa: B018 - the read builds the group
    if _MASK_BUILDER in conv.__dict__:
        conv.assistant_mask  # noqa: B018


def token_lists(
    ids: np.ndarray, codes: np.ndarray, engine: Any = None
) -> tuple[list[int], list[int], list[str]]:
    """``input_ids``, ``special_tokens_mask`` and ``origin`` from the token IDs and each
    token's kind code (the origin labels are the shared strings of ``KINDS``); the IDs
    are ``engine``'s cached int objects when it is the native engine."""
    if ids.dtype == np.uint32 and codes.dtype == np.uint8:
        # The native encoder's arrays: one call builds the three lists (a third of the
        # numpy conversions' time; this runs on render_batch's calling thread).
        return _native.chat_token_lists(ids, codes, KINDS, engine)
    return (ids.tolist(), *kind_lists(codes))


def id_list(ids: np.ndarray, engine: Any = None) -> tuple[list[int]]:
    """``input_ids`` from the token IDs (a 1-tuple: a lazily built field group), made of
    ``engine``'s cached int objects when it is the native engine: a reference per ID
    where ``tolist()`` makes an int, and the list's owner later frees it. That list is
    not tracked by the cyclic collector: a list of ints is in no reference cycle, and
    each collection that finds a tracked one young visits every item (``render_batch``
    builds lists while it renders; on 2 threads those visits cost short records a tenth
    of the speedup)."""
    if engine is not None and ids.dtype == np.uint32:
        return (engine.id_array_list(ids),)
    return (ids.tolist(),)


def kind_lists(codes: np.ndarray) -> tuple[list[int], list[str]]:
    """``special_tokens_mask`` and ``origin`` from each token's kind code."""
    return (codes == CONTROL).view(np.int8).tolist(), _KIND_ARRAY[codes].tolist()


def mask_list(length: int, ranges: list[tuple[int, int]]) -> tuple[list[int]]:
    """The assistant mask of ``length`` tokens, 1 on the token ``ranges`` (a 1-tuple: the
    lazily built field group of :func:`assemble`): ``[0] * length`` with ``[1] * (hi -
    lo)`` assigned to each range, made natively so that, like the ID list, the cyclic
    collector does not track it (it holds only ints; see ``id_list``)."""
    return (_native.chat_mask_list(length, ranges),)


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
    return assemble(
        tokenizer=tokenizer,
        columns=(
            ids.tolist(),
            (kinds == CONTROL).view(np.int8).tolist(),
            _KIND_ARRAY[kinds].tolist(),
            message_of[owner].tolist(),
            owner.tolist(),
        ),
        owners=owners,
        assistant_mask=assistant_mask.astype(np.int8, copy=False).tolist(),
        prompt_boundary=prompt_boundary,
        stop_policy=stop_policy,
        template_hash=template_hash,
        mode=mode,
        roles=roles,
        text=text,
        byte_offsets=byte_offsets,
    )


def assemble(
    *,
    tokenizer: Tokenizer | None,
    columns: tuple[list[int], list[int], list[str], list[int], list[int]]
    | tuple[list[int], list[int], list[str]]
    | Callable[[], tuple[list[int], list[int], list[str]]]
    | SplitTokenLists,
    index_columns: Callable[[], tuple[list[int], list[int]]] | None = None,
    owners: Sequence[Owner],
    owner_labels: tuple[str, ...] | None = None,
    assistant_mask: list[int] | Callable[[], tuple[list[int]]],
    prompt_boundary: int,
    stop_policy: StopPolicy,
    template_hash: str,
    mode: str,
    roles: tuple[str, ...],
    text: str | None = None,
    byte_offsets: tuple[np.ndarray, np.ndarray] | None = None,
    tokenizer_hash: str | None = None,
) -> Conversation:
    """Assemble a Conversation from its per-token lists: ``columns`` is ``(input_ids,
    special_tokens_mask, origin, message_index, owner_index)``, or its first three when
    ``index_columns`` builds the other two (on first read of either), or a function
    returning those three (called on first read of any of them: with ``index_columns``
    only), or a :class:`SplitTokenLists` (``input_ids`` and the kind lists built apart);
    ``assistant_mask`` the mask or a function returning it in a 1-tuple (called
    on first read); ``owner_labels``, when given, are the owners' labels (``owners`` is
    then not read)."""
    conv = object.__new__(Conversation)
    if index_columns is None:
        input_ids, special, origin, message_index, owner_index = columns  # type: ignore[misc]
        conv.__dict__.update(message_index=message_index, owner_index=owner_index)
    else:
        conv.__dict__[_INDEX_BUILDER] = index_columns
        if type(columns) is SplitTokenLists:
            conv.__dict__[_IDS_BUILDER] = columns.ids
            conv.__dict__[_KINDS_BUILDER] = columns.kinds
        elif callable(columns):
            conv.__dict__[_TOKEN_BUILDER] = columns
        else:
            input_ids, special, origin = columns  # type: ignore[misc]
    if not callable(columns) and type(columns) is not SplitTokenLists:
        conv.__dict__.update(input_ids=input_ids, special_tokens_mask=special, origin=origin)
    if callable(assistant_mask):
        conv.__dict__[_MASK_BUILDER] = assistant_mask
    else:
        conv.__dict__["assistant_mask"] = assistant_mask
    if stop_policy.prompt_length != prompt_boundary:
        stop_policy = stop_policy.with_prompt_length(int(prompt_boundary))
    # The frozen dataclass's __init__ sets its 16 fields one object.__setattr__ at a time,
    # a measurable share of a short conversation's cost; the values are final here, so
    # they go into the instance dict in one update (same fields, same defaults).
    conv.__dict__.update(
        owners=tuple([o.label for o in owners]) if owner_labels is None else owner_labels,
        prompt_boundary=int(prompt_boundary),
        stop_policy=stop_policy,
        tokenizer_hash=tokenizer_hash if tokenizer is None else tokenizer.semantic_hash,
        template_hash=template_hash,
        mode=mode,
        roles=roles,
        text=text,
        byte_offsets=byte_offsets,
        tokenizer=tokenizer,
    )
    return conv
