"""The Jinja compatibility renderer: a chat template run by Jinja in the sandbox of
:mod:`tokenpact.chat.jinja_env`.

The native template engine (:func:`tokenpact.chat.template_pass.render_pass`) renders
every template it models, and exactly what this renderer renders; this module runs only
what it declines (a construct, value or error it does not model) and is the oracle the
tests compare the native engine with. Nothing else renders with Jinja.

One run is bounded by the template's limits (loop steps, output size, recursion); the
pieces it yields that are :class:`~tokenpact.chat.spans.SpanStr` carry the content spans
(and ``{% generation %}`` spans), which are shifted to their place in the joined output.
Any failure becomes a typed error.
"""

from __future__ import annotations

from typing import Any

import jinja2

from ..errors import TokenpactError
from .errors import ChatTemplateError
from .jinja_env import GENERATION_OWNER, render_context
from .limits import TemplateLimitError, TemplateLimits, too_large
from .limits import start as start_budget
from .spans import SpanStr

Spans = list[tuple[int, int, int]]
GenerationSpans = list[tuple[int, int]]


def run_template(
    template: jinja2.Template, context: dict[str, Any], limits: TemplateLimits
) -> tuple[str, Spans, GenerationSpans]:
    """The output of one run, its content spans ``(start, end, owner)`` (unsorted) and
    its ``{% generation %}`` spans, in codepoints."""
    start_budget(limits)
    max_chars = limits.max_output_chars
    parts: list[str] = []
    size = 0
    jinja_context = render_context(template, context)
    try:
        for piece in template.root_render_func(jinja_context):
            parts.append(piece)
            size += len(piece)
            if size > max_chars:
                raise too_large(size, "an output")
    except TokenpactError:
        raise
    except jinja2.TemplateError as exc:
        raise ChatTemplateError(f"the chat template failed: {exc}") from exc
    except RecursionError as exc:
        raise TemplateLimitError(
            "the chat template recursed too deeply (a macro or recursive loop that "
            "does not terminate); fix the template"
        ) from exc
    except MemoryError as exc:
        raise TemplateLimitError(
            "the chat template ran out of memory building its output; lower "
            "TemplateLimits(max_output_chars=...) or fix the template"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - template code raising a Python error
        raise ChatTemplateError(f"the chat template failed: {type(exc).__name__}: {exc}") from exc
    finally:
        # A template that defines a macro leaves a reference cycle: the context's
        # variables hold the macro, whose closure holds the context. Without this the
        # whole render (context, messages, spans) waits for the cyclic garbage collector,
        # which then ran every few renders (Qwen 3.5: 41 objects per render, ~12 us of
        # collector time per two-message render); emptied, it is freed by reference counts.
        jinja_context.vars.clear()
    # spans.concat, without building the SpanStr that would be turned back into a plain
    # str here: the output's spans are collected directly.
    text = "".join(parts)
    spans: Spans = []
    generation: GenerationSpans = []
    pos = 0
    for part in parts:
        if type(part) is SpanStr:
            for a, b, o in part._spans:
                if o == GENERATION_OWNER:
                    generation.append((a + pos, b + pos))
                else:
                    spans.append((a + pos, b + pos, o))
        pos += len(part)
    return text, spans, generation
