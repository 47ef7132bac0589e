"""The one render path: a batch of conversations in, columnar records out.

``render``, ``render_batch`` and ``render_columns`` all run here. ``render`` is a batch
of one; ``render_batch`` returns a :class:`~tokenpact.chat.Conversation` viewing each
:class:`~tokenpact.chat.columns.TokenRecord`; ``render_columns`` lays the records end
to end (:meth:`RenderedColumns.from_records`). The executors
(:mod:`tokenpact.chat.executors`) only decide where chunks of a batch run: here, on
native worker threads, or in forked processes that run this same path on their chunks.

With the native engine the work runs as a pipeline (:func:`render_chunks`): this thread
prepares a chunk of conversations (wrapping the messages for the native template engine,
:mod:`tokenpact.chat.deferred_render`; what that engine declines renders here, with the
Jinja compatibility renderer) and hands the whole chunk to one native call that renders
and encodes it on worker threads without the GIL, then prepares the next chunks while
those threads work (up to ``_AHEAD`` chunks in flight); finished chunks become records
here (:func:`finish`: masks, boundary, trust checks). The GIL changes hands once per
chunk, not twice per conversation, and the wall time tends to max(preparing +
bookkeeping, total / threads). Without the native engine each record is rendered and
encoded on this thread. Either way the results come back in input order, and an error
raises the error of the first failing conversation, as the serial loop would.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import TokenpactError
from . import _encode
from .columns import RenderedColumns, TokenRecord
from .conversation import Conversation
from .deferred_render import PendingRender, batch_preparer, chunk_inputs, rendered_size, resolve
from .errors import ChatTemplateError
from .ownership import (
    RenderedText,
    add_post_processor_markers,
    generation_mask,
    in_spans,
    is_plain_record,
    owned_tokens,
    response_start,
)
from .record_errors import note_record, split_item
from .supervision import ranges_and_boundary

if TYPE_CHECKING:
    from .hf_template import ChatTemplate

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


class Settings(NamedTuple):
    """The per-call settings of a render besides the template options."""

    mode: str
    validate: bool = False
    add_special_tokens: bool = False
    supervise: str = "turns"


Items = list[tuple[Sequence[Any], dict[str, Any]]]


def default_threads() -> int:
    """Threads used when ``threads`` is None: the CPUs this process may run on (max 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def check_threads(threads: int | None) -> int:
    """``threads``, or :func:`default_threads` when None; a typed error when invalid."""
    if threads is None:
        return default_threads()
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ChatTemplateError(f"threads must be a positive int, not {threads!r}")
    return threads


def batch_items(conversations: Sequence[Any], options: dict[str, Any]) -> Items:
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


# ---------------------------------------------------------------------- finishing


def finish(
    template: ChatTemplate,
    messages: Sequence[Any],
    options: dict[str, Any],
    rendered: RenderedText,
    result: Any,
    settings: Settings,
) -> TokenRecord:
    """One rendered record's :class:`TokenRecord` from the chunk's native ``result``
    ``(encoded, codes)`` (None: encoded alone here): the trust check, the
    post-processor's markers, the assistant mask and the boundary.

    The common SFT record (no control spelling in the inputs, no markers, no
    ``{% generation %}`` blocks) builds no :class:`~tokenpact.chat.ownership.Tokens`:
    its mask ranges and boundary come from one pass over the spans (this runs on the
    thread that holds the GIL while the native threads encode: the batch's serial part).
    """
    info = template._info
    stops = template._stop_ids()
    training = settings.mode == "training"
    if is_plain_record(rendered, result, settings.add_special_tokens):
        encoded, codes = result
        ids, starts, ends, _, span_lo, span_hi = encoded
        ranges, boundary = ranges_and_boundary(
            template,
            messages,
            options,
            rendered,
            (ids, starts, ends),
            functools.partial(in_spans, span_lo, span_hi),
            stops,
            training,
            settings.supervise,
        )
        return TokenRecord(rendered, encoded, codes, None, ranges, boundary, info)
    if result is None:
        encoded = codes = None
        tokens = template._tokenize(rendered)
    else:
        encoded, codes = result
        tokens = owned_tokens(rendered, info, encoded, codes)
    if rendered.control_in_input is not None:
        template._check_untracked(rendered, tokens, messages, options)
    if settings.add_special_tokens:
        marked = add_post_processor_markers(tokens, info)
        if marked is not tokens:
            tokens, encoded, codes = marked, None, None
    mask: Any
    if rendered.generation_spans:
        mask = generation_mask(tokens, rendered)
        boundary = len(tokens.ids)
        if training:
            boundary = response_start(tokens, mask, rendered)
    else:
        mask, boundary = ranges_and_boundary(
            template,
            messages,
            options,
            rendered,
            (tokens.ids, tokens.starts, tokens.ends),
            tokens.in_content,
            stops,
            training,
            settings.supervise,
            tokens.shift,
        )
    return TokenRecord(rendered, encoded, codes, tokens, mask, boundary, info)


def conversation(template: ChatTemplate, record: TokenRecord, mode: str) -> Conversation:
    """The :class:`Conversation` viewing ``record`` (its lists built on first read)."""
    boundary = record.boundary
    rendered = record.rendered
    return Conversation.view(
        record,
        owners=tuple([o.label for o in rendered.owners]),
        prompt_boundary=boundary,
        stop_policy=template._stop_policy(boundary, template._stop_ids()),
        tokenizer_hash=template.tokenizer.semantic_hash,
        template_hash=template.template_hash,
        mode=mode,
        roles=rendered.roles,
        text=rendered.text,
        byte_offsets=record.byte_offsets,
        tokenizer=template.tokenizer,
    )


def columns(template: ChatTemplate, records: Sequence[TokenRecord], mode: str) -> RenderedColumns:
    """``records`` laid end to end."""
    return RenderedColumns.from_records(
        records,
        tokenizer=template.tokenizer,
        template_hash=template.template_hash,
        mode=mode,
        stops=template._stop_ids(),
    )


# ---------------------------------------------------------------------- the pipeline


def render_one(
    template: ChatTemplate,
    messages: Sequence[Any],
    options: dict[str, Any],
    settings: Settings,
) -> TokenRecord:
    """The record of one conversation: the pipeline's stages for a batch of one, all on
    this thread (the template runs here, natively or, declined, with Jinja; the chunk
    encoder encodes the one text on this thread)."""
    rendered = template._prepare(messages, options, settings.mode, settings.validate)
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    result = None
    if start is not None:
        (result,) = _results(_start(start, [(messages, options, rendered)], 1), 1)
    return finish(template, messages, options, rendered, result, settings)


Idle = Callable[[], bool]


def render_chunks(
    template: ChatTemplate,
    items: Items,
    threads: int,
    options: dict[str, Any],
    settings: Settings,
    *,
    idle: Idle | None = None,
    named: bool = True,
) -> Iterator[list[TokenRecord]]:
    """Every record of ``items``, a chunk at a time, in order (see the module doc).

    A chunk is collected once its encoding is done, or when ``_AHEAD`` chunks are in
    flight (on one thread: the one before, which this thread then encodes). ``idle()``
    is called while this thread waits for a chunk's workers, until it returns False
    (``render_batch`` builds the lists of conversations it already returned).
    ``named``: a failing record's error names its position in the batch."""
    start = _encode.chunk_encoder(template.tokenizer, template._info)
    if start is None:
        prepare: Callable[..., RenderedText | PendingRender] = functools.partial(
            _prepare_here, template, settings
        )
    else:
        prepare = batch_preparer(template, options, settings.mode, settings.validate)
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
                rendered = prepare(messages, opts)
            except Exception as exc:  # noqa: BLE001 - raised after the records before it
                if named:
                    note_record(exc, position)
                failure = exc
                break
            position += 1
            chunk.append((messages, opts, rendered))
            chars += rendered_size(rendered)
            if chars >= max_chars:
                break
        if chunk:
            job = None if start is None else _start(start, chunk, threads)
            pending.append((chunk, job, first))
        # Collect what is done (or must be, at the depth) and go on preparing: the
        # workers always have a chunk queued, and this thread waits only when it is ahead.
        while pending and (len(pending) > depth or _done(pending[0][1])):
            yield _collect(template, settings, *pending.popleft(), idle, named)
    while pending:
        yield _collect(template, settings, *pending.popleft(), idle, named)
    if failure is not None:
        raise failure


def _prepare_here(
    template: ChatTemplate, settings: Settings, messages: Sequence[Any], opts: dict[str, Any]
) -> RenderedText:
    """A record rendered on this thread (no native chunk encoder to leave it to)."""
    return template._prepare(messages, opts, settings.mode, settings.validate)


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


def _start(start: _encode.ChunkEncoder, chunk: list[Any], threads: int) -> Any:
    """The native job encoding ``chunk`` (rendering its pending records first), or None
    when the engine refuses the texts (a lone surrogate): then each record is rendered
    and encoded alone, raising its own typed error."""
    texts, spans, kinds, renders = chunk_inputs(chunk)
    try:
        if renders is None:
            return start(texts, spans, kinds, threads)
        return start(texts, spans, kinds, threads, renders)
    except UnicodeEncodeError:
        return None


def _results(job: Any, size: int) -> list[Any]:
    """A chunk job's results, or None per record when the job is absent or fails: then
    each record is encoded alone, and the first failing one raises its own typed error."""
    if job is not None:
        try:
            # Kind codes, not lists: the conversations build their lists on first read.
            return job.wait(lists=False)  # type: ignore[no-any-return]
        except TokenpactError:
            pass
    return [None] * size


def _collect(
    template: ChatTemplate,
    settings: Settings,
    chunk: list[Any],
    job: Any,
    first: int,
    idle: Idle | None,
    named: bool,
) -> list[TokenRecord]:
    """A chunk's records once its encoding is done (``idle`` runs while it is not)."""
    if job is not None and idle is not None:
        while not job.done() and idle():
            pass
    results = _results(job, len(chunk))
    out = []
    for k, ((messages, opts, rendered), result) in enumerate(zip(chunk, results, strict=True)):
        try:
            rendered, result = resolve(rendered, result)
            out.append(finish(template, messages, opts, rendered, result, settings))
        except Exception as exc:
            if named:
                note_record(exc, first + k)
            raise
    return out


# ---------------------------------------------------------------------- batch results


def conversations_here(
    template: ChatTemplate,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    settings: Settings,
) -> list[Conversation]:
    """``render_batch`` on this thread and ``threads - 1`` native workers.

    The conversations build their per-token lists on first read. When this thread comes
    to collect a chunk whose encoding is still running, it first builds the lists
    (``input_ids`` and ``assistant_mask``) of the conversations it collected before,
    until the job is done: that is work the caller does next anyway (an SFT caller reads
    the IDs and the mask), here while the worker encodes, where helping the worker encode
    would leave every list to be built after the batch returns, on one thread alone (on 2
    threads, short records lost a tenth of the speedup to that tail). The lists are ints,
    which the cyclic collector does not track (:meth:`TokenRecord.id_list`), so building
    them mid-batch adds no collector walks. When this thread is the bottleneck (the job
    is done by the time it comes), nothing is built early and the lists stay lazy; so on
    one thread (no worker, so no job is done before this thread encodes it).
    """
    threads = check_threads(threads)
    items = batch_items(conversations, options)
    mode = settings.mode
    unbuilt: deque[Conversation] = deque()

    def idle() -> bool:
        if not unbuilt:
            return False
        prebuild(unbuilt.popleft())
        return True

    out: list[Conversation] = []
    early = threads > 1
    for chunk in render_chunks(
        template, items, threads, options, settings, idle=idle if early else None
    ):
        views = [conversation(template, record, mode) for record in chunk]
        if early:
            unbuilt.extend(views)
        out.extend(views)
    return out


def prebuild(conv: Conversation) -> None:
    """Build ``conv``'s ``input_ids`` and ``assistant_mask`` now (what their first read
    would do; the other lists stay lazy)."""
    conv.input_ids  # noqa: B018 - the read builds the list
    conv.assistant_mask  # noqa: B018


def columns_here(
    template: ChatTemplate,
    conversations: Sequence[Any],
    threads: int | None,
    options: dict[str, Any],
    settings: Settings,
    *,
    named: bool = True,
) -> RenderedColumns:
    """``render_columns`` on this thread and ``threads - 1`` native workers."""
    threads = check_threads(threads)
    items = batch_items(conversations, options)
    records = [
        record
        for chunk in render_chunks(template, items, threads, options, settings, named=named)
        for record in chunk
    ]
    return columns(template, records, settings.mode)
