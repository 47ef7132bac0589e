"""A process forked after tokenpact's thread pools started keeps working.

``datasets.map(num_proc=N)``, a ``multiprocessing`` pool with the fork start method and
DataLoader workers fork the user's process, often after it has encoded a batch. The child
inherits the pools' bookkeeping but none of their threads: before the fix, its first
``encode_batch`` waited forever on a pool with no threads. Each case below runs in a
forked child with a deadline, so a regression fails instead of hanging the suite, and
its results must equal the parent's.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import tokenpact as tp
import tokenpact.chat  # noqa: F401 - until tokenpact/__init__ exports it

if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - not POSIX
    pytest.skip("no fork start method here", allow_module_level=True)

TEXTS = [
    "The cat sleeps. The dog barks, 123 times!",
    "Кошка спит, собака лает 123 раза.",
    "猫が寝ている。犬が123回吠える。",
    "def f(x):\n    return x * 2  # twice\n",
] * 25
DEADLINE_S = 120


def _in_forked_child(work: Callable[[], Any]) -> Any:
    """``work()`` in a forked child (its pickled result), failing after the deadline."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)

    def child() -> None:
        try:
            writer.send_bytes(pickle.dumps(("ok", work())))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            writer.send_bytes(pickle.dumps(("error", repr(exc))))

    process = context.Process(target=child)
    process.start()
    try:
        if not reader.poll(DEADLINE_S):
            pytest.fail(f"the forked child did not finish within {DEADLINE_S} s (a dead pool?)")
        status, value = pickle.loads(reader.recv_bytes())
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    assert status == "ok", value
    return value


@pytest.fixture(scope="module")
def tok() -> Any:
    return tp.train_bpe(TEXTS, vocab_size=400)


def test_encode_batch_after_the_parent_used_the_pools(tok: Any) -> None:
    want = tok.encode_batch(TEXTS)  # starts the global pool here
    assert tok.encode_batch(TEXTS, threads=2) == want  # and a sized pool
    got = _in_forked_child(lambda: (tok.encode_batch(TEXTS), tok.encode_batch(TEXTS, threads=2)))
    assert got == (want, want)


def test_long_text_and_flat_batches_in_the_child(tok: Any) -> None:
    long_text = " ".join(TEXTS) * 250  # over 1 MB: pre-tokenized whole, pieces in parallel
    assert len(long_text.encode()) >= 1 << 20
    want = (tok.encode(long_text), tok.encode_batch_flat(TEXTS)[0].tolist())
    got = _in_forked_child(
        lambda: (tok.encode(long_text), tok.encode_batch_flat(TEXTS)[0].tolist())
    )
    assert got == want


def test_training_in_the_child() -> None:
    want = tp.train_bpe(TEXTS, vocab_size=350, threads=2).merges
    assert _in_forked_child(lambda: tp.train_bpe(TEXTS, vocab_size=350, threads=2).merges) == want


def test_chat_render_batch_in_the_child() -> None:
    from chat.chat_data import model_dir

    directory = model_dir("llama-3.1")
    template = tp.chat.ChatTemplate.from_hf(directory, tp.Tokenizer.load(directory))
    records = [
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": text},
            {"role": "assistant", "content": text[::-1]},
        ]
        for text in TEXTS[:40]
    ]
    want = [c.input_ids for c in template.render_batch(records, threads=2)]

    def child() -> Any:
        return [c.input_ids for c in template.render_batch(records, threads=2)]

    assert _in_forked_child(child) == want


def test_a_grandchild_builds_its_own_pools_again(tok: Any) -> None:
    want = tok.encode_batch(TEXTS, threads=2)

    def child() -> Any:
        tok.encode_batch(TEXTS, threads=2)  # the child's own pool, then fork again
        return os.getpid(), _in_forked_child(lambda: tok.encode_batch(TEXTS, threads=2))

    pid, got = _in_forked_child(child)
    assert pid != os.getpid()
    assert got == want
