"""Conversations build ``input_ids``, ``special_tokens_mask`` and ``origin`` on first
read (``render`` and ``render_batch``): the values equal the eagerly built lists of the
reference path, every way they can be read (attribute, ``len``, ``to_json``, pickling,
``dataclasses.replace``, copies), and reading one of them builds all three once."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from types import ModuleType

import numpy as np
import pytest

from .conftest import ChatModel
from .conversations import conversations

TOKEN_COLUMNS = ("input_ids", "special_tokens_mask", "origin")
ALL_COLUMNS = (*TOKEN_COLUMNS, "message_index", "owner_index", "assistant_mask")


def _records(model: ChatModel) -> list[list[dict[str, object]]]:
    find = model.template._info.find_control_spelling
    cases = conversations(model.name, lambda t: find(t) is not None, count=40)
    out = []
    for messages, options in cases:
        if options:
            continue
        try:
            model.template.render(messages)
        except ValueError:
            continue
        out.append(messages)
    return out


def _reference(model: ChatModel, messages: list[dict[str, object]]) -> dict[str, list[object]]:
    """The per-token lists from the Python reference (``tokenize_rendered`` and the
    run-by-run ``Tokens.trusted_columns``), never from the native kind codes."""
    from tokenpact.chat.ownership import tokenize_rendered

    template = model.template
    rendered = template.render_text(messages)
    tokens = tokenize_rendered(template.tokenizer, template._info, rendered)
    assert tokens.codes is None
    ids, special, origin = tokens.trusted_columns()
    message, owner = tokens.index_columns()
    return dict(
        input_ids=ids,
        special_tokens_mask=special,
        origin=origin,
        message_index=message,
        owner_index=owner,
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_lazy_columns_equal_the_reference_lists(chat_model: ChatModel, threads: int) -> None:
    records = _records(chat_model)
    assert len(records) >= 5
    batch = chat_model.template.render_batch(records, threads=threads)
    for messages, conv in zip(records, batch, strict=True):
        assert "input_ids" not in conv.__dict__  # not built yet
        want = _reference(chat_model, messages)
        for name, values in want.items():
            got = getattr(conv, name)
            assert type(got) is list and got == values, name
        assert all(type(i) is int for i in conv.input_ids)
        assert all(type(s) is int for s in conv.special_tokens_mask)
        assert set(conv.origin) <= {"control", "template", "content", "document", "tools"}
        assert conv.special_tokens_mask == [int(o == "control") for o in conv.origin]


def test_one_read_builds_the_three_lists_once(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi there"}])
    assert not any(name in conv.__dict__ for name in TOKEN_COLUMNS)
    n = len(conv)  # len reads input_ids
    assert all(name in conv.__dict__ for name in TOKEN_COLUMNS)
    ids = conv.input_ids
    assert conv.input_ids is ids and len(ids) == n  # built once, then a plain field
    assert "_build_token_columns" not in conv.__dict__


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(copy.copy, id="copy"),
        pytest.param(lambda c: dataclasses.replace(c), id="replace"),
    ],
)
def test_copies_hold_the_built_lists(deepseek: ChatModel, read: object) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Two plus two?"},
        {"role": "assistant", "content": "Four."},
    ]
    fresh = deepseek.template.render(messages)
    other = read(deepseek.template.render(messages))  # type: ignore[operator]
    for name in ALL_COLUMNS:
        assert getattr(other, name) == getattr(fresh, name), name
    assert other.to_json() == fresh.to_json()


def test_pickled_state_holds_the_built_lists(deepseek: ChatModel) -> None:
    messages = [{"role": "user", "content": "Two plus two?"}]
    fresh = deepseek.template.render(messages)
    state = deepseek.template.render(messages).__getstate__()
    assert not any(key.startswith("_build") for key in state)
    state.pop("tokenizer")  # the tokenizer field itself does not pickle
    loaded = pickle.loads(pickle.dumps(state))
    for name in ALL_COLUMNS:
        assert loaded[name] == getattr(fresh, name), name


def test_unknown_attribute_still_raises(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi"}])
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = conv.nope  # type: ignore[attr-defined]


def test_token_lists_from_kind_codes(tp: ModuleType) -> None:
    from tokenpact.chat.conversation import KINDS, token_lists

    ids = np.array([5, 70000, 3, 9], dtype=np.uint32)
    codes = np.array([0, 1, 2, 4], dtype=np.uint8)
    got = token_lists(ids, codes)
    assert got == ([5, 70000, 3, 9], [1, 0, 0, 0], ["control", "template", "content", "tools"])
    assert all(a is KINDS[c] for a, c in zip(got[2], codes.tolist(), strict=True))
