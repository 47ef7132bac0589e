"""Batches wrap plain messages natively (``NativeChatTemplate.prepare_messages`` behind
``deferred_render.prepare_plain``): the owners, roles and first control spelling equal
what the Python reference (``Tracker`` + ``wrap_messages``) finds, anything not plain is
left to the Python path, and every record of a batch equals ``render`` alone."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import ChatModel
from .test_render_columns import assert_columns_equal
from .test_render_pipeline import assert_same

KEYS = ["content", "content", "name", "reasoning_content", "thinking", "reasoning", "tool_call_id"]
ROLES = ["system", "user", "assistant", "assistant", "tool"]
WORDS = ["Grüße", "東京は雨", "привет", " ", "\n", "🙂 ok", "plain", "x" * 40, ""]


def texts(model: ChatModel) -> st.SearchStrategy[str]:
    """Text with this tokenizer's control spellings, non-ASCII and empty strings."""
    spellings = sorted(model.tok.special_tokens)[:8] or ["<s>"]
    return st.lists(st.sampled_from(WORDS + spellings), max_size=5).map("".join)


def messages(model: ChatModel, plain_only: bool) -> st.SearchStrategy[list[Any]]:
    """Message lists, mostly plain; unless ``plain_only``, some with what is not plain
    (structured content, ints, bad keys and roles, a lone surrogate, tuples)."""
    value: st.SearchStrategy[Any] = st.one_of(st.none(), texts(model))
    role: st.SearchStrategy[Any] = st.sampled_from(ROLES)
    key: st.SearchStrategy[Any] = st.sampled_from(KEYS)
    if not plain_only:
        odd = st.sampled_from([7, ["part"], {"type": "text"}, "a\ud800b", 1.5, True])
        value = st.one_of(value, value, value, odd)
        role = st.one_of(role, role, role, st.sampled_from(["bad role", "", 3, "9x"]))
        key = st.one_of(key, key, key, st.sampled_from(["bad key", "-x", 5]))
    message = st.builds(
        lambda r, extra: {"role": r, **extra},
        role,
        st.dictionaries(key, value, max_size=3),
    )
    if not plain_only:
        message = st.one_of(message, message, message, st.just(("user", "hi")))
    return st.lists(message, min_size=1, max_size=5)


def sft_records(model: ChatModel) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Plain SFT records most templates render: an optional system message, then user and
    assistant turns, with extra keys (reasoning aliases, a name) set to text or None."""
    value = st.one_of(st.none(), texts(model))
    extra = st.dictionaries(st.sampled_from(KEYS[2:]), value, max_size=2)

    def message(role: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.builds(lambda c, e: {"role": role, "content": c, **e}, texts(model), extra)

    turns = st.lists(st.tuples(message("user"), message("assistant")), min_size=1, max_size=3)
    return st.builds(
        lambda system, pairs: system + [m for pair in pairs for m in pair],
        st.lists(message("system"), max_size=1),
        turns,
    )


def python_wrap(template: Any, chat: Any) -> tuple[list[Any], tuple[str, ...], str | None]:
    """Owners, roles and control spelling of the Python reference."""
    from tokenpact.chat.hf_inputs import Tracker, wrap_messages

    info = template._info
    tracker = Tracker(info.find_control_spelling, None, info.matcher.find_first)
    wrapped = wrap_messages(chat, tracker)
    roles = tuple(str(m.get("role", "")) for m in wrapped)
    return tracker.owners, roles, tracker.found_control


def native_wrap(template: Any, chat: Any) -> Any:
    """``prepare_plain`` as ``_render`` calls it for a batch record (None: not plain)."""
    from tokenpact.chat.deferred_render import prepare_plain

    template_, base = template._compiled["default"]
    native = template._native["default"]
    redo = functools.partial(template.render_text, chat)
    info = template._info
    return prepare_plain(native, chat, base.copy(), False, info.matcher, template.limits, redo)


def is_plain(chat: list[Any]) -> bool:
    """What the native wrapping takes: dicts of identifier keys and str/None values."""
    import re

    name = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")
    for m in chat:
        if type(m) is not dict:
            return False
        for k, v in m.items():
            if v is None:
                continue
            if type(k) is not str or not name.fullmatch(k) or type(v) is not str:
                return False
            if k == "role" and not name.fullmatch(v):
                return False
            if any(0xD800 <= ord(c) < 0xE000 for c in v):
                return False
    return True


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_native_wrapping_equals_the_python_reference(chat_model: ChatModel, data: Any) -> None:
    template = chat_model.template
    if template._native["default"] is None or template._info.matcher is None:
        pytest.skip("this template renders with Jinja")
    chat = data.draw(messages(chat_model, plain_only=False))
    got = native_wrap(template, chat)
    if not is_plain(chat):
        assert got is None
        return
    assert got is not None
    owners, roles, control = python_wrap(template, chat)
    assert got.owners == owners
    assert all(type(o) is type(owners[0]) for o in got.owners)
    assert got.roles == roles
    assert got.control_in_input == control


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_batches_of_natively_wrapped_records_equal_render(chat_model: ChatModel, data: Any) -> None:
    """Records (reasoning aliases, None values, empty strings, control spellings) that
    render alone are rendered identically in batches, lists and columns."""
    template = chat_model.template
    records = data.draw(st.lists(sft_records(chat_model), min_size=2, max_size=8))
    serial, ok = [], []
    for record in records:
        try:
            serial.append(template.render(record))
        except Exception:  # noqa: BLE001 - templates reject some role orders
            continue
        ok.append(record)
    if len(ok) < 2:
        return
    assert any(native_wrap(template, r) is not None for r in ok) or (
        template._native["default"] is None or template._info.matcher is None
    )
    assert_same(template.render_batch(ok, threads=2), serial)
    assert_columns_equal(template.render_columns(ok, threads=2), serial)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_native_check_equals_validate_plain(chat_model: ChatModel, data: Any) -> None:
    """``prepare_messages(..., mode)`` reports what ``validate_plain(messages, mode)``
    returns (False without a mode), so a batch skips the Python check only when it
    would pass."""
    from tokenpact.chat.conversation import CONTENT, Owner
    from tokenpact.chat.messages import validate_plain

    template = chat_model.template
    native = template._native["default"]
    info = template._info
    if native is None or info.matcher is None:
        pytest.skip("this template renders with Jinja")
    chat = data.draw(st.one_of(messages(chat_model, plain_only=False), sft_records(chat_model)))
    mode = data.draw(st.sampled_from(["training", "generation", "prefill", "bogus", None]))
    limits = template.limits
    got = native.prepare_messages(
        chat,
        dict(template._compiled["default"][1]),
        Owner,
        CONTENT,
        info.matcher,
        limits.max_loop_iterations,
        limits.max_output_chars,
        mode,
    )
    if got is None:
        assert not is_plain(chat)
        return
    assert got[4] is (mode is not None and validate_plain(chat, mode))


def test_batch_validation_raises_what_render_raises(chat_model: ChatModel) -> None:
    """``render_batch(validate=True)`` checks each record as ``render`` does: plain
    records pass, and the first record out of order raises ``render``'s error."""
    template = chat_model.template
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    bad = [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}]
    assert_same(template.render_batch([good, good], validate=True), [template.render(good)] * 2)
    with pytest.raises(Exception) as alone:
        template.render(bad, validate=True)
    with pytest.raises(type(alone.value)) as batched:
        template.render_batch([good, bad, good], threads=2, validate=True)
    assert str(batched.value) == str(alone.value)
    assert "(conversation 1 of the batch)" in getattr(batched.value, "__notes__", [])
