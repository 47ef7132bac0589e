"""Render many conversations on several threads (offline SFT data preparation).

Each conversation is rendered exactly as :meth:`ChatTemplate.render` renders it alone.
With a native tokenizer the work runs as a pipeline (:func:`_pipelined`): this thread
prepares a chunk of conversations (wrapping the messages for the native template engine,
or rendering with Jinja, which needs the GIL) and hands the whole chunk to one native call
that renders and encodes it on worker threads without the GIL, then prepares the next
chunks while those threads work (up to ``_AHEAD`` chunks in flight); finished chunks are
turned into conversations here. The GIL changes hands once per chunk, not twice per
conversation, and the wall time tends to max(preparing + bookkeeping, total / threads).

Tokenizers without the native engine fall back to Python threads per chunk of records
(the engine releases the GIL while it encodes). Either way the results come back in
input order, and an error raises the error of the first failing conversation, as the
serial loop would.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import TokenpactError
from ._encode import ChunkEncoder
from .conversation import (
    Conversation,
    SplitTokenLists,
    assemble,
    id_list,
    kind_lists,
    mask_list,
    prebuild,
)
from .deferred_render import PendingRender, batch_preparer, chunk_inputs, rendered_size, resolve
from .errors import ChatTemplateError
from .ownership import RenderedText, in_spans, is_plain_record, owned_tokens
from .record_errors import note_record, split_item
from .supervision import ranges_and_boundary

_CHUNK = 8  # conversations per task of the thread fallback: amortizes the executor's cost
# Pipeline chunks close at this many rendered characters or conversations: small enough
# that the first chunk's rendering (with no encoding to overlap) and the last chunk's
# encoding (with no rendering to overlap) are a small share of a batch, large enough that
# the per-chunk cost (starting workers, waking this thread, one list of results) is too,
# and holding several long records, so that this thread can share a chunk's encoding when
# it collects it (at 16,000 characters a chunk held one to three long conversations and
# 2-thread runs of long SFT records reached 1.03x-1.48x; at 64,000, 1.55x-1.90x).
_PIPELINE_CHARS = 64_000
_PIPELINE_RECORDS = 32
# The first chunk is prepared with no encoding to overlap and the last one's results are
# built with none either, so chunks start small and double up to the sizes above (the
# worker starts after 4 records, not 32), and near the end each chunk takes at most half
# of what is left.
_FIRST_RECORDS = 4
_FIRST_CHARS = 8_000
# Chunks in flight on more than one thread: this thread collects a chunk once it is
# encoded, or waits for the oldest when this many are queued after it.
_AHEAD = 4


def default_threads() -> int:
    """Threads used when ``threads`` is None: the CPUs this process may run on (max 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


Items = list[tuple[Sequence[Any], dict[str, Any]]]


@dataclass(frozen=True)
class Stages:
    """The parts of :meth:`ChatTemplate.render` that a pipeline runs apart.

    ``prepare(messages, options)`` validates and renders (GIL), or prepares a native
    render that a worker runs (a :class:`~tokenpact.chat.deferred_render.PendingRender`);
    ``start(texts, spans, kinds, threads[, renders])`` starts the native encoding of a
    chunk (see ``_encode.chunk_encoder``);
    ``finish(messages, options, rendered, result)`` builds the conversation (masks,
    boundary, trust checks) exactly as ``render`` does from the chunk's native result
    for ``rendered`` (``(encoded, codes)``), or encodes ``rendered`` alone when
    ``result`` is None (:func:`finish_encoded`).
    """

    prepare: Callable[[Sequence[Any], dict[str, Any]], RenderedText | PendingRender]
    start: ChunkEncoder
    finish: Callable[[Sequence[Any], dict[str, Any], RenderedText, Any], Conversation]


def native_stages(
    template: Any,
    start: ChunkEncoder,
    options: dict[str, Any],
    mode: str,
    validate: bool,
    finish: Callable[[Sequence[Any], dict[str, Any], RenderedText, Any], Conversation],
) -> Stages:
    """The stages of ``template``'s batch with the native chunk encoder ``start``: records
    prepared by :func:`~tokenpact.chat.deferred_render.batch_preparer`."""
    return Stages(
        prepare=batch_preparer(template, options, mode, validate), start=start, finish=finish
    )


def finish_encoded(
    template: Any,
    messages: Sequence[Any],
    options: dict[str, Any],
    rendered: RenderedText,
    result: Any,
    mode: str,
    add_special_tokens: bool,
    supervise: str = "turns",
) -> Conversation:
    """``template._finish`` of a chunk's native result ``(encoded, codes)`` (None: encoded
    alone here). The common SFT record (no control spelling in the inputs, no markers, no
    ``{% generation %}`` blocks) builds no :class:`~tokenpact.chat.ownership.Tokens`: its
    mask ranges and boundary come from one pass over the spans, its per-token lists
    (mask included) are built on first read; this runs on the thread that holds the GIL
    while the native threads encode, so it is the batch's serial part."""
    if not is_plain_record(rendered, result, add_special_tokens):
        info = template._info
        tokens = (
            template._tokenize(rendered)
            if result is None
            else owned_tokens(rendered, info, *result)
        )
        return template._finish(  # type: ignore[no-any-return]
            messages, options, rendered, tokens, mode, add_special_tokens, supervise
        )
    encoded, codes = result
    ids, starts, ends, _, span_lo, span_hi = encoded
    stops = template._stop_ids()
    ranges, boundary = ranges_and_boundary(
        template,
        messages,
        options,
        rendered,
        (ids, starts, ends),
        functools.partial(in_spans, span_lo, span_hi),
        stops,
        mode == "training",
        supervise,
    )
    info = template._info
    return assemble(
        tokenizer=template.tokenizer,
        # input_ids apart from the kinds: an SFT caller reads the IDs and the mask only.
        columns=SplitTokenLists(
            functools.partial(id_list, ids, info.engine), functools.partial(kind_lists, codes)
        ),
        index_columns=lambda: owned_tokens(rendered, info, encoded).index_columns(),
        owners=rendered.owners,
        assistant_mask=functools.partial(mask_list, len(ids), ranges),
        prompt_boundary=boundary,
        stop_policy=template._stop_policy(boundary, stops),
        template_hash=template.template_hash,
        mode=mode,
        roles=rendered.roles,
        text=rendered.text,
        byte_offsets=(starts, ends),
    )


def check_threads(threads: int | None) -> int:
    """``threads``, or :func:`default_threads` when None; a typed error when invalid."""
    if threads is None:
        return default_threads()
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ChatTemplateError(f"threads must be a positive int, not {threads!r}")
    return threads


def _items(conversations: Sequence[Any], options: dict[str, Any]) -> Items:
    """Each conversation as ``(messages, per-conversation options)``, checked."""
    items = [split_item(item, k) for k, item in enumerate(conversations)]
    given = {k for k, v in options.items() if v is not None}
    for _, extra in items:
        clash = sorted(set(extra) & given)
        if clash:
            raise ChatTemplateError(
                f"{clash} given both per conversation and to render_batch; pass them once"
            )
    return items


def render_many(
    render: Callable[..., Conversation],
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    stages: Stages | None = None,
) -> list[Conversation]:
    """``[render(messages, **options) for each conversation]`` on ``threads`` threads:
    pipelined through ``stages`` when given (on one thread too: chunked encoding and the
    native message wrapping make it faster than the loop), else on a pool of Python
    threads."""
    threads = check_threads(threads)
    items = _items(conversations, options)
    if len(items) < 2 or (threads == 1 and stages is None):
        return [render(messages, **{**options, **extra}) for messages, extra in items]
    if stages is not None:
        return _pipelined(stages, items, threads, options, _ListCollector(early=threads > 1))
    return _threaded(render, items, threads, options)


# collect(stages, chunk, job, first): a chunk's results once its encoding is done
# (``first``: the chunk's first conversation index in the batch).
Collect = Callable[[Stages, list[Any], Any, int], list[Any]]


def pipeline(
    stages: Stages,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    collect: Collect,
) -> None:
    """Run every conversation through ``stages`` (on one thread too), handing each
    chunk to ``collect``: the columnar result's path (``render_columns``)."""
    _pipelined(stages, _items(conversations, options), check_threads(threads), options, collect)


def _pipelined(
    stages: Stages, items: Items, threads: int, options: dict[str, Any], collect: Collect
) -> list[Any]:
    """Prepare chunks here while native threads encode the ones before (see the module
    doc): a chunk is collected once its encoding is done, or when ``_AHEAD`` chunks are
    in flight (on one thread: the one before, which this thread then encodes)."""
    out: list[Any] = []
    pending: deque[tuple[list[Any], Any, int]] = deque()
    depth = _AHEAD if threads > 1 else 1
    failure: Exception | None = None
    position = 0
    number = 0
    while position < len(items) and failure is None:
        chunk: list[tuple[Sequence[Any], dict[str, Any], RenderedText | PendingRender]] = []
        first = position
        chars = 0
        records, max_chars = chunk_limits(number, len(items) - position)
        number += 1
        while position < len(items) and len(chunk) < records:
            messages, extra = items[position]
            opts = {**options, **extra} if extra else options
            try:
                rendered = stages.prepare(messages, opts)
            except Exception as exc:  # noqa: BLE001 - raised after the records before it
                note_record(exc, position)
                failure = exc
                break
            position += 1
            chunk.append((messages, opts, rendered))
            chars += rendered_size(rendered)
            if chars >= max_chars:
                break
        if chunk:
            pending.append((chunk, _start(stages, chunk, threads), first))
        # Collect what is done (or must be, at the depth) and go on preparing: the
        # workers always have a chunk queued, and this thread waits only when it is ahead.
        while pending and (len(pending) > depth or _done(pending[0][1])):
            out.extend(collect(stages, *pending.popleft()))
    while pending:
        out.extend(collect(stages, *pending.popleft()))
    if failure is not None:
        raise failure
    return out


def _done(job: Any) -> bool:
    """Whether a chunk's job is finished (None: the records are encoded when collected)."""
    return job is None or job.done()  # type: ignore[no-any-return]


def chunk_limits(number: int, left: int) -> tuple[int, int]:
    """Records and characters at which chunk ``number`` (0 first) closes, ``left``
    records being still to prepare: doubling from ``_FIRST_RECORDS``/``_FIRST_CHARS`` up
    to the pipeline sizes, and at most half of what is left (at least the first size)."""
    grow = 1 << min(number, 16)
    records = min(_PIPELINE_RECORDS, _FIRST_RECORDS * grow, max(_FIRST_RECORDS, left // 2))
    return records, min(_PIPELINE_CHARS, _FIRST_CHARS * grow)


def _start(stages: Stages, chunk: list[Any], threads: int) -> Any:
    """The native job encoding ``chunk`` (rendering its pending records first), or None
    when the engine refuses the texts (a lone surrogate): then each record is rendered
    and encoded alone, raising its own typed error."""
    texts, spans, kinds, renders = chunk_inputs(chunk)
    try:
        if renders is None:
            return stages.start(texts, spans, kinds, threads)
        return stages.start(texts, spans, kinds, threads, renders)
    except UnicodeEncodeError:
        return None


def wait_chunk(job: Any, size: int, **options: Any) -> list[Any]:
    """A chunk job's results (``options`` go to ``ChatEncodeJob.wait``), or None per
    record when the job is absent or fails: then each record is encoded alone, and the
    first failing one raises its own typed error."""
    if job is not None:
        try:
            return job.wait(**options)  # type: ignore[no-any-return]
        except TokenpactError:
            pass
    return [None] * size


class _ListCollector:
    """``render_batch``'s ``collect``: a chunk's conversations, in order, once its encoding
    is done.

    The conversations build their per-token lists on first read. When this thread comes
    to collect a chunk whose encoding is still running, it first builds the lists
    (``input_ids`` and the rest of its group, ``assistant_mask``) of the conversations
    it collected before, until the job is done: that is work the caller does next anyway
    (an SFT caller reads the IDs and the mask), here while the worker encodes, where
    helping the worker encode would leave every list to be built after the batch
    returns, on one thread alone (on 2 threads, short records lost a tenth of the
    speedup to that tail). The lists are ints, which the cyclic collector does not
    track (``conversation.id_list``), so building them mid-batch adds no collector
    walks. When this thread is the bottleneck (the job is done by the time it comes),
    nothing is built early and the lists stay lazy; so on one thread (``early`` False:
    no worker, so no job is done before this thread encodes it).
    """

    def __init__(self, early: bool = True) -> None:
        self._unbuilt: deque[Conversation] = deque()
        self._early = early

    def __call__(
        self, stages: Stages, chunk: list[Any], job: Any, first: int
    ) -> list[Conversation]:
        unbuilt = self._unbuilt
        if job is not None and self._early:
            while unbuilt and not job.done():
                prebuild(unbuilt.popleft())
        out = []
        # Kind codes, not lists: the conversations build their lists on first read.
        encoded = wait_chunk(job, len(chunk), lists=False)
        for k, ((messages, opts, rendered), result) in enumerate(zip(chunk, encoded, strict=True)):
            try:
                rendered, result = resolve(rendered, result)
                out.append(stages.finish(messages, opts, rendered, result))
            except Exception as exc:
                note_record(exc, first + k)
                raise
        if self._early:
            unbuilt.extend(out)
        return out


def _threaded(
    render: Callable[..., Conversation], items: Items, threads: int, options: dict[str, Any]
) -> list[Conversation]:
    """Chunks of ``_CHUNK`` records rendered on a pool of Python threads."""

    def run(start: int) -> list[Conversation]:
        return [
            render(messages, **{**options, **extra})
            for messages, extra in items[start : start + _CHUNK]
        ]

    starts = range(0, len(items), _CHUNK)
    if len(items) <= _CHUNK:
        return run(0)
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


def _forget_pools_after_fork() -> None:
    """A forked child has none of the pools' threads, and an executor whose dead workers
    still count would queue work that never runs: the child starts its own pools (and
    a fresh lock, in case a parent thread held it at the fork)."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


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
