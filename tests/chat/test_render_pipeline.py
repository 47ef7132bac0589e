"""``render_batch``'s pipeline (Jinja here, native chunk encoding on worker threads):
every conversation identical to ``render`` alone, whatever the chunk boundaries; the
trust rule on hostile content; errors of the first failing conversation in input order;
and the native chunk encoder equal to the per-record encode it replaces."""

from __future__ import annotations

import functools
import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import ChatModel
from .conversations import conversations

FIELDS = (
    "input_ids",
    "special_tokens_mask",
    "origin",
    "message_index",
    "owner_index",
    "assistant_mask",
    "owners",
    "prompt_boundary",
    "roles",
    "text",
    "mode",
    "template_hash",
)


def assert_same(batch: list[Any], serial: list[Any]) -> None:
    assert len(batch) == len(serial)
    for k, (a, b) in enumerate(zip(batch, serial, strict=True)):
        for field in FIELDS:
            assert getattr(a, field) == getattr(b, field), (k, field)
        assert a.stop_policy == b.stop_policy, k
        for x, y in zip(a.byte_offsets, b.byte_offsets, strict=True):
            assert np.array_equal(x, y), k


def hostile_records(model: ChatModel, count: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    """SFT records whose content holds this tokenizer's control spellings and
    multilingual text (non-ASCII offsets), mixed with benign ones."""
    rng = random.Random(seed)
    spellings = sorted(model.tok.special_tokens)[:12] or ["<s>"]
    words = ["Grüße", "東京は雨", "привет", "naïve café", "🙂 ok", "plain text", "x" * 50]
    records = []
    for k in range(count):

        def text(hostile: bool = k % 3 == 0) -> str:
            parts = rng.choices(words, k=rng.randint(1, 4))
            if hostile:
                parts.insert(rng.randrange(len(parts) + 1), rng.choice(spellings))
            return " ".join(parts)

        messages = [{"role": "system", "content": text()}] if k % 2 else []
        for _ in range(rng.randint(1, 3)):
            messages += [
                {"role": "user", "content": text()},
                {"role": "assistant", "content": text()},
            ]
        records.append(messages)
    return records


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Any:
    from tokenpact.chat import render_core

    def set_chunks(records: int, chars: int = 10**9) -> None:
        monkeypatch.setattr(render_core, "_PIPELINE_RECORDS", records)
        monkeypatch.setattr(render_core, "_PIPELINE_CHARS", chars)

    return set_chunks


def test_chunks_grow_from_small_and_halve_at_the_end() -> None:
    """The first chunk is small (the workers start early), chunks double up to the
    pipeline sizes, and near the end each takes at most half of what is left."""
    from tokenpact.chat import render_core
    from tokenpact.chat.render_core import chunk_limits

    records = [chunk_limits(k, 1000)[0] for k in range(7)]
    assert records == [4, 8, 16, 32, 32, 32, 32]
    chars = [chunk_limits(k, 1000)[1] for k in range(5)]
    assert chars == [8_000, 16_000, 32_000, 64_000, 64_000]
    assert [chunk_limits(9, left)[0] for left in (64, 40, 20, 9, 3, 1)] == [32, 20, 10, 4, 4, 4]
    # Taking each chunk in turn covers every record exactly once.
    left, number, sizes = 300, 0, []
    while left:
        size = min(left, chunk_limits(number, left)[0])
        sizes.append(size)
        left -= size
        number += 1
    assert sum(sizes) == 300 and sizes[0] == render_core._FIRST_RECORDS and sizes[-1] <= 4


def test_native_pipeline_is_used(chat_model: ChatModel) -> None:
    from tokenpact.chat import _encode

    template = chat_model.template
    assert _encode.chunk_encoder(template.tokenizer, template._info) is not None


@pytest.mark.parametrize(
    "options", [{}, {"add_generation_prompt": True}, {"add_special_tokens": True}]
)
def test_render_native_encode_equals_the_python_path(
    chat_model: ChatModel, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """``render`` encodes through the native chunk encoder (one text, calling thread);
    the Python path (``tokenize_rendered``, owned runs, ``trusted_columns``) is its
    reference, hostile and multilingual content included."""
    from tokenpact.chat import _encode

    template = chat_model.template
    assert _encode.chunk_encoder(template.tokenizer, template._info) is not None
    records = hostile_records(chat_model, 30, seed=5)
    native = [template.render(m, **options) for m in records]
    monkeypatch.setattr(_encode, "chunk_encoder", lambda tok, info: None)
    assert_same(native, [template.render(m, **options) for m in records])


def test_render_lone_surrogate_is_a_typed_error(deepseek: ChatModel, tp: ModuleType) -> None:
    """The native encoder refuses a text with a lone surrogate (in a template kwarg,
    which is not checked as content); render falls back to the path that names the fix."""
    with pytest.raises(tp.errors.InvalidInputError, match="lone surrogate"):
        deepseek.template.render([{"role": "user", "content": "hi"}], bos_token="\ud800")


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("chunk", [1, 3, 7, 32])
def test_batch_equals_render_at_any_chunking(
    chat_model: ChatModel, small_chunks: Any, threads: int, chunk: int
) -> None:
    small_chunks(chunk)
    template = chat_model.template
    records = hostile_records(chat_model, 23)
    serial = [template.render(m) for m in records]
    assert any(c.text is not None and "content" in c.origin for c in serial)
    assert_same(template.render_batch(records, threads=threads), serial)


def test_batch_equals_render_with_options(chat_model: ChatModel, small_chunks: Any) -> None:
    """Generation, training and prefill records with their options, chunks cut by size."""
    small_chunks(32, chars=700)
    template = chat_model.template
    find = template._info.find_control_spelling
    cases = conversations(chat_model.name, lambda t: find(t) is not None, count=45, seed=3)
    for options in ({"add_generation_prompt": True}, {"add_special_tokens": True}):
        records = []
        for messages, own in cases:
            opts = {**own, **options}
            if "continue_final_message" in opts and "add_generation_prompt" in opts:
                continue
            if opts != options:
                continue
            try:
                template.render(messages, **opts)
            except ValueError:
                continue  # a template refusing the record (DeepSeek tool calls)
            records.append(messages)
        assert len(records) >= 5
        serial = [template.render(m, **options) for m in records]
        assert_same(template.render_batch(records, threads=2, **options), serial)


def test_trust_rule_holds_in_batches(chat_model: ChatModel, small_chunks: Any) -> None:
    """No control ID from content: a spelling inside a message stays text."""
    small_chunks(4)
    template = chat_model.template
    control = template._info.control_set
    records = hostile_records(chat_model, 12, seed=5)
    for conv in template.render_batch(records, threads=2):
        for i, origin in zip(conv.input_ids, conv.origin, strict=True):
            if origin in ("content", "document", "tools"):
                pass  # any ID may be content text, but it is never marked special
            elif origin == "control":
                assert i in control
        assert conv.special_tokens_mask == [int(o == "control") for o in conv.origin]
        conv.validate()


def test_errors_come_in_input_order(deepseek: ChatModel, tp: ModuleType, small_chunks: Any) -> None:
    """A render error after an encoding error (and the reverse) across chunk boundaries."""
    small_chunks(4)
    template = deepseek.template
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    surrogate = [{"role": "user", "content": "bad \ud800 text"}]
    with pytest.raises(tp.errors.InvalidInputError):
        template.render(surrogate)
    for where in (0, 3, 4, 9):
        items: list[Any] = [good] * where + [surrogate] + [good] * 2 + [[]] + [good] * 5
        with pytest.raises(tp.errors.InvalidInputError):
            template.render_batch(items, threads=2)
        items = [good] * where + [[]] + [good] * 2 + [surrogate] + [good] * 5
        with pytest.raises(tp.chat.ChatTemplateError, match="empty conversation"):
            template.render_batch(items, threads=2)
    # A surrogate in a chunk makes that chunk go record by record; the rest stays exact.
    mixed = [good] * 6
    assert_same(template.render_batch(mixed, threads=2), [template.render(m) for m in mixed])


def test_validate_runs_per_record(deepseek: ChatModel, tp: ModuleType, small_chunks: Any) -> None:
    small_chunks(2)
    bad_order = [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    good = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    with pytest.raises(tp.errors.TokenpactError):
        deepseek.template.render(bad_order, validate=True)
    with pytest.raises(tp.errors.TokenpactError):
        deepseek.template.render_batch([good] * 5 + [bad_order], threads=2, validate=True)


# ---------------------------------------------------------------- the native chunk encoder
# Pieces including a real control spelling, so spans decide what is matched.
TEXT = st.lists(
    st.sampled_from([*"ab <|>_ \n", "é", "東", "🙂", "<｜end▁of▁sentence｜>", "<｜User｜>"]),
    max_size=30,
).map("".join)


def reference(template: Any, text: str, flat: list[int], kinds: list[int]) -> tuple[Any, ...]:
    """The per-record steps of ``render``: codepoint spans to bytes, encode, bisect, and
    the trusted lists of ``Tokens.trusted_columns``."""
    from tokenpact.chat import _encode
    from tokenpact.chat.ownership import Tokens, token_ranges

    info = template._info
    flat_bytes = _encode.utf8_offsets(text, flat) if flat and not text.isascii() else flat
    ids, starts, ends = _encode.encode_byte_spans(template.tokenizer, info, text, flat_bytes)
    lo, hi = token_ranges(starts, ends, flat_bytes[0::2], flat_bytes[1::2])
    tokens = Tokens(
        ids,
        starts,
        ends,
        flat_bytes[0::2],
        flat_bytes[1::2],
        list(range(len(kinds))),
        lo,
        hi,
        tuple(kinds),
        (-1,) * len(kinds),
        info,
    )
    encoded = (ids.tolist(), starts.tolist(), ends.tolist(), flat_bytes, lo, hi)
    return encoded, tokens.trusted_columns()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_chunk_encoder_equals_per_record_encode(deepseek: ChatModel, data: Any) -> None:
    from tokenpact.chat import _encode

    template = deepseek.template
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    assert start is not None
    texts = data.draw(st.lists(TEXT, max_size=6))
    spans, kinds = [], []
    for text in texts:
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
        spans.append(cuts[: len(cuts) // 2 * 2])
        kinds.append(
            data.draw(st.lists(st.integers(2, 4), min_size=len(cuts) // 2, max_size=len(cuts) // 2))
        )
    threads = data.draw(st.integers(1, 3))
    got = start(texts, spans, kinds, threads).wait()
    assert len(got) == len(texts)
    for text, flat, own, (encoded, trusted) in zip(texts, spans, kinds, got, strict=True):
        ids, starts, ends, span_bytes, lo, hi = encoded
        assert ids.dtype == np.uint32 and starts.dtype == np.uint32
        want_encoded, want_trusted = reference(template, text, flat, own)
        assert (ids.tolist(), starts.tolist(), ends.tolist(), span_bytes, lo, hi) == want_encoded
        assert tuple(trusted) == want_trusted


def test_chunk_encoder_rejects_bad_arguments(deepseek: ChatModel, tp: ModuleType) -> None:
    from tokenpact.chat import _encode

    template = deepseek.template
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    assert start is not None
    with pytest.raises(tp.errors.ConfigError, match="span lists"):
        start(["a", "b"], [[]], [[], []], 2)
    with pytest.raises(tp.errors.ConfigError, match="one kind code"):
        start(["abc"], [[0, 1, 2]], [[2]], 2)
    with pytest.raises(tp.errors.ConfigError, match="one kind code"):
        start(["abc"], [[0, 1]], [[9]], 2)
    with pytest.raises(tp.errors.ConfigError, match="ends before it starts"):
        start(["abc"], [[2, 1]], [[2]], 2).wait()
    job = start(["abc"], [[]], [[]], 2)
    assert len(job) == 1 and len(job.wait()) == 1
    with pytest.raises(tp.errors.ConfigError, match="already called"):
        job.wait()
    from tokenpact import _native

    with pytest.raises(tp.errors.ConfigError, match="origin labels"):
        _native.ChatChunkEncoder(
            template.tokenizer._core, None, template._info.is_control, ["control"]
        )


@pytest.mark.parametrize("threads", [1, 2])
def test_wait_without_helping_gives_the_same_records(deepseek: ChatModel, threads: int) -> None:
    """``wait(help=False)`` (benchmarks: the serial part alone) leaves the encoding to
    the workers; with none (one thread) the caller still encodes, so it cannot hang."""
    from tokenpact.chat import _encode

    template = deepseek.template
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    assert start is not None
    texts = ["héllo <｜end▁of▁sentence｜> world", "plain", "東京 <｜end▁of▁sentence｜>"] * 5
    spans = [[0, 3], [], [0, 2]] * 5
    kinds = [[2], [], [3]] * 5
    helped = start(texts, spans, kinds, threads).wait()
    alone = start(texts, spans, kinds, threads).wait(help=False)
    for (a, ta), (b, tb) in zip(helped, alone, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3], strict=True))
        assert a[3:] == b[3:] and ta == tb


def test_job_reports_done(deepseek: ChatModel) -> None:
    """``ChatEncodeJob.done()`` (polled by the pipeline) turns True once every record is
    encoded, without a ``wait``; ``wait`` then returns the records at once."""
    import time

    from tokenpact.chat import _encode

    template = deepseek.template
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    assert start is not None
    job = start(["plain text"] * 8, [[]] * 8, [[]] * 8, 2)
    deadline = time.monotonic() + 60
    while not job.done() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert job.done() is True
    assert len(job.wait()) == 8 and job.done() is True


class _SlowJob:
    """A chunk job that reports itself unfinished until it is waited for."""

    def __init__(self, job: Any, polls: list[int]) -> None:
        self.job, self.polls = job, polls

    def done(self) -> bool:
        self.polls.append(1)
        return False

    def wait(self, **options: Any) -> Any:
        return self.job.wait(**options)


def test_lists_built_while_the_workers_encode(
    deepseek: ChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a chunk's encoding runs, the calling thread builds the per-token lists of
    the conversations it collected before, in the middle of the batch too (here every
    chunk looks unfinished, so a chunk is collected when five are in flight, and its
    lists are built at the next collection, while later chunks are still to start);
    the last chunk stays lazy; every record equals ``render``."""
    from tokenpact.chat import _encode, render_core

    real = _encode.chunk_encoder
    polls: list[int] = []
    events: list[str] = []

    def slow(tok: Any, info: Any) -> Any:
        start = real(tok, info)
        if start is None:
            return None

        def started(*args: Any, **options: Any) -> _SlowJob:
            events.append("start")
            return _SlowJob(start(*args, **options), polls)

        return started

    def prebuild(conv: Any) -> None:
        events.append("build")
        real_prebuild(conv)

    real_prebuild = render_core.prebuild
    monkeypatch.setattr(_encode, "chunk_encoder", slow)
    monkeypatch.setattr(render_core, "prebuild", prebuild)
    monkeypatch.setattr(render_core, "_PIPELINE_RECORDS", 3)
    template = deepseek.template
    records = [
        [
            {"role": "user", "content": f"question {k} " * (k % 7 + 1)},
            {"role": "assistant", "content": f"answer {k}"},
        ]
        for k in range(30)
    ]
    batch = template.render_batch(records, threads=2)
    built = ["input_ids" in c.__dict__ for c in batch]
    masks = ["assistant_mask" in c.__dict__ for c in batch]
    assert polls and built == masks == [True] * 27 + [False] * 3
    assert all("input_ids" in c.__dict__ for c in batch[:27])
    assert events.index("build") < len(events) - 1 - events[::-1].index("start")
    assert_same(batch, [template.render(m) for m in records])


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(0, 2**32 - 1), max_size=300),
    seed=st.integers(0, 2**16),
)
def test_native_token_lists_equal_the_numpy_conversion(ids: list[int], seed: int) -> None:
    from tokenpact import _native
    from tokenpact.chat.ownership import _KIND_ARRAY, CONTROL, KINDS

    rng = random.Random(seed)
    id_array = np.array(ids, dtype=np.uint32)
    codes = np.array([rng.randrange(len(KINDS)) for _ in ids], dtype=np.uint8)
    got = _native.chat_token_lists(id_array, codes, KINDS)
    want = (
        id_array.tolist(),
        (codes == CONTROL).view(np.int8).tolist(),
        _KIND_ARRAY[codes].tolist(),
    )
    assert got == want
    assert all(a is b for a, b in zip(got[2], want[2], strict=True))  # shared labels
    # With an engine lending its cached ints (IDs past its range are made fresh).
    engine = _small_engine()
    assert _native.chat_token_lists(id_array, codes, KINDS, engine) == want
    assert engine.id_array_list(id_array) == want[0]
    assert engine.id_array_list(id_array[:0]) == []


@functools.lru_cache(maxsize=1)
def _small_engine() -> Any:
    """A native engine of about 270 IDs (its cached ints cover only them)."""
    import tokenpact
    from tokenpact.chat._encode import _native_engine

    tok = tokenpact.train_bpe(["abc abd abe"] * 4, vocab_size=270)
    engine = _native_engine(tok)
    assert engine is not None
    return engine


def test_native_token_lists_reject_bad_input(tp: ModuleType) -> None:
    from tokenpact import _native
    from tokenpact.chat.conversation import KINDS

    ids = np.array([1, 2, 3], dtype=np.uint32)
    with pytest.raises(tp.errors.ConfigError, match="3 IDs but 2 kind codes"):
        _native.chat_token_lists(ids, np.array([0, 1], dtype=np.uint8), KINDS)
    with pytest.raises(tp.errors.ConfigError, match="kind code 5 has no label"):
        _native.chat_token_lists(ids, np.array([0, 1, 5], dtype=np.uint8), KINDS)
    with pytest.raises(TypeError):
        _native.chat_token_lists(ids.astype(np.int64), np.zeros(3, np.uint8), KINDS)
