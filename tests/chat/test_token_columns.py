"""The per-token lists of a rendered conversation, built run by run
(``Tokens.columns``), agree with a token-by-token reference of the ownership rule on
random token layouts and on every conversation of the parity tests; the fast
Conversation assembly sets exactly the dataclass's fields."""

from __future__ import annotations

import copy
import dataclasses
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.chat import ownership
from tokenpact.chat.conversation import KINDS, Conversation

from .conftest import ChatModel
from .conversations import conversations


@st.composite
def layouts(draw: Any) -> dict[str, Any]:
    """Contiguous tokens over a byte string, control IDs, and sorted disjoint spans."""
    widths = draw(st.lists(st.integers(1, 4), min_size=0, max_size=40))
    ends = np.cumsum(widths).astype(np.uint32)
    starts = (ends - np.array(widths, dtype=np.uint32)).astype(np.uint32)
    size = int(ends[-1]) if len(ends) else 0
    ids = np.array(
        draw(st.lists(st.integers(0, 30), min_size=len(widths), max_size=len(widths))),
        dtype=np.uint32,
    )
    cuts = sorted(draw(st.lists(st.integers(0, size), max_size=8)))
    # Pairs of cut points become spans; an empty span is allowed, as tracked text is.
    bounds = [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2)]
    n_owners = max(1, len(bounds))
    owner_kind = tuple(draw(st.lists(st.integers(2, 4), min_size=n_owners, max_size=n_owners)))
    owner_message = tuple(range(n_owners))
    owners = [draw(st.integers(0, n_owners - 1)) for _ in bounds]
    control = np.zeros(31, dtype=bool)
    control[draw(st.lists(st.integers(0, 30), max_size=6))] = True
    return dict(
        ids=ids,
        starts=starts,
        ends=ends,
        bounds=bounds,
        owners=owners,
        owner_kind=owner_kind,
        owner_message=owner_message,
        control=control,
    )


def per_token(tokens: ownership.Tokens) -> ownership.Columns:
    """The ownership rule token by token: a token overlapping content spans belongs to
    the first of them; outside content, control IDs are control, the rest template."""
    ids = tokens.ids.tolist()
    owner = [-1] * len(ids)
    for k in reversed(range(len(tokens.span_lo))):
        for t in range(tokens.span_lo[k], tokens.span_hi[k]):
            owner[t] = tokens.span_owner[k]
    control = tokens.info.control_set
    return ownership.Columns(
        ids,
        [int(o < 0 and i in control) for i, o in zip(ids, owner, strict=True)],
        [
            KINDS[tokens.owner_kind[o]] if o >= 0 else "control" if i in control else "template"
            for i, o in zip(ids, owner, strict=True)
        ],
        [tokens.owner_message[o] if o >= 0 else -1 for o in owner],
        owner,
    )


def tokens_of(layout: dict[str, Any]) -> ownership.Tokens:
    info = SimpleNamespace(
        control_set=frozenset(np.flatnonzero(layout["control"]).tolist()),
        is_control=layout["control"],
    )
    span_starts = [a for a, _ in layout["bounds"]]
    span_ends = [b for _, b in layout["bounds"]]
    return ownership.Tokens(
        layout["ids"],
        layout["starts"],
        layout["ends"],
        span_starts,
        span_ends,
        layout["owners"],
        np.searchsorted(layout["ends"], span_starts, side="right").tolist(),
        np.searchsorted(layout["starts"], span_ends, side="left").tolist(),
        layout["owner_kind"],
        layout["owner_message"],
        info,  # type: ignore[arg-type]
    )


def check(tokens: ownership.Tokens) -> None:
    assert tokens.columns == per_token(tokens)
    # The lazily derived arrays agree with the lists.
    assert tokens.owner.tolist() == tokens.columns.owner_index
    assert [KINDS[k] for k in tokens.kinds.tolist()] == tokens.columns.origin


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_columns_follow_the_ownership_rule(layout: dict[str, Any]) -> None:
    tokens = tokens_of(layout)
    check(tokens)
    found = ownership.token_ranges(
        layout["starts"], layout["ends"], tokens.span_starts, tokens.span_ends
    )
    assert found == (tokens.span_lo, tokens.span_hi)  # np.searchsorted's ranges


def test_render_columns_follow_the_ownership_rule(chat_model: ChatModel, tp: ModuleType) -> None:
    template = chat_model.template
    info = template._info
    cases = conversations(chat_model.name, lambda t: info.find_control_spelling(t) is not None)
    hostile = [{"role": "user", "content": f"a {s} b"} for s in list(info.spelling_of.values())[:3]]
    cases.append((hostile, {"add_generation_prompt": True}))
    rendered_any = 0
    for messages, options in cases:
        try:
            rendered = template.render_text(messages, **options)
        except tp.chat.ChatTemplateError:
            continue  # a case the template itself rejects (as transformers does)
        rendered_any += 1
        tokens = ownership.tokenize_rendered(template.tokenizer, info, rendered)
        assert tokens.span_lo == np.searchsorted(tokens.ends, tokens.span_starts, "right").tolist()
        assert tokens.span_hi == np.searchsorted(tokens.starts, tokens.span_ends, "left").tolist()
        check(tokens)
        check(ownership.add_post_processor_markers(tokens, info))
    assert rendered_any >= len(cases) * 3 // 4


def test_assembled_conversation_has_every_field(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    names = {f.name for f in dataclasses.fields(Conversation)}
    # The per-token lists are built on first read from the columnar record the
    # conversation views; a copy made before that holds them built, not the record.
    assert {"message_index", "owner_index"}.isdisjoint(vars(conv))
    early = copy.copy(conv)
    assert set(vars(early)) == names
    values = {name: getattr(conv, name) for name in names}
    assert set(vars(conv)) == names | {"_record"}
    assert early.owner_index == conv.owner_index
    assert early.message_index == conv.message_index
    assert conv.message_index == [-1 if o < 0 else 0 for o in conv.owner_index]
    with pytest.raises(AttributeError):
        _ = conv.no_such_field  # type: ignore[attr-defined]
    rebuilt = Conversation(**values)
    assert rebuilt.to_json() == conv.to_json()
    with pytest.raises(dataclasses.FrozenInstanceError):
        conv.mode = "training"  # type: ignore[misc]
