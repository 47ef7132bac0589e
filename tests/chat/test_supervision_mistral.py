"""Supervision on Mistral's chat templates, against transformers.

No Mistral tokenizer of the test data ships a Hugging Face chat template, so the
templates come from mistral-common (a pinned test dependency), whose
``integrations.chat_templates`` generates the Jinja template Mistral publishes for each
tokenizer version: v3 for the Tekken file ``tekken_240718.json`` (Mistral Nemo, what
``convert_tokenizer_to_chat_template`` makes of it) and v7 on the same file (the
template of the v7 Tekken models: content beside tool calls allowed). transformers reads the same
tokenizer as ``tokenizer.json`` (``export_hf``, checked ID for ID by the Tekken
conformance tests) with the template set, and is the oracle of
``test_supervision.expected_mask``: IDs equal ``apply_chat_template(tokenize=True)``,
and the supervised tokens are exactly those after each turn's prompt through its
``</s>``. These templates write no generation prompt and move the system prompt (and the
tool list) to the last user message, so earlier turns are rewritten once a later user
message follows: they are unsupervised and reported, as the prefix rule says.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .conversations import WEATHER_TOOL
from .test_supervision import ANSWERS, THOUGHTS, expected_mask

templates = pytest.importorskip("mistral_common.integrations.chat_templates.chat_templates")
mistral_base = pytest.importorskip("mistral_common.tokens.tokenizers.base")
transformers = pytest.importorskip("transformers")

VERSIONS = ("v3", "v7")
NAMED = {"bos_token": "<s>", "eos_token": "</s>"}


def _tekken_file() -> Path:
    try:
        from conformance import peer_data
    except ImportError:  # pragma: no cover - imported as tests.chat from the repo root
        from tests.conformance import peer_data  # type: ignore[no-redef]
    found = [p for p in peer_data.mistral_tekken_files() if p.name == "tekken_240718.json"]
    if len(found) != 1:
        pytest.fail(f"expected tekken_240718.json among mistral-common's files, found {found}")
    return found[0]


def _source(version: str) -> str:
    """Mistral's template for ``version`` on a Tekken tokenizer (for v3 and
    ``tekken_240718.json`` it is what ``convert_tokenizer_to_chat_template`` returns)."""
    return str(
        templates.generate_chat_template(
            spm=False,
            tokenizer_version=getattr(mistral_base.TokenizerVersion, version),
            image_support=False,
            audio_support=False,
            thinking_support=False,
            default_system_prompt=None,
            plain_thinking_support=False,
            use_special_token_variables=True,
            model_settings_fields=None,
            reasoning_effort_values=None,
            reasoning_effort_default=None,
        )
    )


@pytest.fixture(scope="module")
def tekken(tp: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """The Tekken tokenizer and transformers' tokenizer on its exported tokenizer.json."""
    tok = tp.Tokenizer.load(_tekken_file())
    directory = tmp_path_factory.mktemp("mistral-tekken")
    tok.export_hf(directory / "tokenizer.json")
    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(directory / "tokenizer.json"), **NAMED
    )
    return tok, hf


@pytest.fixture(scope="module", params=VERSIONS)
def mistral(
    request: pytest.FixtureRequest, tp: ModuleType, tekken: tuple[Any, Any]
) -> tuple[Any, Any, Any]:
    import tokenpact.chat  # noqa: F401

    tok, hf = tekken
    source = _source(request.param)
    hf.chat_template = source
    template = tp.chat.ChatTemplate(source, tok, special_tokens=NAMED)
    assert template._native["default"] is not None  # the native engine runs it
    return tok, template, hf


def _call(rng: random.Random, city: str) -> dict[str, Any]:
    call_id = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(9))
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": city}},
    }


def _turn(rng: random.Random, kind: str) -> list[dict[str, Any]]:
    """One exchange ending in an assistant message of ``kind`` (Mistral's shapes: tool
    calls carry 9-character ids, results name them, and a message with tool calls has
    no content; ``tool_content`` breaks that rule, and the template refuses it)."""
    question = {"role": "user", "content": rng.choice(ANSWERS)}
    answer = rng.choice(ANSWERS)
    if kind == "plain":
        return [question, {"role": "assistant", "content": answer}]
    if kind == "reasoning":  # a field this template does not print
        thought = rng.choice(THOUGHTS)
        return [question, {"role": "assistant", "content": answer, "reasoning_content": thought}]
    if kind == "literal_think":
        text = f"<think>\n{rng.choice(THOUGHTS)}\n</think>\n\n{answer}"
        return [question, {"role": "assistant", "content": text}]
    cities = ["Paris"] if kind != "tool_two" else ["Paris", "東京"]
    calls = [_call(rng, c) for c in cities]
    call: dict[str, Any] = {"role": "assistant", "tool_calls": calls}
    if kind == "tool_content":
        call["content"] = "Let me check."
    results = [
        {
            "role": "tool",
            "tool_call_id": c["id"],
            "content": json.dumps({"city": c["function"]["arguments"]["city"], "sky": "rain"}),
        }
        for c in calls
    ]
    return [question, call, *results, {"role": "assistant", "content": answer}]


KINDS = ("plain", "reasoning", "literal_think", "tool_one", "tool_two", "tool_content")


def cases(count: int = 18, seed: int = 0) -> list[tuple[str, list[dict[str, Any]], Any]]:
    """Conversations of one to three exchanges (the last of each kind in turn), some
    with a system prompt, those with tool calls with the tool list."""
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
        tools = [WEATHER_TOOL] if any("tool_calls" in m for m in messages) else None
        out.append((kind, messages, tools))
    return out


def test_mistral_supervision_is_what_the_model_generates(
    mistral: tuple[Any, Any, Any], tp: ModuleType
) -> None:
    tok, template, hf = mistral
    # v3 refuses content beside tool calls; v7 renders both.
    refuses = "cannot have both content and tool calls" in template.source
    compared = refused = 0
    problems: list[str] = []
    for kind, messages, tools in cases():
        found = expected_mask(hf, messages, tools, ["</s>"])
        if found is None:  # transformers refuses it (content beside tool calls): so do we
            assert refuses, kind
            with pytest.raises(ValueError, match="cannot have both content and tool calls"):
                template.render(messages, tools=tools)
            refused += 1
            continue
        ids, mask = found
        conv = template.render(messages, tools=tools)
        compared += 1
        if conv.input_ids != ids:
            problems.append(f"{kind}: IDs differ from transformers")
        elif conv.assistant_mask != mask:
            got = [i for i, b in enumerate(conv.assistant_mask) if b]
            want = [i for i, b in enumerate(mask) if b]
            problems.append(f"{kind}: supervised {got} expected {want}")
        else:
            # The final turn is supervised through its </s>, from the prompt boundary.
            last = max(i for i, b in enumerate(mask) if b)
            assert tok.decode([conv.input_ids[last]], special_token_policy="keep") == "</s>"
            assert conv.prompt_boundary == mask.index(1) or all(
                mask[conv.prompt_boundary : last + 1]
            )
    assert not problems, problems[:5]
    assert compared >= 12 and (refused >= 2 or not refuses)


def test_mistral_tool_call_turn_and_rewritten_history(
    mistral: tuple[Any, Any, Any], tp: ModuleType
) -> None:
    tok, template, _ = mistral
    rng = random.Random(3)
    call = _call(rng, "Paris")
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "rain"},
        {"role": "assistant", "content": "It rains."},
    ]
    conv = template.render(messages, tools=[WEATHER_TOOL])
    pieces = [tok.decode([i], special_token_policy="keep") for i in conv.input_ids]
    supervised = "".join(p for p, b in zip(pieces, conv.assistant_mask, strict=True) if b)
    # The tool call from [TOOL_CALLS] through its </s>, and the answer through its </s>;
    # the first answer is rendered before the system prompt moves: not supervised.
    assert supervised == (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, '
        f'"id": "{call["id"]}"}}]</s>It rains.</s>'
    )
    (report,) = tp.chat.supervision_report(template, [messages], tools=[WEATHER_TOOL])
    assert [(t.message, t.status) for t in report.turns] == [(2, "rewritten")]
    # expand_turns supervises it where it is the final turn.
    first = tp.chat.expand_turns(messages)[0]
    alone = template.render(first, tools=[WEATHER_TOOL], supervise="final")
    pieces = [tok.decode([i], special_token_policy="keep") for i in alone.input_ids]
    assert "".join(p for p, b in zip(pieces, alone.assistant_mask, strict=True) if b) == (
        "Hello.</s>"
    )
    batch = template.render_columns([messages], tools=[WEATHER_TOOL], threads=1)
    assert batch[0].assistant_mask.tolist() == conv.assistant_mask
