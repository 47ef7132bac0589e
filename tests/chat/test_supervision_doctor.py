"""``tokenpact doctor``'s ``assistant-turn-unsupervised`` detector on saved Qwen 3 batches:
silent with tokenpact's masks, two findings with the content-span mask of old (the
tool-call turn's ``<|im_end|>``; its ``<tool_call>``/``</tool_call>`` and both turns'
``<think>``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from click.testing import CliRunner

from .chat_data import model_dir
from .conftest import load_model
from .conversations import WEATHER_TOOL

CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
CONVERSATIONS: list[list[dict[str, Any]]] = [
    [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
    ],
    [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning_content": "A greeting."},
    ],
]


def _content_span_mask(conv: Any, stops: tuple[int, ...]) -> list[int]:
    """The earlier rule: first to last content token of each assistant message, plus the
    stop token right after it."""
    mask = [0] * len(conv.input_ids)
    for m, role in enumerate(conv.roles):
        if role != "assistant":
            continue
        at = [t for t, i in enumerate(conv.message_index) if i == m]
        if not at:
            continue
        lo, hi = at[0], at[-1] + 1
        if hi < len(mask) and conv.input_ids[hi] in stops:
            hi += 1
        mask[lo:hi] = [1] * (hi - lo)
    return mask


def _save(path: Path, convs: list[Any], masks: list[list[int]]) -> Path:
    ids = np.concatenate([np.asarray(c.input_ids) for c in convs])
    supervised = np.concatenate([np.asarray(m, dtype=bool) for m in masks])
    cu = np.concatenate([[0], np.cumsum([len(c.input_ids) for c in convs])])
    labels = np.full(ids.shape, -100, dtype=np.int64)
    # Pre-shifted: position t predicts token t + 1 (never across a record's end).
    follows = np.ones(ids.shape, dtype=bool)
    follows[cu[1:] - 1] = False
    at = np.flatnonzero(follows[:-1] & supervised[1:])
    labels[at] = ids[at + 1]
    positions = np.concatenate([np.arange(len(c.input_ids)) for c in convs])
    np.savez(
        path,
        input_ids=ids[None, :],
        labels=labels[None, :],
        position_ids=positions[None, :],
        cu_seqlens=cu,
    )
    return path


def test_detector_flags_the_old_mask_only(tp: ModuleType, tmp_path: Path) -> None:
    qwen = load_model("qwen-3", tp)
    convs = [qwen.template.render(m, tools=[WEATHER_TOOL]) for m in CONVERSATIONS]
    stops = convs[0].stop_policy.stop_ids
    good = _save(tmp_path / "good.npz", convs, [c.assistant_mask for c in convs])
    old = _save(tmp_path / "old.npz", convs, [_content_span_mask(c, stops) for c in convs])
    from tokenpact.doctor import diagnose

    directory = model_dir("qwen-3")
    clean = diagnose([directory, good], only=["assistant-turn-unsupervised"])
    assert [f.code for f in clean.findings] == []
    report = diagnose([directory, old], only=["assistant-turn-unsupervised"])
    evidence = [f.evidence for f in report.findings]
    assert len(evidence) == 2, evidence
    assert evidence[0].startswith(
        "1 supervised assistant turn(s) end with an unsupervised end-of-turn token '<|im_end|>'"
    )
    # The tool-call turn's whole empty <think> block and its <tool_call>/</tool_call>; the
    # reasoned turn's <think> (its </think> lies between two content spans, so the old
    # rule supervised it).
    for wrapper in ("'<tool_call>' x1", "'</tool_call>' x1", "'<think>' x2", "'</think>' x1"):
        assert wrapper in evidence[1], evidence[1]
    # Through the CLI, as a user runs it: exit 1 and the finding's code.
    from tokenpact.cli.doctor_cmd import doctor

    result = CliRunner().invoke(doctor, ["--json", str(directory), str(old)])
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.output)["findings"]}
    assert "assistant-turn-unsupervised" in codes
