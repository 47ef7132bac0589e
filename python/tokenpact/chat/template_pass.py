"""One bounded run of a compiled chat template, collecting where content landed.

The template runs once per render inside this template's limits (loop steps, output
size, recursion); the pieces it yields that are :class:`~tokenpact.chat.spans.SpanStr`
carry the content spans (and ``{% generation %}`` spans), which are shifted to their
place in the joined output. Any failure becomes a typed error.

:func:`render_pass` runs the native engine first when the template compiled for it
(:func:`native_template`): a Rust evaluator over minijinja's parse with Jinja's CPython
semantics and the same span tracking, which renders exactly what the run below renders
or declines (a construct, value or error it does not model, every error a template
raises included); a declined render runs in the Jinja compatibility renderer
(:mod:`tokenpact.chat.jinja_compat`). ``TOKENPACT_NATIVE_TEMPLATES=0`` turns the native
engine off.

transformers' ``continue_final_message`` is also here: it tags the final message's text
before the run and cuts the output after that text once the run is over.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jinja2

from .. import _native
from .errors import ChatTemplateError
from .jinja_compat import GenerationSpans, Spans, run_template
from .limits import TemplateLimits
from .spans import SpanStr, clipped

CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def native_enabled() -> bool:
    """Whether templates render natively (``TOKENPACT_NATIVE_TEMPLATES`` is not ``0``)."""
    return os.environ.get("TOKENPACT_NATIVE_TEMPLATES", "1") != "0"


def native_template(source: str, template: jinja2.Template) -> Any:
    """The native engine's compiled ``source``, or None when it does not run this template
    (a construct it does not model) or is turned off."""
    if not native_enabled():
        return None
    try:
        return _native.NativeChatTemplate(source, SpanStr, template.environment.globals)
    except ValueError:
        return None


def render_pass(
    native: Any, template: jinja2.Template, context: dict[str, Any], limits: TemplateLimits
) -> tuple[str, Spans, GenerationSpans]:
    """The native engine's run of ``context`` (text and content spans); where it declines
    (or does not run this template), the Jinja compatibility renderer's
    (:func:`tokenpact.chat.jinja_compat.run_template`), which is what the native run
    equals wherever it renders."""
    if native is not None:
        out = native.render(context, limits.max_loop_iterations, limits.max_output_chars)
        if type(out) is tuple:
            return out  # type: ignore[no-any-return]
    return run_template(template, context, limits)


# render()'s own options; any other keyword is a template variable.
RENDER_OPTIONS = frozenset(
    {"add_generation_prompt", "continue_final_message", "tools", "documents"}
)


def call_mode(add_generation_prompt: bool, continue_final_message: bool | str) -> str:
    """The mode ``render``'s flags select (``format`` names it directly)."""
    if add_generation_prompt:
        return "generation"
    return "prefill" if continue_final_message else "training"


def render_options(
    add_generation_prompt: bool,
    continue_final_message: bool | str,
    tools: Sequence[Any] | None,
    documents: Sequence[Any] | None,
    template_kwargs: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """The mode and the template options of one render call (single or batch)."""
    options = dict(
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        tools=tools,
        documents=documents,
        **template_kwargs,
    )
    return call_mode(add_generation_prompt, continue_final_message), options


def check_call(messages: Any, add_generation_prompt: bool, continue_final_message: Any) -> None:
    """transformers' checks of a call before rendering (same messages)."""
    if isinstance(messages, (list, tuple)) and not messages:
        raise ChatTemplateError(
            "Cannot apply chat template to an empty conversation. Provide at least one message."
        )
    if continue_final_message and add_generation_prompt:
        raise ChatTemplateError(
            "continue_final_message and add_generation_prompt are not compatible. Use "
            "continue_final_message when you want the model to continue the final message, "
            "and add_generation_prompt when you want to add a header that will prompt it to "
            "start a new assistant message instead."
        )


def tag_final_message(chat: list[dict[str, Any]], field: bool | str, source: str) -> str | None:
    """transformers' continue_final_message: tag the final field of the (wrapped) last
    message in place and return its text, where :func:`cut_at_tag` cuts later."""
    if not field:
        return None
    field = field if isinstance(field, str) else "content"
    last = chat[-1]
    final = last.get(field)
    if final is None:
        raise ChatTemplateError(
            f'continue_final_message is set but the final message has no "{field}" to continue!'
        )
    fields = [field]
    if field in _REASONING_FIELDS:
        fields = [f for f in _REASONING_FIELDS if last.get(f) == final]
    if not any(f in source for f in fields):
        raise ChatTemplateError(
            f'continue_final_message is set to "{field}" but this is not an accepted field '
            "in the chat_template"
        )
    if isinstance(final, (list, tuple)):
        for block in reversed(final):
            if isinstance(block, dict) and "text" in block:
                text = block["text"]
                block["text"] = text + CONTINUE_TAG
                return str.__str__(text)
        raise ChatTemplateError(
            "continue_final_message is set but we could not find any text to continue in "
            "the final message!"
        )
    for f in fields:
        last[f] = last[f] + CONTINUE_TAG
    return str.__str__(final)


def cut_at_tag(
    text: str, spans: Spans, generation: GenerationSpans, final: str
) -> tuple[str, Spans, GenerationSpans]:
    """transformers' cut after the continued message (its checks and messages kept)."""
    if final.strip() not in text or CONTINUE_TAG.strip() not in text:
        raise ChatTemplateError(
            "continue_final_message is set but the final message does not appear in the chat "
            "after applying the chat template! This can happen if the chat template deletes "
            "portions of the final message. Please verify the chat template and final message "
            "in your chat to ensure they are compatible. Final message to continue: "
            + final.strip()
        )
    at = text.rindex(CONTINUE_TAG.strip())
    cut = at if text[at : at + len(CONTINUE_TAG)] == CONTINUE_TAG else len(text[:at].rstrip())
    return (
        text[:cut],
        clipped(spans, 0, cut),
        [(a, min(b, cut)) for a, b in generation if a < cut],
    )
