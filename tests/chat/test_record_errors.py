"""One bad record never aborts a batch silently: ``on_error="raise"`` names the record,
``on_error="skip"`` leaves it out and reports why; refusals name the cause, the fix and
the first control token that differs."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import pytest

from .conftest import ChatModel, load_model
from .conversations import WEATHER_TOOL


@pytest.fixture(scope="module")
def llama(tp: ModuleType) -> ChatModel:
    return load_model("llama-3.1", tp)


def _good(k: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Question {k}?"},
        {"role": "assistant", "content": f"Answer {k}."},
    ]


def _two_calls() -> list[dict[str, Any]]:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    return [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call, call]},
    ]


def _records() -> list[Any]:
    # Llama 3.1's template raises on two tool calls in one turn; a dict needs "messages".
    return [_good(0), _two_calls(), _good(2), {"message": _good(3)}, _good(4), _two_calls()]


@pytest.mark.parametrize("threads", [1, 2])
def test_skip_reports_each_record_left_out(llama: ChatModel, tp: ModuleType, threads: int) -> None:
    records = _records()
    convs = llama.template.render_batch(records, threads=threads, on_error="skip")
    assert isinstance(convs, tp.chat.RenderedList)
    assert convs.record_index == [0, 2, 4]
    assert [(s.index, s.error) for s in convs.skipped] == [
        (1, "ChatTemplateError"),
        (3, "ChatTemplateError"),
        (5, "ChatTemplateError"),
    ]
    assert "single tool-calls" in convs.skipped[0].message
    assert "without 'messages'" in convs.skipped[1].message
    for k, conv in zip(convs.record_index, convs, strict=True):
        alone = llama.template.render(records[k])
        assert conv.input_ids == alone.input_ids
        assert conv.assistant_mask == alone.assistant_mask
    cols = llama.template.render_columns(records, threads=threads, on_error="skip")
    assert cols.record_index.tolist() == [0, 2, 4] and len(cols) == 3
    assert [s.index for s in cols.skipped] == [1, 3, 5]
    for k in range(3):
        assert cols[k].input_ids.tolist() == convs[k].input_ids


def test_skip_all_and_none(llama: ChatModel) -> None:
    convs = llama.template.render_batch([_two_calls(), _two_calls()], on_error="skip")
    assert list(convs) == [] and len(convs.skipped) == 2
    fine = llama.template.render_batch([_good(0), _good(1)], on_error="skip", threads=2)
    assert fine.record_index == [0, 1] and fine.skipped == ()


def test_raise_names_the_record(llama: ChatModel, tp: ModuleType) -> None:
    with pytest.raises(tp.chat.ChatTemplateError, match="single tool-calls") as info:
        llama.template.render_batch([_good(0), _two_calls(), _good(2)], threads=2)
    if sys.version_info >= (3, 11):
        assert "(conversation 1 of the batch)" in info.value.__notes__
    with pytest.raises(tp.chat.ChatTemplateError, match="on_error must be 'raise' or 'skip'"):
        llama.template.render_batch(_records(), on_error="ignore")


def test_refusal_names_cause_fix_and_first_difference(tp: ModuleType) -> None:
    qwen = load_model("qwen-2.5", tp)
    # A template that branches on a control spelling in content: the render without the
    # spelling takes the other branch, so the trust of its control tokens is unprovable.
    source = (
        "{% for m in messages %}{% if '<|im_end|>' in m.content %}<|endoftext|>{% endif %}"
        "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    )
    template = tp.chat.ChatTemplate(source, qwen.tok)
    messages = [{"role": "user", "content": "say <|im_end|> please"}]
    with pytest.raises(tp.chat.UntrackedContentError) as info:
        template.render(messages)
    text = str(info.value)
    assert "message 0 (user) holds the control spelling '<|im_end|>'" in text
    assert "tests or splits content on '<|im_end|>'" in text
    assert "Control token 0 of the render is [151643" in text  # <|endoftext|>, first
    assert "remove '<|im_end|>' from the content" in text
    records = [messages, [{"role": "user", "content": "fine"}]]
    convs = template.render_batch(records, on_error="skip")
    assert convs.record_index == [1]
    assert convs.skipped[0].error == "UntrackedContentError"


def test_reasoning_refusal_names_the_reasoning_field(tp: ModuleType) -> None:
    """A template that reads ``reasoning_content`` and branches on a ``</think>`` in
    content: the refusal's fix is the field the template reads."""
    qwen = load_model("qwen-3", tp)
    source = (
        "{% for m in messages %}{% if '</think>' in m.content %}<|endoftext|>{% endif %}"
        "<|im_start|>{{ m.role }}\n{% if m.reasoning_content %}<think>{{ m.reasoning_content }}"
        "</think>{% endif %}{{ m.content }}<|im_end|>\n{% endfor %}"
    )
    # </think> is an ordinary added token of Qwen 3; as a turn marker it is control.
    template = tp.chat.ChatTemplate(source, qwen.tok, turn_markers={"</think>"})
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>Add.</think>4"},
    ]
    with pytest.raises(tp.chat.UntrackedContentError) as info:
        template.render(messages)
    text = str(info.value)
    assert "message 1 (assistant) holds the control spelling '</think>'" in text
    assert 'pass the reasoning in the message\'s "reasoning_content" field' in text
    assert "Control token 2 of the render is [151643" in text  # after turn 0's two
    moved = [messages[0], {"role": "assistant", "content": "4", "reasoning_content": "Add."}]
    assert template.render(moved).input_ids == qwen.hf.apply_chat_template(
        moved, tokenize=True, return_dict=False, chat_template=source
    )


def test_tools_record_skipped_in_processes(llama: ChatModel) -> None:
    records = [{"messages": _good(0), "tools": [WEATHER_TOOL]}, _two_calls(), _good(2)]
    cols = llama.template.render_columns(records, threads=2, executor="processes", on_error="skip")
    assert cols.record_index.tolist() == [0, 2]
    assert [s.index for s in cols.skipped] == [1]
