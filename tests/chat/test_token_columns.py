"""The per-token lists of a rendered conversation: the native ``chat_token_columns``
(src/chat) agrees with the Python reference (``Tokens.columns`` without the native
call) on random token layouts and on every conversation of the parity tests, and the
fast Conversation assembly sets exactly the dataclass's fields."""

from __future__ import annotations

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

native = pytest.mark.skipif(
    ownership._native_columns is None, reason="the native extension predates chat_token_columns"
)


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


def reference(layout: dict[str, Any]) -> tuple[list[int], list[int], ownership.Columns]:
    info = SimpleNamespace(
        control_set=frozenset(np.flatnonzero(layout["control"]).tolist()),
        is_control=layout["control"],
    )
    span_starts = [a for a, _ in layout["bounds"]]
    span_ends = [b for _, b in layout["bounds"]]
    lo = np.searchsorted(layout["ends"], span_starts, side="right").tolist()
    hi = np.searchsorted(layout["starts"], span_ends, side="left").tolist()
    tokens = ownership._tokens(
        layout["ids"],
        layout["starts"],
        layout["ends"],
        lo,
        hi,
        span_starts,
        span_ends,
        layout["owners"],
        layout["owner_kind"],
        layout["owner_message"],
        info,  # type: ignore[arg-type]
    )
    return lo, hi, tokens.columns


@native
@settings(max_examples=300, deadline=None)
@given(layouts())
def test_native_columns_match_the_reference(layout: dict[str, Any]) -> None:
    lo, hi, *columns = ownership._native_columns(  # type: ignore[misc]
        layout["ids"],
        layout["starts"],
        layout["ends"],
        [(a, b, o) for (a, b), o in zip(layout["bounds"], layout["owners"], strict=True)],
        layout["owner_kind"],
        layout["owner_message"],
        layout["control"],
        KINDS,
    )
    ref_lo, ref_hi, ref_columns = reference(layout)
    assert (lo, hi) == (ref_lo, ref_hi)
    assert tuple(columns) == tuple(ref_columns)


@native
def test_native_columns_reject_bad_owners() -> None:
    from tokenpact.errors import InvalidInputError

    ids = np.array([1, 2], dtype=np.uint32)
    offsets = (np.array([0, 1], dtype=np.uint32), np.array([1, 2], dtype=np.uint32))
    control = np.zeros(4, dtype=bool)
    with pytest.raises(InvalidInputError, match="owner 3"):
        ownership._native_columns(ids, *offsets, [(0, 1, 3)], (2,), (0,), control, KINDS)
    with pytest.raises(InvalidInputError, match="kind code 9"):
        ownership._native_columns(ids, *offsets, [(0, 1, 0)], (9,), (0,), control, KINDS)


@native
def test_render_columns_match_the_reference(chat_model: ChatModel, tp: ModuleType) -> None:
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
        fast = ownership.tokenize_rendered(template.tokenizer, info, rendered)
        slow = ownership.tokenize_rendered(template.tokenizer, info, rendered, native=False)
        assert (fast.span_lo, fast.span_hi) == (slow.span_lo, slow.span_hi)
        assert fast.columns == slow.columns
        # The lazily derived arrays agree with the lists.
        assert fast.owner.tolist() == fast.columns.owner_index
        assert [KINDS[k] for k in fast.kinds.tolist()] == fast.columns.origin
    assert rendered_any >= len(cases) * 3 // 4


def test_assembled_conversation_has_every_field(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    names = {f.name for f in dataclasses.fields(Conversation)}
    assert set(vars(conv)) == names
    rebuilt = Conversation(**{name: getattr(conv, name) for name in names})
    assert rebuilt.to_json() == conv.to_json()
    with pytest.raises(dataclasses.FrozenInstanceError):
        conv.mode = "training"  # type: ignore[misc]
