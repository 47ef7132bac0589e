"""``validate_plain`` (render's fast check of plain dict messages) never accepts what the
full check (``validate_messages(as_messages(...))``) rejects, and the combined check that
``render(..., validate=True)`` runs raises exactly the full check's errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.chat.messages import MODES, as_messages, validate_messages, validate_plain

ROLES = st.sampled_from(["system", "user", "assistant", "tool", "developer", "", 3, None])
CONTENT = st.sampled_from(
    [None, "", "hi", "héllo 東京", "\ud800 lone", 0, False, [], ["x"], {"a": 1}, "x" * 50]
)
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


TEXTS = st.sampled_from([None, "", "hi", "héllo 東京", "x" * 50])
MUTATIONS = [
    ("role", "user"),
    ("role", "assistant"),
    ("role", "system"),
    ("role", "tool"),
    ("content", "\ud800 lone"),
    ("content", ["part"]),
    ("content", 0),
    ("tool_calls", [CALL]),
    ("tool_calls", []),
    ("tool_call_id", "c1"),
    ("tool_call_id", None),
]


@st.composite
def conversation(draw: Any) -> Any:
    """A well-ordered plain conversation, then at most two random mutations."""
    roles = ["system"] if draw(st.booleans()) else []
    roles += ["user", "assistant"] * 3
    roles = roles[: draw(st.integers(1, len(roles)))]
    items: list[Any] = [{"role": r, "content": draw(TEXTS)} for r in roles]
    for _ in range(draw(st.integers(0, 2))):
        k = draw(st.integers(0, len(items) - 1))
        key, value = draw(st.sampled_from(MUTATIONS))
        items[k][key] = value
    return items if draw(st.integers(0, 8)) else tuple(items)


@st.composite
def anything(draw: Any) -> Any:
    """Arbitrary message lists: any roles, contents, extras and non-dict items."""
    items = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 30)) == 0:
            items.append(draw(st.sampled_from(["text", 3, ("role", "user")])))
            continue
        message: dict[str, Any] = {}
        if draw(st.integers(0, 20)):
            message["role"] = draw(ROLES)
        if draw(st.integers(0, 10)):
            message["content"] = draw(CONTENT)
        extra = draw(st.integers(0, 12))
        if extra == 0:
            message["tool_calls"] = draw(st.sampled_from([None, [], [CALL], "bad"]))
        elif extra == 1:
            message["tool_call_id"] = draw(st.sampled_from([None, "c1", ""]))
        elif extra == 2:
            message["name"] = "someone"
        items.append(message)
    return items


def full(items: Any, mode: str) -> str | None:
    try:
        validate_messages(as_messages(items), mode=mode)
    except Exception as exc:  # noqa: BLE001 - the error is the observable result
        return f"{type(exc).__name__}: {exc}"
    return None


def combined(items: Any, mode: str) -> str | None:
    if validate_plain(items, mode):
        return None
    return full(items, mode)


@settings(max_examples=600, deadline=None)
@given(items=st.one_of(conversation(), anything()), mode=st.sampled_from([*MODES, "bogus"]))
def test_fast_check_agrees_with_the_full_check(items: Any, mode: str) -> None:
    assert combined(items, mode) == full(items, mode)


@pytest.mark.parametrize("mode", MODES)
def test_common_conversations_take_the_fast_path(mode: str) -> None:
    convo = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Zwei plus zwei? 東京"},
        {"role": "assistant", "content": "Vier.", "reasoning_content": "easy"},
        {"role": "user", "content": None},
    ]
    if mode != "generation":
        convo.append({"role": "assistant", "content": "ok"})
    assert validate_plain(convo, mode)
    assert full(convo, mode) is None


@pytest.mark.parametrize(
    "items",
    [
        [{"role": "user", "content": "\ud800"}],  # lone surrogate
        [{"role": "user", "content": ["part"]}],  # content parts
        [{"role": "assistant", "content": "x"}],  # assistant first
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}],
        [{"role": "tool", "content": "r", "tool_call_id": "c1"}],
        [],
        "user: hi",
    ],
)
def test_other_shapes_take_the_full_path(items: Any) -> None:
    assert not validate_plain(items, "generation")
