"""Conversations build ``input_ids``, ``special_tokens_mask`` and ``origin`` on first
read (``render`` and ``render_batch``): the values equal the eagerly built lists of the
reference path, every way they can be read (attribute, ``len``, ``to_json``, pickling,
``dataclasses.replace``, copies), and reading one of them builds all three once."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from types import ModuleType
from typing import Any

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
        if threads == 1:
            assert "input_ids" not in conv.__dict__  # not built yet
        # (threads=2: the calling thread builds lists while the workers encode)
        want = _reference(chat_model, messages)
        for name, values in want.items():
            got = getattr(conv, name)
            assert type(got) is list and got == values, name
        assert all(type(i) is int for i in conv.input_ids)
        assert all(type(s) is int for s in conv.special_tokens_mask)
        assert set(conv.origin) <= {"control", "template", "content", "document", "tools"}
        assert conv.special_tokens_mask == [int(o == "control") for o in conv.origin]


def test_one_read_builds_each_list_once(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi there"}])
    assert not any(name in conv.__dict__ for name in TOKEN_COLUMNS)
    n = len(conv)  # len reads input_ids
    assert "input_ids" in conv.__dict__
    assert conv.origin is conv.origin  # the kind lists: built together, once
    assert all(name in conv.__dict__ for name in TOKEN_COLUMNS)
    ids = conv.input_ids
    assert conv.input_ids is ids and len(ids) == n  # built once, then a plain field


def test_batch_records_build_input_ids_apart_from_the_kinds(deepseek: ChatModel) -> None:
    """A batch record (the fast finish) builds ``input_ids`` alone on first read (what an
    SFT caller reads with the mask); the kind lists come on their own first read, and
    pickles hold every list."""
    import pickle

    records = [
        [{"role": "user", "content": f"q{k} Grüße"}, {"role": "assistant", "content": "a"}]
        for k in range(4)
    ]
    batch = deepseek.template.render_batch(records, threads=1)
    for messages, conv in zip(records, batch, strict=True):
        want = deepseek.template.render(messages)
        assert conv.input_ids == want.input_ids
        assert "input_ids" in conv.__dict__ and "origin" not in conv.__dict__
        assert "special_tokens_mask" not in conv.__dict__
        assert conv.origin == want.origin and conv.special_tokens_mask == want.special_tokens_mask
        assert pickle.loads(pickle.dumps(conv)).to_json() == want.to_json()
    fresh = deepseek.template.render_batch(records, threads=1)[0]
    assert pickle.loads(pickle.dumps(fresh)).origin == batch[0].origin  # built for the pickle


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
    assert "_record" not in state  # the lists, not the columnar record they view
    state.pop("tokenizer")  # the tokenizer field itself does not pickle
    loaded = pickle.loads(pickle.dumps(state))
    for name in ALL_COLUMNS:
        assert loaded[name] == getattr(fresh, name), name


def test_unknown_attribute_still_raises(deepseek: ChatModel) -> None:
    conv = deepseek.template.render([{"role": "user", "content": "Hi"}])
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = conv.nope  # type: ignore[attr-defined]


def test_token_lists_from_kind_codes(tp: ModuleType) -> None:
    from tokenpact.chat.ownership import KINDS, token_lists

    ids = np.array([5, 70000, 3, 9], dtype=np.uint32)
    codes = np.array([0, 1, 2, 4], dtype=np.uint8)
    got = token_lists(ids, codes)
    assert got == ([5, 70000, 3, 9], [1, 0, 0, 0], ["control", "template", "content", "tools"])
    assert all(a is KINDS[c] for a, c in zip(got[2], codes.tolist(), strict=True))


@pytest.mark.parametrize(
    "options",
    [{}, {"add_generation_prompt": True}, {"continue_final_message": True}],
    ids=["training", "generation", "prefill"],
)
def test_batch_fast_finish_equals_render(
    chat_model: ChatModel, options: dict[str, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common record's finish (mask ranges and boundary from the native encoding, no
    Tokens) gives ``render``'s conversation in every mode."""
    from tokenpact.chat import render_core

    fast = 0
    real = render_core.is_plain_record

    def counted(rendered: Any, result: Any, add_special_tokens: bool) -> bool:
        nonlocal fast
        plain = real(rendered, result, add_special_tokens)
        fast += plain
        return plain

    # Counted where the fast finish decides (whether the calling thread then builds the
    # lazy lists early depends on the timing of the chunks).
    monkeypatch.setattr(render_core, "is_plain_record", counted)
    records = _records(chat_model)
    if options.get("add_generation_prompt"):
        records = [r[:-1] if r[-1]["role"] == "assistant" else r for r in records]
        records = [r for r in records if r]
    if options:
        records = [r for r in records if _renders_with(chat_model, r, options)]
    assert len(records) >= 3
    batch = chat_model.template.render_batch(records, threads=2, **options)
    for messages, conv in zip(records, batch, strict=True):
        want = chat_model.template.render(messages, **options)
        assert conv.to_json() == want.to_json()
        assert conv.text == want.text and conv.roles == want.roles
        assert conv.byte_offsets is not None and want.byte_offsets is not None
        assert all(
            np.array_equal(a, b) for a, b in zip(conv.byte_offsets, want.byte_offsets, strict=True)
        )
    assert fast >= len(records) // 2  # most records took the fast finish


def _renders_with(model: ChatModel, messages: object, options: dict[str, bool]) -> bool:
    try:
        model.template.render(messages, **options)
    except ValueError:
        return False
    return True


def test_to_conversations_builds_lists_on_first_read(chat_model: ChatModel) -> None:
    """``RenderedColumns.to_conversations`` (the process path of ``render_batch``) keeps
    views of the columns and builds each list on first read, equal to ``render``."""
    records = _records(chat_model)[:8]
    convs = chat_model.template.render_columns(records, threads=1).to_conversations()
    for messages, conv in zip(records, convs, strict=True):
        assert "input_ids" not in conv.__dict__ and "assistant_mask" not in conv.__dict__
        want = chat_model.template.render(messages)
        assert conv.to_json() == want.to_json()
        assert all(type(i) is int for i in conv.input_ids + conv.assistant_mask)


def test_every_render_finishes_through_the_core(
    deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``render``, ``render_batch`` and ``render_columns`` finish every record through
    the one render core (``render_core.finish``), and the conversations are views of
    its records: no ``__getattr__``, the lists built on first read."""
    from tokenpact.chat import Conversation, render_core

    finished: list[int] = []
    real = render_core.finish
    monkeypatch.setattr(render_core, "finish", lambda *a: finished.append(1) or real(*a))
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]
    template = deepseek.template
    conv = template.render(messages)
    batch = template.render_batch([messages] * 2, threads=1)
    template.render_columns([messages] * 3, threads=1)
    assert len(finished) == 6
    assert "__getattr__" not in vars(Conversation)
    for view in (conv, *batch):
        assert "_record" in vars(view) and "input_ids" not in vars(view)
        assert view.input_ids == conv.input_ids and "input_ids" in vars(view)
