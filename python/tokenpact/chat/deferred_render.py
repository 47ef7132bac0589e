"""Records of a batch that the native template engine renders on the worker threads.

In ``render_batch`` and ``render_columns`` the calling thread holds the GIL while worker
threads encode. With the native engine it only prepares each record's inputs (the
tracked strings and the template context, converted once) as a :class:`PendingRender`;
a worker renders it and encodes it without the GIL, and the chunk's results bring the
text and content spans back (:func:`resolve`). A record the engine declines comes back
as None and is rendered here with Jinja, then encoded alone, exactly as ``render`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .conversation import CONTENT, Owner
from .ownership import RenderedText


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
    context = {**context, "tools": None, "documents": None}
    context["add_generation_prompt"] = add_generation_prompt
    prepared = native.prepare_messages(
        messages,
        context,
        Owner,
        CONTENT,
        matcher,
        limits.max_loop_iterations,
        limits.max_output_chars,
    )
    if prepared is None:
        return None
    native_input, owners, roles, control = prepared
    return PendingRender(native_input, owners, roles, control, redo)


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
