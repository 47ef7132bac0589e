"""Deterministic benign conversations for parity tests: multi-turn, system prompts, Unicode,
code, whitespace edge cases, empty content and tools (in each template's own dialect)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

try:
    from conformance import peer_data
except ImportError:  # pragma: no cover - imported as tests.chat.conversations
    from tests.conformance import peer_data  # type: ignore[no-redef]

_HANDWRITTEN = (
    "The cat sleeps.",
    "What is 2 + 2?",
    "Write a haiku about autumn leaves.",
    "def add(a, b):\n    return a + b\n",
    "```python\nfor i in range(3):\n\tprint(i)\n```",
    "  leading and trailing spaces  ",
    "line one\r\nline two\r\n",
    "\n\nstarts with newlines",
    "ends with a newline\n",
    "Ünïcödé café naïve résumé",
    "日本語のテキスト、句読点。中文English混合123",
    "مرحبا بالعالم — שלום עולם",
    "👩‍👩‍👧‍👦 family, 👍🏽 and 🇩🇪🇫🇷",
    "e\u0301 combining, \u200bzero width",
    "3.14159265358979 and 1,000,000.00",
    '{"key": [1, 2.5, null, "v"]}',
    '<p class="x">Hi &amp; bye</p> <b>bold</b>',
    "SELECT * FROM t WHERE a = 'b';",
    "Tabs\tand\tmore\ttabs",
    "",
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}


def snippets(is_control: Callable[[str], bool], seed: int = 0) -> list[str]:
    """Handwritten texts plus generated Unicode edge cases, without control spellings."""
    edge = [t[:300] for t in peer_data.edge_case_texts(seed, mixtures=120)]
    return [t for t in (*_HANDWRITTEN, *edge) if not is_control(t)]


def _exchange(rng: random.Random, texts: list[str], model: str) -> list[dict[str, Any]]:
    answer = rng.choice(texts)
    if model == "deepseek-r1-distill-llama-8b" and rng.random() < 0.3:
        answer = "<think>\nLet me think.\n</think>\n\n" + answer
    return [
        {"role": "user", "content": rng.choice(texts)},
        {"role": "assistant", "content": answer},
    ]


def _tool_exchange(rng: random.Random, texts: list[str], model: str) -> list[dict[str, Any]]:
    city = rng.choice(["Paris", "東京", "São Paulo"])
    question = {"role": "user", "content": f"Weather in {city}?"}
    result = json.dumps({"city": city, "temp_c": rng.randint(-5, 30), "sky": "rain"})
    answer = {"role": "assistant", "content": rng.choice(texts) or "It rains."}
    if model == "qwen-2.5":
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": city}},
                }
            ],
        }
        return [question, call, {"role": "tool", "content": result}, answer]
    if model == "glm-4":
        call = {"role": "assistant", "content": f'get_weather\n{{"city": "{city}"}}'}
        return [question, call, {"role": "observation", "content": result}, answer]
    # DeepSeek templates print tool results; their tool-call branch needs content=None,
    # which transformers drops, so both sides must fail the same way on it.
    if rng.random() < 0.2:
        call = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
            ],
        }
        return [question, call, {"role": "tool", "content": result}, answer]
    return [question, answer, {"role": "tool", "content": result}, dict(answer)]


def conversations(
    model: str, is_control: Callable[[str], bool], count: int = 40, seed: int = 0
) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """``(messages, options)`` pairs covering generation, training and prefill modes."""
    rng = random.Random(f"{model}-{seed}")
    texts = snippets(is_control, seed)
    out: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    for k in range(count):
        messages: list[dict[str, Any]] = []
        options: dict[str, Any] = {}
        if rng.random() < 0.6:
            messages.append({"role": "system", "content": rng.choice(texts)})
        tools = k % 4 == 3
        if tools and model == "qwen-2.5":
            options["tools"] = [WEATHER_TOOL]
        if tools and model == "glm-4":
            messages = [{"role": "system", "content": "", "tools": [WEATHER_TOOL]}]
        for _ in range(rng.randint(0, 3)):
            messages += _exchange(rng, texts, model)
        if tools:
            messages += _tool_exchange(rng, texts, model)
        mode = ("generation", "training", "prefill")[k % 3]
        if mode == "generation":
            messages.append({"role": "user", "content": rng.choice(texts)})
            options["add_generation_prompt"] = True
        else:
            if not messages or messages[-1]["role"] != "assistant":
                messages += _exchange(rng, texts, model)
            if mode == "prefill":
                # A partial answer the template prints verbatim (no reasoning to strip).
                messages[-1] = {"role": "assistant", "content": rng.choice(texts[:12]) or "So"}
                options["continue_final_message"] = True
        out.append((messages, options))
    return out
