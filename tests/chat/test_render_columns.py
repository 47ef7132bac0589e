"""``ChatTemplate.render_columns``: one set of flat numpy columns whose record ``i`` is
exactly ``render`` of conversation ``i`` (every chat model the tests load, hostile and
multilingual records, training/generation/prefill, post-processor markers, any chunking
and thread count), typed errors naming the record, and the adapter to tokenpact.batch."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import ChatModel
from .conversations import conversations
from .test_render_pipeline import assert_same, hostile_records


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Any:
    from tokenpact.chat import render_core

    def set_chunks(records: int, chars: int = 10**9) -> None:
        monkeypatch.setattr(render_core, "_PIPELINE_RECORDS", records)
        monkeypatch.setattr(render_core, "_PIPELINE_CHARS", chars)

    return set_chunks


def assert_columns_equal(columns: Any, serial: list[Any]) -> None:
    """Every array and per-record fact agrees with the rendered conversations."""
    assert len(columns) == len(serial)
    assert columns.offsets.tolist() == np.cumsum([0] + [len(c) for c in serial]).tolist()
    names = columns.origin_names
    for k, conv in enumerate(serial):
        view = columns[k]
        assert view.input_ids.tolist() == conv.input_ids, k
        assert view.special_tokens_mask.tolist() == conv.special_tokens_mask, k
        assert [names[c] for c in view.origin.tolist()] == conv.origin, k
        assert view.message_index.tolist() == conv.message_index, k
        assert view.owner_index.tolist() == conv.owner_index, k
        assert view.assistant_mask.tolist() == conv.assistant_mask, k
        assert view.prompt_boundary == conv.prompt_boundary, k
        assert columns.owners[k] == conv.owners and columns.roles[k] == conv.roles, k
    assert columns.input_ids.dtype == np.uint32 and columns.offsets.dtype == np.int64
    assert_same(columns.to_conversations(), serial)
    for k, conv in enumerate(serial):
        assert columns.conversation(k).to_json() == conv.to_json(), k


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("chunk", [1, 5, 32])
def test_columns_equal_render_on_hostile_multilingual_records(
    chat_model: ChatModel, small_chunks: Any, threads: int, chunk: int
) -> None:
    small_chunks(chunk)
    template = chat_model.template
    records = hostile_records(chat_model, 23, seed=chunk)
    serial = [template.render(m) for m in records]
    columns = template.render_columns(records, threads=threads)
    assert columns.mode == "training" and columns.template_hash == template.template_hash
    assert_columns_equal(columns, serial)


def test_columns_equal_render_in_every_mode(chat_model: ChatModel, small_chunks: Any) -> None:
    """Generation and prefill records, post-processor markers, per-record tools."""
    small_chunks(32, chars=700)
    template = chat_model.template
    find = template._info.find_control_spelling
    cases = conversations(chat_model.name, lambda t: find(t) is not None, count=45, seed=3)
    for options in (
        {"add_generation_prompt": True},
        {"add_special_tokens": True},
        {"continue_final_message": True},
        {},
    ):
        records = []
        for messages, own in cases:
            if any(k in options for k in own) or set(own) - {"tools", "documents"}:
                continue
            try:
                template.render(messages, **own, **options)
            except ValueError:
                continue  # a template refusing the record (DeepSeek tool calls)
            records.append({"messages": messages, **own} if own else messages)
        assert len(records) >= 5
        serial = [_render(template, r, options) for r in records]
        assert_columns_equal(template.render_columns(records, threads=2, **options), serial)


def _render(template: Any, record: Any, options: dict[str, Any]) -> Any:
    if isinstance(record, dict):
        extra = {k: v for k, v in record.items() if k != "messages"}
        return template.render(record["messages"], **extra, **options)
    return template.render(record, **options)


def test_errors_name_the_record(deepseek: ChatModel, tp: ModuleType, small_chunks: Any) -> None:
    small_chunks(4)
    template = deepseek.template
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    surrogate = [{"role": "user", "content": "bad \ud800 text"}]
    for where in (0, 3, 4, 9):
        items: list[Any] = [good] * where + [surrogate] + [good] * 2 + [[]] + [good] * 5
        with pytest.raises(tp.errors.InvalidInputError) as info:
            template.render_columns(items, threads=2)
        assert_named(info.value, where)
        items = [good] * where + [[]] + [good] * 2 + [surrogate] + [good] * 5
        with pytest.raises(tp.chat.ChatTemplateError, match="empty conversation") as info:
            template.render_columns(items, threads=1)
        assert_named(info.value, where)
    with pytest.raises(tp.chat.ChatTemplateError, match="conversation 1 must be a list"):
        template.render_columns([good, "hello"])
    with pytest.raises(tp.chat.ChatTemplateError, match="threads"):
        template.render_columns([good], threads=0)
    empty = template.render_columns([], threads=2)
    assert len(empty) == 0 and empty.input_ids.shape == (0,) and empty.offsets.tolist() == [0]
    columns = template.render_columns([good])
    with pytest.raises(tp.chat.ChatTemplateError, match="out of range"):
        columns[1]
    assert columns[-1].input_ids.tolist() == template.render(good).input_ids


def assert_named(exc: BaseException, index: int) -> None:
    if hasattr(exc, "add_note"):  # Python 3.11+: the failing record is named in a note
        assert f"conversation {index} of the batch" in "".join(getattr(exc, "__notes__", []))


def test_record_table_packs_and_pads(deepseek: ChatModel, tp: ModuleType) -> None:
    """The columns feed tokenpact.batch: the same records as Conversation.to_record."""
    template = deepseek.template
    records = hostile_records(deepseek, 9, seed=2)
    columns = template.render_columns(records, threads=2)
    table = columns.to_record_table()
    assert len(table) == len(records)
    for k, conv in enumerate(template.render_batch(records)):
        expected = conv.to_record(str(k))
        got = table.record(k)
        assert got.input_ids.tolist() == expected.input_ids.tolist()
        assert got.special_tokens_mask.tolist() == expected.special_tokens_mask.tolist()
        assert got.target_supervision.tolist() == expected.target_supervision.tolist()
        assert got.token_owners.tolist() == expected.token_owners.tolist()
    pad = int(columns.input_ids.max()) + 1
    padded = tp.batch.collate_padded(table, pad_id=pad)
    assert padded.input_ids.shape[0] == len(records)
    capacity = int(columns.lengths.max()) * 2
    plan = tp.batch.first_fit_decreasing(columns.lengths, capacity=capacity)
    first = plan.bins()[0]
    packed = tp.batch.collate_packed(table, indices=first, pad_id=pad)
    expected_ids = np.concatenate([columns[int(i)].input_ids for i in first])
    assert packed.input_ids.reshape(-1)[: len(expected_ids)].tolist() == expected_ids.tolist()


def test_without_the_native_engine(deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the native chunk encoder each record renders and encodes on the calling
    thread (``tokenize_rendered``); the columns still equal ``render``."""
    from tokenpact.chat import _encode, hf_template

    template = deepseek.template
    monkeypatch.setattr(_encode, "chunk_encoder", lambda tok, info: None)
    encoded: list[Any] = []
    real = hf_template.tokenize_rendered
    monkeypatch.setattr(hf_template, "tokenize_rendered", lambda *a: encoded.append(1) or real(*a))
    records = hostile_records(deepseek, 7, seed=4)
    serial = [template.render(m) for m in records]
    assert_columns_equal(template.render_columns(records, threads=2), serial)
    assert encoded  # the path without the native encoder ran


def test_generation_blocks_and_markers(deepseek: ChatModel, tp: ModuleType) -> None:
    """Masks from ``{% generation %}`` blocks and post-processor markers take the general
    path; the columns still equal ``render``."""
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
        "{% else %}<｜Assistant｜>{% generation %}{{ m.content }}<｜end▁of▁sentence｜>"
        "{% endgeneration %}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<｜Assistant｜>{% endif %}"
    )
    template = tp.chat.ChatTemplate(
        source, deepseek.tok, special_tokens=deepseek.template.special_tokens
    )
    records = [
        [
            {"role": "user", "content": f"{k}+{k}? Grüße 東京"},
            {"role": "assistant", "content": f"{2 * k}, of course."},
            {"role": "user", "content": "And <｜User｜> more?"},
            {"role": "assistant", "content": " 🙂"},
        ][: 2 + 2 * (k % 2)]
        for k in range(9)
    ]
    for options in ({}, {"add_special_tokens": True}):
        serial = [template.render(m, **options) for m in records]
        assert any(any(c.assistant_mask) for c in serial)
        assert_columns_equal(template.render_columns(records, threads=2, **options), serial)
