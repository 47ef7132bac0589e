"""The sandbox's fast paths give what plain Jinja gives: ``+`` chains compiled to one
call (text, spans, errors and size bounds as the left fold), and positional macro
calls that skip ``Macro.__call__``'s argument binding (defaults, callers, keywords)."""

from __future__ import annotations

from typing import Any

import jinja2
import jinja2.sandbox
import pytest

from tokenpact.chat import limits
from tokenpact.chat.jinja_env import SpanEnvironment, render_context
from tokenpact.chat.limits import TemplateLimitError, TemplateLimits
from tokenpact.chat.spans import SpanStr, concat, spans_of, track

PLAIN = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)


def ours(source: str, **context: Any) -> str:
    limits.start(TemplateLimits())
    template = SpanEnvironment().from_string(source)
    context = {**template.globals, **context}
    return concat(list(template.root_render_func(template.new_context(context, shared=True))))


SOURCES = [
    "{{ '<u>' + a + '\\n' + b + '</u>' + '\\n' }}",
    "{{ a + (b + '!') + a }}",
    "{{ 1 + 2 + 3 }}|{{ [1] + [2] + [3] }}|{{ 1.5 + 2 }}",
    "{% set ns = namespace(s='') %}{% for x in [a, b, a] %}{% set ns.s = ns.s + x + ',' %}"
    "{% endfor %}{{ ns.s }}",
    "{% macro m(x, y='d', z=none) %}[{{ x }}{{ y }}{{ z }}]{% endmacro %}"
    "{{ m(a) }}{{ m(a, b) }}{{ m(a, b, 'z') }}{{ m(a, z=b) }}{{ m(x=b) }}",
    "{% macro box() %}<{{ caller() }}>{% endmacro %}{% call box() %}{{ a + b }}{% endcall %}",
    "{% macro v() %}{{ varargs|length }}{{ kwargs|length }}{% endmacro %}{{ v(1, 2, k=3) }}",
    "{% macro c(x, caller=none) %}{{ x }}{{ caller() if caller else '-' }}{% endmacro %}"
    "{{ c(a) }}{% call c(b) %}x{% endcall %}",
    # loop variables, str methods, trim and namespaces read without the sandbox's lookup
    "{% for x in [a, b, a] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
    "{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.depth }}{{ loop.depth0 }}"
    "{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{{ a.startswith('a') }}{{ b.endswith('d') }}{{ a.upper() }}{{ (a + ' x').split(' ') }}"
    "{{ ('  ' + b + ' ')|trim }}|{{ ('-' + a + '-')|trim('-') }}|{{ 3|trim }}|{{ a.nope }}",
    "{% set ns = namespace(x=1, y=a) %}{% set m = namespace({'k': b}, z=2) %}"
    "{% set ns.x = ns.x + 1 %}{{ ns.x }}{{ ns.y }}{{ m.k }}{{ m.z }}",
    # subscripts of plain dicts: present, missing, dict attributes, unhashable, non-str
    "{% set d = {'role': a, 1: b, 'items': 'x'} %}{{ d['role'] }}{{ d[1] }}{{ d['items'] }}"
    "{{ d['tools'] is defined }}{{ d['nope'] }}|{{ d['keys'] is defined }}{{ d[2] is defined }}"
    "{{ d[(1, 2)] is defined }}|{{ {}['get'] is defined }}{{ [a, b][1] }}{{ a[0] }}",
]


@pytest.mark.parametrize("source", SOURCES)
def test_same_text_as_plain_jinja(source: str) -> None:
    a, b = track("ab", 0), track("cd", 1)
    assert ours(source, a=a, b=b) == PLAIN.from_string(source).render(a="ab", b="cd")


def test_subscript_errors_match_the_sandbox() -> None:
    for source in ("{{ {}[[1]] }}", "{{ {'a': 1}['__class__'] }}", "{{ {}['x'].y }}"):
        try:
            expected: object = PLAIN.from_string(source).render()
        except Exception as exc:  # noqa: BLE001 - compared below
            expected = type(exc)
        try:
            got: object = ours(source)
        except Exception as exc:  # noqa: BLE001 - compared above
            got = type(exc)
        assert got == expected, source


def test_plus_chain_keeps_spans_of_the_fold() -> None:
    a, b = track("ab", 0), track("cd", 1)
    out = ours("{{ '<u>' + a + '\\n' + b + '</u>' }}", a=a, b=b)
    folded = "<u>" + a + "\n" + b + "</u>"
    assert type(out) is SpanStr and out == folded
    assert spans_of(out) == spans_of(folded) == ((3, 5, 0), (6, 8, 1))


def test_plus_chain_errors_and_bounds() -> None:
    with pytest.raises(TypeError):
        ours("{{ 'a' + 1 + 'b' }}")
    with pytest.raises(jinja2.UndefinedError):
        ours("{{ 'a' + missing.x + 'b' }}")
    limits.start(TemplateLimits(max_output_chars=10))
    template = SpanEnvironment().from_string("{{ a + a + a }}")
    with pytest.raises(TemplateLimitError):
        list(template.root_render_func(template.new_context({"a": "abcd"}, shared=True)))
    template = SpanEnvironment().from_string("{{ (a + a + a)|length }}")
    with pytest.raises(TemplateLimitError):
        list(template.root_render_func(template.new_context({"a": ["x"] * 4}, shared=True)))


def test_trimmed_content_keeps_its_owner() -> None:
    a, b = track("  ab \n", 0), track("cd", 1)
    out = ours("{{ a|trim }}|{{ (a + b)|trim }}|{{ ('  ' + a)|trim }}", a=a, b=b)
    assert out == "ab|ab \ncd|ab"
    assert spans_of(out) == ((0, 2, 0), (3, 7, 0), (7, 9, 1), (10, 12, 0))


def test_render_context_is_jinjas_shared_context() -> None:
    template = SpanEnvironment().from_string("{{ a }}{% set b = 1 %}")
    variables = {**template.globals, "a": "x"}
    for _ in range(2):  # the global names are computed on the first call, then reused
        ours, theirs = render_context(template, variables), template.new_context(variables, True)
        assert vars(ours).keys() == vars(theirs).keys()
        for name in ("parent", "vars", "name", "blocks", "globals_keys", "exported_vars"):
            assert getattr(ours, name) == getattr(theirs, name), name
        assert type(ours.globals_keys) is set and ours.parent is variables
        assert vars(ours.eval_ctx) == vars(theirs.eval_ctx)
        assert concat(list(template.root_render_func(ours))) == "x"
