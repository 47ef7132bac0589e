"""DeepSeek-V3 tool-call history with ``content: None`` (issue 38, item 7).

The template takes its tool-call branch on ``message['content'] is none``. transformers
5.24 (the pinned peer) drops ``None``-valued message keys before rendering
(``_normalize_chat_messages``), so that branch is never taken and the template fails on
the missing ``content``; tokenpact prepares messages the same way, so it fails the same
way, with a typed ``ChatTemplateError``. Rendering ``None`` differently from the pinned
transformers would break exact parity, so the parity itself is what this pins.
"""

from __future__ import annotations

import json

import pytest

import tokenpact as tp
from tokenpact.chat import ChatTemplateError

try:
    from conformance import peer_data
except ImportError:  # pragma: no cover - imported as tests.chat
    from tests.conformance import peer_data  # type: ignore[no-redef]

CALL = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CONVERSATIONS = [
    [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny"},
    ],
    [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL, CALL]},
        {"role": "tool", "content": "sunny"},
        {"role": "tool", "content": "rain"},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "thanks"},
    ],
]


@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_deepseek_v3_none_content_matches_transformers(messages) -> None:
    transformers = pytest.importorskip("transformers")
    files = peer_data.deepseek_v3_files()
    tok = tp.Tokenizer.load(files.tokenizer_json)
    template = tp.chat.ChatTemplate.from_hf(files.tokenizer_config, tok)
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(files.tokenizer_json))
    hf.chat_template = json.loads(files.tokenizer_config.read_text())["chat_template"]
    with pytest.raises(Exception, match="has no attribute 'content'"):
        hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    with pytest.raises(ChatTemplateError, match="has no attribute 'content'"):
        template.render(messages, mode="generation")
