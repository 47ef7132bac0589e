"""One owner for BOS/EOS, and Conversation.validate() catching seed 0x10's bugs:
double BOS/EOS, control markers printed as plain text, control IDs from content."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest

from .conftest import ChatModel, hf_ids

HELLO = [{"role": "user", "content": "hi"}]


def test_glm_template_owns_its_prefix(glm: ChatModel, tp: ModuleType) -> None:
    """GLM-4's template writes [gMASK]<sop> and so does its post-processor."""
    plain = glm.template.render(HELLO, add_generation_prompt=True)
    assert plain.input_ids == hf_ids(glm.hf, HELLO, add_generation_prompt=True)
    # Asking for the post-processor too must not add the prefix a second time.
    owned = glm.template.render(HELLO, add_generation_prompt=True, add_special_tokens=True)
    assert owned.input_ids == plain.input_ids
    owned.validate()
    # The documented mistake: tokenizing the rendered text with special tokens again.
    text = glm.hf.apply_chat_template(HELLO, tokenize=False, add_generation_prompt=True)
    doubled = list(glm.hf(text)["input_ids"])
    assert doubled[:4] == doubled[:2] * 2
    problems = tp.chat.Conversation.from_ids(glm.tok, doubled).problems()
    assert any("appears twice at the start" in p for p in problems), problems


def test_post_processor_markers_are_added_when_missing(glm: ChatModel, tp: ModuleType) -> None:
    template = tp.chat.ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}", glm.tok)
    conv = template.render(HELLO, add_special_tokens=True)
    gmask, sop = glm.tok.special_tokens["[gMASK]"], glm.tok.special_tokens["<sop>"]
    assert conv.input_ids[:2] == [gmask, sop]
    assert conv.origin[:2] == ["control", "control"] and conv.offsets[:2] == [(0, 0), (0, 0)]
    conv.validate()


def test_double_bos_and_double_eos(deepseek: ChatModel, tp: ModuleType) -> None:
    conv = deepseek.template.render(HELLO, add_generation_prompt=True)
    bos, eos = deepseek.tok.bos_id, deepseek.tok.eos_id
    twice = tp.chat.Conversation.from_ids(deepseek.tok, [bos, *conv.input_ids])
    with pytest.raises(tp.chat.ConversationError, match="BOS .* appears 2 times"):
        twice.validate()
    closed = tp.chat.Conversation.from_ids(deepseek.tok, [*conv.input_ids, 6366, eos, eos])
    with pytest.raises(tp.chat.ConversationError, match="EOS .* is doubled"):
        closed.validate()
    tp.chat.Conversation.from_ids(deepseek.tok, conv.input_ids).validate()


def test_control_marker_printed_as_plain_text(deepseek: ChatModel, tp: ModuleType) -> None:
    tok = deepseek.tok
    # A known control spelling that went through plain encode() (no trusted insertion).
    plain = tok.encode("<｜begin▁of▁sentence｜><｜User｜>hi")
    problems = tp.chat.Conversation.from_ids(tok, plain).problems()
    assert any("prints '<｜begin▁of▁sentence｜>' as ordinary text" in p for p in problems)
    # A template written for another tokenizer: its marker is no control token here.
    foreign = tp.chat.ChatTemplate(
        "{{ bos_token }}<|im_start|>user\n{{ messages[0].content }}<|im_end|>",
        tok,
        special_tokens=deepseek.template.special_tokens,
    )
    conv = foreign.render(HELLO)
    with pytest.raises(tp.chat.ConversationError, match="'<\\|im_start\\|>'.*do not belong"):
        conv.validate()


def test_control_id_with_content_origin_is_reported(deepseek: ChatModel, tp: ModuleType) -> None:
    conv = deepseek.template.render(HELLO, add_generation_prompt=True)
    t = conv.origin.index("content")
    ids = list(conv.input_ids)
    ids[t] = deepseek.tok.eos_id
    forged = dataclasses.replace(conv, input_ids=ids)
    with pytest.raises(tp.chat.ConversationError, match="came from content"):
        forged.validate()
    misaligned = dataclasses.replace(conv, origin=conv.origin[:-1])
    with pytest.raises(tp.chat.ConversationError, match="origin has"):
        misaligned.validate()


def test_conversation_to_record_and_json(deepseek: ChatModel) -> None:
    messages = [*HELLO, {"role": "assistant", "content": "hello"}]
    conv = deepseek.template.render(messages)
    record = conv.to_record("sample-0")
    assert record.input_ids.tolist() == conv.input_ids
    assert record.target_supervision.tolist() == [bool(m) for m in conv.assistant_mask]
    data = conv.to_json()
    assert data["stop_policy"]["single_token_stop_ids"] == [deepseek.tok.eos_id]
    assert data["stop_policy"]["include_prompt"] is False
    assert len(data["origin"]) == len(data["input_ids"]) == len(data["message_index"])


def test_truncation_with_a_real_template(deepseek: ChatModel, tp: ModuleType) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer briefly."}]
    for k in range(3):
        messages += [
            {"role": "user", "content": f"Question {k}: " + "why? " * 20},
            {"role": "assistant", "content": f"Answer {k}: " + "because. " * 20},
        ]
    messages.append({"role": "user", "content": "Last question?"})
    full = deepseek.template.render(messages, add_generation_prompt=True)
    limit = len(full) - 50
    result = tp.chat.truncate(deepseek.template, messages, limit=limit, mode="generation")
    assert len(result.conversation) <= limit
    assert result.kept_indices == (0, 3, 4, 5, 6, 7)
    assert result.dropped[0].roles == ("user", "assistant")
    kept = [messages[i] for i in result.kept_indices]
    assert result.conversation.input_ids == hf_ids(deepseek.hf, kept, add_generation_prompt=True)
    with pytest.raises(tp.chat.FixedGrammarExceedsContext) as err:
        tp.chat.truncate(deepseek.template, messages, limit=8, mode="generation")
    assert isinstance(err.value, tp.TokenpactError) and err.value.fixed_length > 8


def test_accounting_maps_template_roles(glm: ChatModel) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "get_weather"},
        {"role": "observation", "content": "18C"},
    ]
    conv = glm.template.render(messages, add_generation_prompt=True)
    parts = conv.accounting()
    assert parts["n_tools"] == len(glm.tok.encode("18C")) and parts["n_system"] > 0
    assert sum(v for k, v in parts.items() if k != "n_total") == parts["n_total"] == len(conv)
    assert repr(conv).startswith("Conversation(mode='generation', tokens=")


def test_public_encode_path_agrees_with_the_fast_path(deepseek: ChatModel) -> None:
    """chat/_encode.py calls the engine directly; Tokenizer.encode_structured is its fallback."""
    from tokenpact.chat import _encode

    eos = "<｜end▁of▁sentence｜>"
    text = f"<｜User｜>héllo <｜Assistant｜>{eos} wörld<｜Assistant｜>{eos}"
    spans = [(8, 49)]
    info = _encode.facts(deepseek.tok)  # no turn markers: <｜Assistant｜> is ordinary
    fast = _encode.encode_untrusted_spans(deepseek.tok, text, spans, info)
    slow = _encode.encode_untrusted_spans(
        deepseek.tok, text, spans, dataclasses.replace(info, matcher=None)
    )
    assert fast.ids.tolist() == slow.ids.tolist()
    assert fast.starts.tolist() == slow.starts.tolist() and fast.ends.tolist() == slow.ends.tolist()
    assert fast.ids.tolist().count(128804) == 2  # an ordinary added token matches in spans
    assert fast.ids.tolist().count(1) == 1  # the control only outside the span
