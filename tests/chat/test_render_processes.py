"""``render_batch`` and ``render_columns`` with ``executor="processes"``: forked workers render
whole chunks (Jinja included); every record equals ``render`` of it, in every mode and
on every chat model the tests load; errors are the serial loop's, naming the record; a
dead worker is replaced and its chunks rendered again; the pool is reused per template."""

from __future__ import annotations

import os
import signal
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import ChatModel
from .test_render_columns import _render, assert_columns_equal, assert_named
from .test_render_pipeline import assert_same, hostile_records

pytestmark = pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(),
    reason="executor='processes' needs fork",
)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Any:
    from tokenpact.chat import process_render

    def set_chunks(records: int) -> None:
        monkeypatch.setattr(process_render, "_MAX_CHUNK", records)

    return set_chunks


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("chunk", [1, 4, 32])
def test_processes_equal_render_on_hostile_multilingual_records(
    chat_model: ChatModel, small_chunks: Any, threads: int, chunk: int
) -> None:
    small_chunks(chunk)
    template = chat_model.template
    records = hostile_records(chat_model, 23, seed=chunk + threads)
    serial = [template.render(m) for m in records]
    assert_same(template.render_batch(records, threads=threads, executor="processes"), serial)
    columns = template.render_columns(records, threads=threads, executor="processes")
    assert columns.mode == "training" and columns.template_hash == template.template_hash
    assert columns.tokenizer is template.tokenizer
    assert columns.input_ids.flags.writeable and columns.origin.flags.writeable
    assert_columns_equal(columns, serial)


def test_processes_equal_render_in_every_mode(deepseek: ChatModel, small_chunks: Any) -> None:
    """Generation and prefill, post-processor markers, per-record tools and documents."""
    small_chunks(3)
    template = deepseek.template
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    records: list[Any] = [
        m if k % 3 else {"messages": m, "tools": tools}
        for k, m in enumerate(hostile_records(deepseek, 14, seed=5))
    ]
    for options in (
        {"add_generation_prompt": True},
        {"add_special_tokens": True},
        {"continue_final_message": True},
        {"validate": True},
        {},
    ):
        serial = [_render(template, r, options) for r in records]
        batch = template.render_batch(records, threads=2, executor="processes", **options)
        assert_same(batch, serial)
        columns = template.render_columns(records, threads=2, executor="processes", **options)
        assert_columns_equal(columns, serial)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    count=st.integers(min_value=0, max_value=40),
    seed=st.integers(min_value=0, max_value=10**6),
    chunk=st.integers(min_value=1, max_value=9),
    threads=st.integers(min_value=1, max_value=3),
    generation=st.booleans(),
)
def test_every_batch_path_equals_render(
    chat_model: ChatModel,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    seed: int,
    chunk: int,
    threads: int,
    generation: bool,
) -> None:
    """Property: threads (1 or more), processes or not, lists or columns: the records
    of ``render``, whatever the batch size and chunking."""
    from tokenpact.chat import process_render, render_core

    monkeypatch.setattr(process_render, "_MAX_CHUNK", chunk)
    monkeypatch.setattr(render_core, "_PIPELINE_RECORDS", chunk)
    template = chat_model.template
    records = hostile_records(chat_model, count, seed=seed)
    options = {"add_generation_prompt": generation}
    serial = [template.render(m, **options) for m in records]
    for executor in ("threads", "processes"):
        got = template.render_batch(records, threads=threads, executor=executor, **options)
        assert_same(got, serial)
        columns = template.render_columns(records, threads=threads, executor=executor, **options)
        assert len(columns) == count
        assert_same(columns.to_conversations(), serial)


def test_errors_are_the_serial_loops(
    deepseek: ChatModel, tp: ModuleType, small_chunks: Any
) -> None:
    small_chunks(3)
    template = deepseek.template
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    surrogate = [{"role": "user", "content": "bad \ud800 text"}]
    for where in (0, 2, 3, 10, 14):
        items: list[Any] = [good] * where + [surrogate] + [good] * 2 + [[]] + [good] * 5
        for run in (template.render_batch, template.render_columns):
            with pytest.raises(tp.errors.InvalidInputError) as info:
                run(items, threads=2, executor="processes")
            assert_named(info.value, where)
        items = [good] * where + [[]] + [good] * 2 + [surrogate] + [good] * 5
        with pytest.raises(tp.chat.ChatTemplateError, match="empty conversation") as info:
            template.render_batch(items, threads=3, executor="processes")
        assert_named(info.value, where)
    with pytest.raises(tp.chat.ChatTemplateError, match="conversation 1 must be a list"):
        template.render_columns([good, "hello"], threads=2, executor="processes")
    with pytest.raises(tp.chat.ChatTemplateError, match="threads"):
        template.render_batch([good], threads=0, executor="processes")
    assert template.render_batch([], threads=2, executor="processes") == []
    empty = template.render_columns([], threads=2, executor="processes")
    assert len(empty) == 0 and empty.offsets.tolist() == [0]
    # The pool survived the failing chunks: the next batch is still exact.
    records = hostile_records(deepseek, 9, seed=8)
    serial = [template.render(m) for m in records]
    assert_same(template.render_batch(records, threads=2, executor="processes"), serial)


def test_pool_is_reused_and_a_dead_worker_replaced(deepseek: ChatModel, small_chunks: Any) -> None:
    from tokenpact.chat import process_render

    small_chunks(2)
    template = deepseek.template
    records = hostile_records(deepseek, 12, seed=9)
    serial = [template.render(m) for m in records]
    assert_same(template.render_batch(records, threads=2, executor="processes"), serial)
    pool = process_render.pool_for(template, 1)
    assert process_render.pool_for(template, 1) is pool
    (worker,) = pool.processes
    before = pool.child_records
    assert_same(template.render_batch(records, threads=2, executor="processes"), serial)
    assert process_render.pool_for(template, 1) is pool and pool.child_records > before
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(timeout=10)
    # Chunks sent to the dead worker are rendered here; the next call forks a new pool.
    assert_same(template.render_batch(records, threads=2, executor="processes"), serial)
    fresh = process_render.pool_for(template, 1)
    assert fresh is not pool and fresh.processes[0].is_alive()
    assert not worker.is_alive()
    assert_columns_equal(template.render_columns(records, threads=2, executor="processes"), serial)
    fresh.close()
    assert not fresh.processes[0].is_alive()


def test_without_fork(deepseek: ChatModel, tp: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from tokenpact.chat import process_render

    monkeypatch.setattr(process_render, "fork_available", lambda: False)
    good = [{"role": "user", "content": "hi"}]
    with pytest.raises(tp.chat.ChatTemplateError, match="fork"):
        deepseek.template.render_batch([good, good], threads=2, executor="processes")
    # One thread needs no worker: the serial loop, on any platform.
    assert deepseek.template.render_batch([good], threads=1, executor="processes")[0].input_ids


class _Unpicklable:
    """A template variable that pickle refuses (a lock inside)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()

    def __str__(self) -> str:
        return "unpicklable"


def test_unpicklable_inputs_render_here(deepseek: ChatModel) -> None:
    """Chunks that cannot be sent to a worker are rendered on the calling thread."""
    from tokenpact.chat import process_render

    template = deepseek.template
    records = hostile_records(deepseek, 10, seed=11)
    value = _Unpicklable()
    serial = [template.render(m, note=value) for m in records]
    sent = process_render.pool_for(template, 1).child_records
    assert_same(template.render_batch(records, threads=2, executor="processes", note=value), serial)
    assert process_render.pool_for(template, 1).child_records == sent  # none went out
    columns = template.render_columns(records, threads=2, executor="processes", note=value)
    assert_columns_equal(columns, serial)


def test_a_changed_template_is_forked_again(deepseek: ChatModel, tp: ModuleType) -> None:
    """The workers hold a copy of the template made at the fork: changing its limits
    afterwards forks a new pool, so the batch still behaves as the serial loop."""
    from tokenpact.chat import process_render

    template = tp.chat.ChatTemplate(
        deepseek.template.source, deepseek.tok, special_tokens=deepseek.template.special_tokens
    )
    records = hostile_records(deepseek, 6, seed=12)
    serial = [template.render(m) for m in records]
    assert_same(template.render_batch(records, threads=2, executor="processes"), serial)
    first = process_render.pool_for(template, 1)
    template.limits = tp.chat.TemplateLimits(max_output_chars=10)
    with pytest.raises(tp.chat.TemplateLimitError):
        template.render(records[0])
    with pytest.raises(tp.chat.TemplateLimitError):
        template.render_batch(records, threads=2, executor="processes")
    assert process_render.pool_for(template, 1) is not first


def test_executor_is_one_parameter_and_processes_its_deprecated_alias(
    deepseek: ChatModel, tp: ModuleType
) -> None:
    """``executor`` picks threads or processes (:mod:`tokenpact.chat.executors`); the
    old ``processes`` flag still works for a release, with a DeprecationWarning."""
    from tokenpact.chat.executors import PROCESSES, THREADS, executor_for

    template = deepseek.template
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    serial = [template.render(good)] * 3
    assert executor_for("threads", 2) is THREADS and executor_for("processes", 2) is PROCESSES
    assert executor_for("processes", 1) is THREADS  # nothing to fork for one thread
    with pytest.warns(DeprecationWarning, match="executor='processes'"):
        assert_same(template.render_batch([good] * 3, threads=2, processes=True), serial)
    with pytest.warns(DeprecationWarning):
        columns = template.render_columns([good] * 3, threads=2, processes=False)
    assert_same(columns.to_conversations(), serial)
    with pytest.raises(tp.chat.ChatTemplateError, match="executor must be one of"):
        template.render_batch([good], executor="ray")
    with (
        pytest.raises(tp.chat.ChatTemplateError, match="contradicts"),
        pytest.warns(DeprecationWarning),
    ):
        template.render_columns([good], executor="processes", processes=False)
