"""``render`` runs the template once per call for the conversation; only input holding a
control spelling is rendered a second time (the fail-closed check of untracked content),
and the supervision rule renders each assistant turn's history (and an earlier turn alone)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .chat_data import model_dir
from .conftest import ChatModel


class _CountedNative:
    """The native engine's template, counting the renders it completes in ``runs``."""

    def __init__(self, inner: Any, runs: list[int]) -> None:
        self.inner, self.runs = inner, runs

    def render(self, *args: Any) -> Any:
        out = self.inner.render(*args)
        if type(out) is tuple:
            self.runs[0] += 1
        return out

    def prepare(self, *args: Any) -> Any:  # a batch's render, run on a worker
        out = self.inner.prepare(*args)
        if type(out) is not str:
            self.runs[0] += 1
        return out

    def prepare_messages(self, *args: Any) -> Any:  # the same, messages wrapped natively
        out = self.inner.prepare_messages(*args)
        if out is not None:
            self.runs[0] += 1
        return out

    def prefix_texts(self, *args: Any) -> Any:  # the supervision rule's histories
        out = self.inner.prefix_texts(*args)
        if type(out) is list:
            self.runs[0] += len(out)
        return out


def count_runs(model: ChatModel, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Template runs of either engine (the native one, or Jinja when it declines)."""
    runs = [0]
    template, _ = model.template._compiled["default"]
    original = template.root_render_func

    def counted(ctx: Any) -> Any:
        runs[0] += 1
        return original(ctx)

    monkeypatch.setattr(template, "root_render_func", counted)
    native = model.template._native["default"]
    if native is not None:
        monkeypatch.setitem(model.template._native, "default", _CountedNative(native, runs))
    return runs


def test_one_template_run_per_render(deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch) -> None:
    deepseek.template._stop_ids()  # the one-time probe of the end-of-turn token
    runs = count_runs(deepseek, monkeypatch)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"},
    ]
    for k in range(1, 6):
        deepseek.template.render(messages[:2], add_generation_prompt=True)
        assert runs[0] == k
    deepseek.template.render_batch([messages[:2]] * 20, threads=2)
    assert runs[0] == 25


def test_supervision_renders_per_assistant_turn(
    deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervision rule renders each assistant turn's history with the generation
    prompt, and a turn that is not the final message alone (to see whether later messages
    rewrite it): one run for the conversation, plus one per turn, plus one per earlier
    turn, and ``supervise="final"`` only the final turn's history."""
    deepseek.template._stop_ids()
    runs = count_runs(deepseek, monkeypatch)
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"},
        {"role": "assistant", "content": "Bye!"},
    ]
    deepseek.template.render(messages)
    assert runs[0] == 1 + 2 + 1
    deepseek.template.render(messages, supervise="final")
    assert runs[0] == 4 + 1 + 1
    deepseek.template.render(messages[:3], add_generation_prompt=True)
    assert runs[0] == 6 + 1 + 2


def test_control_spelling_in_input_renders_twice(
    deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    deepseek.template._stop_ids()
    runs = count_runs(deepseek, monkeypatch)
    conv = deepseek.template.render(
        [{"role": "user", "content": "hi <｜end▁of▁sentence｜> there"}], add_generation_prompt=True
    )
    assert runs[0] == 2
    assert deepseek.tok.eos_id not in [
        i for i, o in zip(conv.input_ids, conv.origin, strict=True) if o != "control"
    ]


def test_a_render_leaves_no_cyclic_garbage(deepseek: ChatModel) -> None:
    """A template with a macro and namespaces (a reference cycle through the Jinja
    context) is freed by reference counts when the render ends, not by the collector."""
    import gc

    from tokenpact.chat import ChatTemplate

    source = (
        "{% set ns = namespace(n=0) %}{% macro show(m) %}<{{ m.role }}>{{ m.content|trim }}"
        "{% if m.bad %}{{ raise_exception('bad') }}{% endif %}{% set ns.n = ns.n + 1 %}"
        "{% endmacro %}{% for m in messages %}{{ show(m) }}"
        "{% endfor %}{{ ns.n }}"
    )
    template = ChatTemplate(source, deepseek.tok)
    template._native["default"] = None  # the Jinja engine's context is the cycle
    messages = [{"role": "user", "content": " Hi "}, {"role": "assistant", "content": "Yo"}]
    template.render(messages)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(5):
            assert template.render(messages).text == "<user>Hi<assistant>Yo2"
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs /proc (Linux)")
def test_render_starts_no_threads() -> None:
    """``render`` encodes on the calling thread: in a fresh process, rendering starts no
    OS thread (no worker pool is created for a single text)."""
    code = textwrap.dedent(
        """
        import re, sys
        import tokenpact as tp
        def threads():
            text = open("/proc/self/status").read()
            return int(re.search(r"Threads:\\s+(\\d+)", text).group(1))
        tok = tp.Tokenizer.load(sys.argv[1])
        template = tp.chat.ChatTemplate.from_hf(sys.argv[1], tok)
        before = threads()
        for _ in range(3):
            template.render([{"role": "user", "content": "Grüße, hi"}], add_generation_prompt=True)
        print(before, threads())
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(model_dir("deepseek-v3"))],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    before, after = map(int, out.stdout.split())
    assert after == before
