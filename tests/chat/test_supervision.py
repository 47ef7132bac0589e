"""Supervision is what the model generates: for every assistant turn, the tokens after
the generation prompt through the end-of-turn token, nothing of the prompt.

The oracle is computed with ``transformers`` alone: for assistant message ``i``, the
generation prompt is ``apply_chat_template(messages[:i], add_generation_prompt=True)``
and the turn is ``apply_chat_template(messages[:i + 1])``; where the turn is a prefix of
the full render, the characters after the prompt (or after where prompt and turn part)
through the first end-of-turn spelling are supervised, and each token of transformers'
own tokenization is supervised exactly when it lies in such a stretch. Real templates of
Qwen 3, Qwen 3.5, Qwen 2.5, DeepSeek-V3, DeepSeek-R1-distill-Llama-8B, GLM-4 and Llama
3.1; conversations with plain answers, reasoning (``reasoning_content`` and literal
``<think>`` in content, in the final and in earlier turns), tool calls with and without
content, several tool calls and tool results.
"""

from __future__ import annotations

import json
import random
from types import ModuleType
from typing import Any

import pytest

from .conftest import ChatModel, load_model
from .conversations import WEATHER_TOOL

MODELS = (
    "qwen-3",
    "qwen-3.5",
    "qwen-2.5",
    "deepseek-v3",
    "deepseek-r1-distill-llama-8b",
    "glm-4",
    "llama-3.1",
)
ANSWERS = (
    "The cat sleeps.",
    "Ünïcödé café, 日本語のテキスト。",
    "def add(a, b):\n    return a + b\n",
    "  spaced  ",
    "Sure!",
)
THOUGHTS = ("The user greets me.", "Check the units first.\nThen add.", "短い考え")


@pytest.fixture(scope="module", params=MODELS)
def model(request: pytest.FixtureRequest, tp: ModuleType) -> ChatModel:
    return load_model(request.param, tp)


def _call(rng: random.Random, city: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": city}},
    }


def _turn(rng: random.Random, kind: str) -> list[dict[str, Any]]:
    """One exchange ending in an assistant message of ``kind``."""
    question = {"role": "user", "content": rng.choice(ANSWERS)}
    answer = rng.choice(ANSWERS)
    thought = rng.choice(THOUGHTS)
    if kind == "plain":
        return [question, {"role": "assistant", "content": answer}]
    if kind == "reasoning":
        return [
            question,
            {"role": "assistant", "content": answer, "reasoning_content": thought},
        ]
    if kind == "literal_think":
        text = f"<think>\n{thought}\n</think>\n\n{answer}"
        return [question, {"role": "assistant", "content": text}]
    city = rng.choice(["Paris", "東京"])
    result = {"role": "tool", "content": json.dumps({"city": city, "sky": "rain"})}
    if kind == "tool_empty":
        calls = [_call(rng, city)]
        content = ""
    elif kind == "tool_content":
        calls = [_call(rng, city)]
        content = "Let me check."
    else:  # two calls, two results
        calls = [_call(rng, city), _call(rng, "Oslo")]
        content = "Checking both."
    call = {"role": "assistant", "content": content, "tool_calls": calls}
    results = [result] * len(calls)
    return [question, call, *results, {"role": "assistant", "content": answer}]


KINDS = ("plain", "reasoning", "literal_think", "tool_empty", "tool_content", "tool_two")


def cases(count: int = 24, seed: int = 0) -> list[tuple[str, list[dict[str, Any]]]]:
    """Conversations: one to three exchanges, the last of each kind in turn, earlier
    exchanges of random kinds (so reasoning and tool calls appear in earlier turns)."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        kind = KINDS[k % len(KINDS)]
        messages: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            messages.append({"role": "system", "content": "You are terse."})
        for _ in range(rng.randint(0, 2)):
            messages += _turn(rng, rng.choice(KINDS))
        messages += _turn(rng, kind)
        out.append((kind, messages))
    return out


def _hf_text(hf: Any, messages: list[dict[str, Any]], **options: Any) -> str:
    return str(hf.apply_chat_template(messages, tokenize=False, **options))


def expected_mask(
    hf: Any, messages: list[dict[str, Any]], tools: Any, stops: list[str]
) -> tuple[list[int], list[int]] | None:
    """transformers' IDs of the conversation and the supervision by the prefix
    property (None when transformers does not render it)."""
    try:
        full = _hf_text(hf, messages, tools=tools)
        ids = list(hf.apply_chat_template(messages, tokenize=True, return_dict=False, tools=tools))
    except Exception:  # noqa: BLE001 - the template refuses the conversation
        return None
    encoded = hf(full, add_special_tokens=False, return_offsets_mapping=True)
    assert list(encoded["input_ids"]) == ids
    offsets = encoded["offset_mapping"]
    stretches = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant" or i == 0:
            continue
        prompt = _hf_text(hf, messages[:i], tools=tools, add_generation_prompt=True)
        turn = full if i == len(messages) - 1 else _hf_text(hf, messages[: i + 1], tools=tools)
        if not full.startswith(turn):
            continue  # the template rewrites this turn later: not what was generated
        # A prompt that is not a prefix of the turn (R1-distill's ends with "<think>\n"):
        # supervised from where the two part.
        start = next(
            (k for k, (x, y) in enumerate(zip(prompt, turn, strict=False)) if x != y),
            len(prompt),
        )
        if start >= len(turn):
            continue  # the template wrote nothing for this turn
        generated = turn[start:]
        ends = [generated.find(s) + len(s) for s in stops if s in generated]
        end = start + min(ends) if ends else len(turn)
        if not ends:  # no end-of-turn written in the turn: the stop right after it
            for s in stops:
                if full.startswith(s, end):
                    end += len(s)
                    break
        stretches.append((start, end))
    mask = [
        int(any(a < e and b > s for s, e in stretches) and b > a)
        # a zero-width token (none in these templates) would be unsupervisable
        for a, b in offsets
    ]
    return ids, mask


def _stop_spellings(model: ChatModel) -> list[str]:
    stops = model.template.render([{"role": "user", "content": "a"}]).stop_policy.stop_ids
    return [model.tok.decode([i]) for i in stops]


def test_supervision_is_what_the_model_generates(model: ChatModel) -> None:
    stops = _stop_spellings(model)
    compared = 0
    problems: list[str] = []
    for kind, messages in cases():
        tools = (
            [WEATHER_TOOL]
            if kind.startswith("tool") or any("tool_calls" in m for m in messages)
            else None
        )
        found = expected_mask(model.hf, messages, tools, stops)
        if found is None:
            with pytest.raises(ValueError):
                model.template.render(messages, tools=tools)
            continue
        ids, mask = found
        conv = model.template.render(messages, tools=tools)
        compared += 1
        if conv.input_ids != ids:
            problems.append(f"{kind}: IDs differ from transformers")
            continue
        if conv.assistant_mask != mask:
            got = [i for i, b in enumerate(conv.assistant_mask) if b]
            want = [i for i, b in enumerate(mask) if b]
            problems.append(f"{kind}: supervised {got} expected {want}")
            continue
        # The final turn is supervised through its end-of-turn token, and the boundary is
        # where its generation starts.
        last = max(i for i, b in enumerate(mask) if b) if any(mask) else None
        assert last is not None, kind
        if model.name != "glm-4":  # GLM-4 writes no end-of-turn token after a turn
            assert conv.input_ids[last] in conv.stop_policy.stop_ids, kind
        assert conv.prompt_boundary == mask.index(1) or conv.prompt_boundary > mask.index(1)
        assert all(mask[conv.prompt_boundary :][: last - conv.prompt_boundary + 1])
    assert not problems, problems[:5]
    assert compared >= 12


def test_batch_and_columns_supervise_as_render(model: ChatModel) -> None:
    records = []
    for _kind, messages in cases(count=12, seed=1):
        if expected_mask(model.hf, messages, [WEATHER_TOOL], []) is None:
            continue
        records.append({"messages": messages, "tools": [WEATHER_TOOL]})
    one = [model.template.render(r["messages"], tools=r["tools"]) for r in records]
    batch = model.template.render_batch(records, threads=2)
    cols = model.template.render_columns(records, threads=2)
    for k, conv in enumerate(one):
        assert batch[k].assistant_mask == conv.assistant_mask
        assert batch[k].prompt_boundary == conv.prompt_boundary
        assert cols[k].assistant_mask.tolist() == conv.assistant_mask
        assert int(cols.prompt_boundary[k]) == conv.prompt_boundary


def test_qwen3_wrappers_and_end_of_turn_are_supervised(tp: ModuleType) -> None:
    qwen = load_model("qwen-3", tp)
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [_call(random.Random(0), "Paris")]},
        {"role": "tool", "content": "rain"},
        {"role": "assistant", "content": "It rains.", "reasoning_content": "Easy."},
    ]
    conv = qwen.template.render(messages, tools=[WEATHER_TOOL])
    pieces = [qwen.tok.decode([i]) for i in conv.input_ids]
    supervised = "".join(p for p, b in zip(pieces, conv.assistant_mask, strict=True) if b)
    assert supervised == "<think>\nEasy.\n</think>\n\nIt rains.<|im_end|>"
    assert pieces[conv.prompt_boundary] == "<think>"
    # The tool-call turn is rendered without its <think> block once a later assistant
    # message follows: it is reported, and expand_turns supervises it where it is final.
    (report,) = tp.chat.supervision_report(qwen.template, [messages], tools=[WEATHER_TOOL])
    assert [(t.message, t.status) for t in report.turns] == [(1, "rewritten")]
    first, second = tp.chat.expand_turns(messages)
    call = qwen.template.render(first, tools=[WEATHER_TOOL], supervise="final")
    pieces = [qwen.tok.decode([i]) for i in call.input_ids]
    supervised = "".join(p for p, b in zip(pieces, call.assistant_mask, strict=True) if b)
    assert supervised.startswith('<think>\n\n</think>\n\n<tool_call>\n{"name": "get_weather"')
    assert supervised.endswith("}}\n</tool_call><|im_end|>")
    final = qwen.template.render(second, tools=[WEATHER_TOOL], supervise="final")
    assert final.assistant_mask == conv.assistant_mask


def test_final_only(tp: ModuleType) -> None:
    llama = load_model("llama-3.1", tp)
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye"},
        {"role": "assistant", "content": "Bye."},
    ]
    both = llama.template.render(messages)
    final = llama.template.render(messages, supervise="final")
    assert final.prompt_boundary == both.prompt_boundary
    cut = [b if k >= final.prompt_boundary else 0 for k, b in enumerate(both.assistant_mask)]
    assert final.assistant_mask == cut
    assert 0 < sum(final.assistant_mask) < sum(both.assistant_mask)
    with pytest.raises(tp.chat.ChatTemplateError, match="supervise must be one of"):
        llama.template.render(messages, supervise="all")


def test_prefix_texts_equal_render_text(model: ChatModel) -> None:
    """``prefix_texts`` (the native engine renders every cut in one call, plain messages
    wrapped there, others wrapped in Python) gives ``render_text`` of each history; with
    the Jinja engine alone (native declined) too."""
    checked = 0
    for _kind, messages in cases(count=12, seed=2):
        tools = [WEATHER_TOOL] if any("tool_calls" in m for m in messages) else None
        options = {"tools": tools, "add_generation_prompt": False}
        n = len(messages)
        cuts = [(i, g) for i in range(1, n + 1) for g in (True, False)]
        want = []
        for i, g in cuts:
            try:
                want.append(
                    model.template.render_text(
                        messages[:i], add_generation_prompt=g, tools=tools
                    ).text
                )
            except ValueError:
                want.append(None)
        if None in want:  # some history does not render: prefix_texts raises
            with pytest.raises(ValueError):
                model.template.prefix_texts(messages, options, cuts)
            continue
        assert model.template.prefix_texts(messages, options, cuts) == want
        saved = dict(model.template._native)
        try:
            model.template._native.update(dict.fromkeys(saved))
            assert model.template.prefix_texts(messages, options, cuts) == want
        finally:
            model.template._native.update(saved)
        checked += 1
    assert checked >= 6
