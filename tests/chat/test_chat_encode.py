"""``tokenpact chat encode``: conversations JSONL -> SFT shards bound to the tokenizer and
template, read back by ``open_dataset`` with the supervision mask, end to end as a user
runs it (CLI, then the dataset reader, then packing)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tokenpact.cli.chat_cmd import chat

from .chat_data import model_dir
from .conftest import load_model
from .conversations import WEATHER_TOOL

CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
RECORDS: list[Any] = [
    [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning_content": "A greeting."},
    ],
    {
        "id": "tool-call",
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "content": "rain"},
            {"role": "assistant", "content": "It rains."},
        ],
    },
    {"messages": "not a list"},
]


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sft") / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return path


def run(*args: Any) -> Any:
    return CliRunner().invoke(chat, ["encode", *map(str, args)], catch_exceptions=False)


@pytest.mark.parametrize("fmt", ["parquet", "megatron"])
def test_encode_reads_back_with_the_mask(
    tp: ModuleType, chats: Path, tmp_path: Path, fmt: str
) -> None:
    qwen = load_model("qwen-3", tp)
    directory = model_dir("qwen-3")
    out = tmp_path / "sft"
    result = run("-t", directory, "--conversations", chats, "--out", out, "--format", fmt)
    assert result.exit_code == 1  # the third record does not render: named, nothing written
    assert "messages must be a list" in result.output
    assert not (out / "dataset.json").exists()
    args = ("-t", directory, "--conversations", chats, "--out", out, "--format", fmt)
    result = run(*args, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "skipped 000000000002: MessageContentError" in result.output
    assert "# records            2" in result.output
    ds = tp.data.open_dataset(out, tokenizer=qwen.tok, template_hash=qwen.template.template_hash)
    assert ds.doc_ids == ["000000000000", "tool-call"]
    assert ds.manifest["skipped"][0]["doc_id"] == "000000000002"
    for k, record in enumerate(RECORDS[:2]):
        messages = record if isinstance(record, list) else record["messages"]
        tools = None if isinstance(record, list) else record["tools"]
        conv = qwen.template.render(messages, tools=tools)
        a, b = int(ds.offsets[k]), int(ds.offsets[k + 1])
        assert ds.input_ids[a:b].tolist() == conv.input_ids
        assert ds.assistant_mask is not None and ds.special_tokens_mask is not None
        assert ds.assistant_mask[a:b].astype(int).tolist() == conv.assistant_mask
        assert ds.special_tokens_mask[a:b].astype(int).tolist() == conv.special_tokens_mask
    table = ds.record_table()
    batch = tp.batch.collate_packed(table, pad_id=qwen.tok.token_id("<|endoftext|>"))
    # Pre-shifted labels: a token is a target exactly where the mask supervises it.
    targets = np.asarray(batch.labels) != -100
    assert int(targets.sum()) == int(ds.assistant_mask.sum())
    # A template hash other than the one encoded with is refused.
    with pytest.raises(tp.errors.ContractError, match="re-encode it with the template"):
        tp.data.open_dataset(out, template_hash="sha256:" + "0" * 64)


def test_expand_turns_supervises_each_turn_once(
    tp: ModuleType, chats: Path, tmp_path: Path
) -> None:
    qwen = load_model("qwen-3", tp)
    out = tmp_path / "expanded"
    args = ("-t", model_dir("qwen-3"), "--conversations", chats, "--out", out)
    result = run(*args, "--expand-turns", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    ds = tp.data.open_dataset(out, tokenizer=qwen.tok)
    assert ds.doc_ids == ["000000000000/0000", "tool-call/0000", "tool-call/0001"]
    assert ds.manifest["supervision"]["supervise"] == "final"
    # The tool-call turn, which Qwen 3 rewrites once the answer follows, is supervised in
    # its own example: <think> wrapper, the call and <|im_end|>.
    a, b = int(ds.offsets[1]), int(ds.offsets[2])
    ids = ds.input_ids[a:b][ds.assistant_mask[a:b]].tolist()
    text = qwen.tok.decode(ids)
    assert text.startswith("<think>\n\n</think>\n\n<tool_call>\n") and text.endswith("<|im_end|>")
