"""Render many conversations on several threads (offline SFT data preparation).

Each conversation is rendered exactly as :meth:`ChatTemplate.render` renders it alone;
the threads only overlap work. Template execution and the bookkeeping around it hold
the GIL, while the tokenizer's engine releases it for the whole encoding call, so one
thread's encoding runs while another renders. The gain therefore grows with the share
of tokenization: long conversations (SFT data) gain most, two-message prompts least.

Work is handed out in chunks of consecutive conversations and the results are put back
in input order; an error raises the error of the first failing conversation, as the
serial loop would. The worker threads live on between calls (one pool per thread count),
because the engine's memo of encoded pieces is per thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .conversation import Conversation
from .errors import ChatTemplateError

_CHUNK = 8  # conversations per task: amortizes the executor's per-task cost
_PER_CONVERSATION = ("tools", "documents")


def default_threads() -> int:
    """Threads used when ``threads`` is None: the CPUs this process may run on (max 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def split_item(item: Any, index: int) -> tuple[Sequence[Any], dict[str, Any]]:
    """A conversation given as a message list, or ``{"messages": ..., "tools": ...,
    "documents": ...}`` (per-conversation tools and documents, as SFT records carry)."""
    if isinstance(item, Mapping):
        if "messages" not in item:
            raise ChatTemplateError(
                f"conversation {index} is a dict without 'messages'; pass a list of messages "
                'or {"messages": [...], "tools": [...], "documents": [...]}'
            )
        unknown = sorted(set(item) - {"messages", *_PER_CONVERSATION})
        if unknown:
            raise ChatTemplateError(
                f"conversation {index} has unknown keys {unknown}; only messages, tools and "
                "documents are read per conversation (pass other options to render_batch)"
            )
        return item["messages"], {k: item[k] for k in _PER_CONVERSATION if k in item}
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence):
        raise ChatTemplateError(
            f"conversation {index} must be a list of messages or a dict with 'messages', "
            f"not {type(item).__name__}"
        )
    return item, {}


def render_many(
    render: Callable[..., Conversation],
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
) -> list[Conversation]:
    """``[render(messages, **options) for each conversation]`` on ``threads`` threads."""
    if threads is None:
        threads = default_threads()
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ChatTemplateError(f"threads must be a positive int, not {threads!r}")
    items = [split_item(item, k) for k, item in enumerate(conversations)]
    for _, extra in items:
        clash = sorted(set(extra) & {k for k, v in options.items() if v is not None})
        if clash:
            raise ChatTemplateError(
                f"{clash} given both per conversation and to render_batch; pass them once"
            )

    def run(start: int) -> list[Conversation]:
        return [
            render(messages, **{**options, **extra})
            for messages, extra in items[start : start + _CHUNK]
        ]

    starts = range(0, len(items), _CHUNK)
    if threads == 1 or len(items) <= _CHUNK:
        return [conv for start in starts for conv in run(start)]
    chunks = _submit(threads, run, starts)
    try:
        # .result() re-raises in input order: the first failing chunk's error wins.
        return [conv for chunk in chunks for conv in chunk.result()]
    except BaseException:
        for chunk in chunks:
            chunk.cancel()
        raise


_POOLS: dict[int, ThreadPoolExecutor] = {}
_MAX_POOLS = 4
_POOLS_LOCK = threading.Lock()


def _submit(threads: int, run: Callable[[int], Any], starts: range) -> list[Future[Any]]:
    """``run(start)`` for each start on a long-lived pool of ``threads`` workers.

    The engine's memo of encoded pieces is per thread, so fresh threads for every call
    would encode each word from scratch (measured: two fresh threads ran slower than one
    warm thread); reused workers keep it warm. Submitting under the lock keeps a pool
    from being retired between lookup and submission.
    """
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            if len(_POOLS) >= _MAX_POOLS:  # many distinct counts: retire the oldest pool
                _POOLS.pop(next(iter(_POOLS))).shutdown(wait=False)
            pool = _POOLS[threads] = ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix=f"tokenpact-chat-{threads}"
            )
        return [pool.submit(run, start) for start in starts]
