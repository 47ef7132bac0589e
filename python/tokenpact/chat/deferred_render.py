"""Records of a batch that the native template engine renders on the worker threads.

In the render core's pipeline (:mod:`tokenpact.chat.render_core`: ``render_batch`` and
``render_columns``) the calling thread holds the GIL while worker threads encode. With
the native engine it only prepares each record's inputs (the tracked strings and the
template context, converted once) as a :class:`PendingRender`; a worker renders it and
encodes it without the GIL, and the chunk's results bring the text and content spans
back (:func:`resolve`). A record the engine declines comes back
as None and is rendered here (with the Jinja compatibility renderer where the engine
declines the template), then encoded alone, exactly as ``render`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .conversation import CONTENT, Owner
from .errors import ChatTemplateError
from .hf_inputs import plain_data
from .messages import as_messages, validate_messages
from .ownership import RenderedText
from .template_pass import RENDER_OPTIONS


@dataclass(eq=False)
class PendingRender:
    """A record whose template run waits for a worker: the prepared native render and
    what the wrapping of its inputs found (owners, roles, a control spelling)."""

    native_input: Any
    owners: list[Owner]
    roles: tuple[str, ...]
    control_in_input: str | None
    redo: Callable[[], RenderedText]  # the render on this thread, when the engine declines

    @property
    def size(self) -> int:
        """Bytes of input text (the chunking estimate of the rendered size)."""
        return int(self.native_input.size)


def prepare_plain(
    native: Any,
    messages: Any,
    context: dict[str, Any],
    add_generation_prompt: bool,
    matcher: Any,
    limits: Any,
    redo: Callable[[], RenderedText],
) -> PendingRender | None:
    """The record as a :class:`PendingRender` with its messages wrapped natively
    (``NativeChatTemplate.prepare_messages``, whose reference is
    :func:`~tokenpact.chat.hf_inputs.wrap_messages` plus ``prepare``), or None when they
    are not plain (dicts of identifier keys and str or None values) or the engine
    declines the context: then the caller wraps them in Python. ``context`` is the
    template's globals and options without the conversation's own entries; ``matcher``
    finds control spellings (None: the caller's tracker does it)."""
    if matcher is None:
        return None
    found = wrap_natively(
        native, messages, native_context(context, add_generation_prompt), matcher, limits, redo
    )
    return None if found is None else found[0]


def wrap_natively(
    native: Any,
    messages: Any,
    context: dict[str, Any],
    matcher: Any,
    limits: Any,
    redo: Callable[[], RenderedText],
    mode: str | None = None,
) -> tuple[PendingRender, bool] | None:
    """``NativeChatTemplate.prepare_messages`` of ``messages`` with the full ``context``
    (:func:`native_context`): the record as a :class:`PendingRender` and whether
    ``validate_plain`` accepts its messages for ``mode`` (False without one), or None
    when the engine leaves the record to Python."""
    prepared = native.prepare_messages(
        messages,
        context,
        Owner,
        CONTENT,
        matcher,
        limits.max_loop_iterations,
        limits.max_output_chars,
        mode,
    )
    if prepared is None:
        return None
    native_input, owners, roles, control, valid = prepared
    return PendingRender(native_input, owners, roles, control, redo), valid


def native_context(context: dict[str, Any], add_generation_prompt: bool) -> dict[str, Any]:
    """``context`` plus the entries of a conversation without tools or documents (the
    messages are added natively)."""
    return {
        **context,
        "tools": None,
        "documents": None,
        "add_generation_prompt": add_generation_prompt,
    }


Prepare = Callable[[Sequence[Any], dict[str, Any]], "RenderedText | PendingRender"]


def batch_preparer(template: Any, options: dict[str, Any], mode: str, validate: bool) -> Prepare:
    """``prepare(messages, opts)``: ``template._prepare(messages, opts, mode, validate,
    True)`` for the records of one batch. A record with the batch's own ``options``
    and plain messages goes straight to ``prepare_messages`` with a context built once
    for the batch (``_render`` builds it per record: the option handling and two
    copies of the globals were a fifth of preparing a short record), and with
    ``validate`` its messages are checked as ``validate_plain`` checks them while they
    are wrapped; any other record takes ``_prepare``, which raises what it raises."""

    def general(messages: Sequence[Any], opts: dict[str, Any]) -> RenderedText | PendingRender:
        return template._prepare(messages, opts, mode, validate, True)  # type: ignore[no-any-return]

    found = _batch_context(template, options)
    if found is None:
        return general
    native, context = found
    matcher = template._info.control_matcher
    limits = template.limits
    check = mode if validate else None
    render = template._render

    def prepare(messages: Sequence[Any], opts: dict[str, Any]) -> RenderedText | PendingRender:
        if opts is not options or type(messages) is not list or not messages:
            return general(messages, opts)
        redo = functools.partial(render, messages, options, False)
        wrapped = wrap_natively(native, messages, context, matcher, limits, redo, check)
        if wrapped is None:
            return general(messages, opts)
        pending, valid = wrapped
        if validate and not valid:  # _prepare's order: the full check raises first
            validate_messages(as_messages(messages), mode=mode)
        return pending

    return prepare


def _batch_context(template: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """The native template and the context ``_render`` gives ``prepare_plain`` for a
    record of ``options``, or None when such a record never takes that path (tools,
    documents, continue_final_message, no native template or matcher, options that
    fail: each record then raises its own error)."""
    if (
        options.get("continue_final_message", False)
        or options.get("tools") is not None
        or options.get("documents") is not None
        or template._info.control_matcher is None
    ):
        return None
    try:
        key = template._select(None)
    except ChatTemplateError:
        return None
    native = template._native[key]
    if native is None:
        return None
    context = dict(template._compiled[key][1])
    extra = {k: options[k] for k in options if k not in RENDER_OPTIONS}
    if extra:
        try:
            context.update(plain_data(extra))
        except Exception:  # noqa: BLE001 - the record path raises it, naming the record
            return None
    return native, native_context(context, options.get("add_generation_prompt", False))


def rendered_size(rendered: RenderedText | PendingRender) -> int:
    """Characters a chunk counts for a record (rendered, or about to be)."""
    if type(rendered) is PendingRender:
        return rendered.size
    return len(rendered.text)  # type: ignore[union-attr]


def chunk_inputs(
    chunk: list[tuple[Any, Any, RenderedText | PendingRender]],
) -> tuple[list[str], list[list[int]], list[list[int]], list[Any] | None]:
    """``ChatChunkEncoder.start``'s texts, flat spans, kind codes and native renders."""
    texts: list[str] = []
    spans: list[list[int]] = []
    kinds: list[list[int]] = []
    renders: list[Any] = []
    for _, _, r in chunk:
        if type(r) is PendingRender:
            texts.append("")
            spans.append([])
            kinds.append([o.kind for o in r.owners])  # by owner: the worker finds the spans
            renders.append(r.native_input)
        else:
            texts.append(r.text)  # type: ignore[union-attr]
            spans.append([x for a, b, _ in r.spans for x in (a, b)])  # type: ignore[union-attr]
            kinds.append([r.owners[o].kind for _, _, o in r.spans])  # type: ignore[union-attr]
            renders.append(None)
    return texts, spans, kinds, (renders if any(x is not None for x in renders) else None)


def resolve(rendered: RenderedText | PendingRender, result: Any) -> tuple[RenderedText, Any]:
    """A chunk record as ``(rendered text, (encoded, codes) or None)``: a pending record's
    text and spans from its worker, or (declined) rendered here and encoded alone."""
    if type(rendered) is not PendingRender:
        return rendered, result  # type: ignore[return-value]
    if result is None:
        return rendered.redo(), None
    encoded, codes, text, spans = result
    out = object.__new__(RenderedText)
    out.__dict__.update(
        text=text,
        spans=spans,
        generation_spans=[],
        owners=rendered.owners,
        roles=rendered.roles,
        control_in_input=rendered.control_in_input,
    )
    return out, (encoded, codes)
