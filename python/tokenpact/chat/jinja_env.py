"""The sandboxed Jinja environment for Hugging Face chat templates, with content tracking.

It provides what ``transformers`` gives templates (``raise_exception``, ``strftime_now``,
``tojson`` with its options, loop controls, ``namespace``, ``dict``, ``{% generation %}``)
and keeps the ownership spans of :class:`~tokenpact.chat.spans.SpanStr` values through
Jinja's own joins: every render buffer is joined by ``environment.concat`` (replaced
here), ``~`` is compiled to a span-keeping join, and ``tojson`` and ``join`` locate the
content they print.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.filters import make_attrgetter
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import ChatTemplateError
from .spans import SpanStr, concat, make, spans_of, str_join

_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")

GENERATION_OWNER = -2
"""Owner of the spans that mark ``{% generation %}`` output (assistant-mask source)."""


class _SpanCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a join that keeps spans (Jinja's ``str_join`` drops them)."""

    @optimizeconst
    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:
        self.write("environment.span_str_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class GenerationExtension(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks the assistant-generated output."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_mark_generation")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _mark_generation(self, caller: Callable[[], str]) -> str:
        text = caller()
        if not text:
            return text
        return make(text, (*spans_of(text), (0, len(text), GENERATION_OWNER)))


class _TemplateNamespace(jinja2.utils.Namespace):
    """``namespace()`` that refuses underscore attributes (no path to CPython internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's signature trick
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore attributes on a namespace ({name!r})"
            )


class _TemplateDict:
    """``dict(...)`` for templates without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _string_leaves(value: Any, sort_keys: bool) -> Iterable[str]:
    """Strings of ``value`` in the order ``json.dumps`` writes them (keys, then values)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        items = sorted(value.items()) if sort_keys else value.items()
        for key, item in items:
            if isinstance(key, str):
                yield key
            yield from _string_leaves(item, sort_keys)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _string_leaves(item, sort_keys)


def _has_spans(value: Any) -> bool:
    if type(value) is SpanStr:
        return True
    if isinstance(value, Mapping):
        return any(_has_spans(k) or _has_spans(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_spans(v) for v in value)
    return False


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``transformers``' ``tojson`` (no HTML escaping), locating tracked strings in the output.

    Each string is found in the order ``json.dumps`` writes it; only structure, numbers and
    literals lie between two strings, so the search cannot match anything else. A tracked
    string's escaped body is owned as a whole by its first owner, because escaping moves
    characters.
    """
    text = json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )
    if not _has_spans(value):
        return text
    spans = []
    cursor = 0
    for leaf in _string_leaves(value, sort_keys):
        encoded = json.dumps(leaf, ensure_ascii=ensure_ascii)
        at = text.find(encoded, cursor)
        if at < 0:
            # Unreachable for JSON-able input; fail safe by owning the whole output.
            owner = next((o for x in _string_leaves(value, sort_keys) for *_, o in spans_of(x)), -1)
            return make(text, ((0, len(text), owner),) if owner >= 0 else ())
        owners = [o for _, _, o in spans_of(leaf) if o >= 0]
        if owners and len(encoded) > 2:
            spans.append((at + 1, at + len(encoded) - 1, owners[0]))
        cursor = at + len(encoded)
    return make(text, spans)


@jinja2.pass_environment
def _join(
    environment: jinja2.Environment,
    value: Iterable[Any],
    d: str = "",
    attribute: str | int | None = None,
) -> str:
    """Jinja's ``join`` filter, keeping spans."""
    if attribute is not None:
        value = map(make_attrgetter(environment, attribute), value)
    out: list[str] = []
    for k, item in enumerate(value):
        if k:
            out.append(str(d))
        out.append(str(item))
    return concat(out)


class SpanEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox ``transformers`` uses, with span-keeping joins."""

    code_generator_class = _SpanCodeGenerator

    def __init__(self) -> None:
        super().__init__(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[GenerationExtension, jinja2.ext.loopcontrols],
        )
        self.filters["tojson"] = tojson
        self.filters["join"] = _join
        self.globals["raise_exception"] = _raise_exception
        self.globals["strftime_now"] = _strftime_now
        self.globals["dict"] = _TemplateDict()
        self.globals["namespace"] = _TemplateNamespace

    # Compiled templates call these through the module global ``environment``.
    concat = staticmethod(concat)  # type: ignore[assignment]
    span_str_join = staticmethod(str_join)


def compile_template(source: str) -> jinja2.Template:
    """Compile a chat template in the span-tracking sandbox."""
    if not isinstance(source, str) or not source:
        raise ChatTemplateError("the chat template must be a non-empty string of Jinja source")
    try:
        return SpanEnvironment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ChatTemplateError(
            f"the chat template does not compile (line {exc.lineno}: {exc.message}); "
            "fix the template source"
        ) from exc


def has_generation_blocks(source: str) -> bool:
    """Whether the template marks assistant output with ``{% generation %}``."""
    return _GENERATION_TAG.search(source) is not None
