"""Template execution stays bounded, and the faster sandbox keeps the sandbox's rules.

Loops, sizes, ranges and recursion end in ``TemplateLimitError`` (a ``ChatTemplateError``
and ``TokenpactError``), Python errors raised by template code in ``ChatTemplateError``;
the cached attribute decisions equal Jinja's own on every (object, attribute) tried.
"""

from __future__ import annotations

import json
import threading
from collections.abc import MutableSequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2.sandbox
import pytest
from click.testing import CliRunner

from tokenpact.chat.jinja_env import SpanEnvironment, _TemplateNamespace
from tokenpact.cli.chat_cmd import chat

MESSAGES = [{"role": "user", "content": "hi"}]


def template(tp: ModuleType, seed_tok: Any, source: str, **limits: int) -> Any:
    return tp.chat.ChatTemplate(source, seed_tok, limits=tp.chat.TemplateLimits(**limits))


HOSTILE = {
    "huge range": "{% for i in range(10**12) %}x{% endfor %}",
    "nested loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "doubling with +": (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
        "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling with ~": (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "string repetition": "{{ 'a' * 10**12 }}",
    "list repetition": "{{ ([1] * 10**12)|length }}",
    "center filter": "{{ 'a'|center(10**12) }}",
    "ljust method": "{{ 'a'.ljust(10**12) }}",
    "huge power": "{{ 7 ** 1000000 }}",
    "recursive macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "recursive loop": (
        "{% set tree = [[1]] %}{% for node in tree recursive %}{{ loop(tree) }}{% endfor %}"
    ),
    "call-block doubling": (
        "{% macro twice() %}{{ caller() }}{{ caller() }}{% endmacro %}"
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
        "{% set s %}{% call twice() %}{{ ns.s }}{% endcall %}{% endset %}"
        "{% set ns.s = s %}{% endfor %}{{ ns.s|length }}"
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_templates_raise_typed_limit_errors(
    name: str, tp: ModuleType, seed_tok: Any
) -> None:
    chat_template = template(tp, seed_tok, HOSTILE[name], max_output_chars=1_000_000)
    with pytest.raises(tp.chat.TemplateLimitError) as caught:
        chat_template.render(MESSAGES)
    assert isinstance(caught.value, tp.chat.ChatTemplateError)
    assert isinstance(caught.value, tp.TokenpactError)


def test_default_iteration_budget_stops_nested_loops(tp: ModuleType, seed_tok: Any) -> None:
    chat_template = tp.chat.ChatTemplate(HOSTILE["nested loops"], seed_tok)
    with pytest.raises(tp.chat.TemplateLimitError, match="1,000,000 loop iterations"):
        chat_template.render(MESSAGES)


def test_budget_is_per_render(tp: ModuleType, seed_tok: Any) -> None:
    source = "{% for m in messages %}{% for c in m.content %}{{ c }}{% endfor %}{% endfor %}"
    chat_template = template(tp, seed_tok, source, max_loop_iterations=12)
    for _ in range(5):  # 1 + 10 iterations each time: never carried over between renders
        assert chat_template.render_text([{"role": "user", "content": "abcdefghij"}]).text == (
            "abcdefghij"
        )
    with pytest.raises(tp.chat.TemplateLimitError):
        chat_template.render_text([{"role": "user", "content": "abcdefghijkl"}])
    assert chat_template.render_text(MESSAGES).text == "hi"  # a failure does not leak


def test_output_limit_covers_the_rendered_text(tp: ModuleType, seed_tok: Any) -> None:
    chat_template = template(tp, seed_tok, "{% for m in messages %}{{ m.content }}{% endfor %}",
                             max_output_chars=100)  # fmt: skip
    assert chat_template.render_text([{"role": "user", "content": "x" * 100}]).text == "x" * 100
    with pytest.raises(tp.chat.TemplateLimitError, match="max_output_chars"):
        chat_template.render_text([{"role": "user", "content": "x" * 101}])


def test_limits_hold_on_every_thread(tp: ModuleType, seed_tok: Any) -> None:
    chat_template = template(tp, seed_tok, HOSTILE["nested loops"], max_loop_iterations=5000)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            chat_template.render(MESSAGES)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 4 and all(isinstance(e, tp.chat.TemplateLimitError) for e in errors)


@pytest.mark.parametrize(
    "source",
    [
        "{{ 1 / 0 }}",
        "{{ messages[0].content + 1 }}",
        "{{ 'x'.encode('rot13') }}",
        "{{ 'abc'.index('z') }}",
    ],
)
def test_python_errors_in_template_code_are_typed(
    source: str, tp: ModuleType, seed_tok: Any
) -> None:
    with pytest.raises(tp.chat.ChatTemplateError):
        tp.chat.ChatTemplate(source, seed_tok).render(MESSAGES)


def test_bad_limits_are_rejected(tp: ModuleType, seed_tok: Any) -> None:
    with pytest.raises(tp.chat.ChatTemplateError, match="positive int"):
        tp.chat.TemplateLimits(max_loop_iterations=0)
    with pytest.raises(tp.chat.ChatTemplateError, match="TemplateLimits"):
        tp.chat.ChatTemplate("x", seed_tok, limits={"max_loop_iterations": 3})  # type: ignore[arg-type]


def test_cli_shows_a_clean_error_for_a_huge_range(tmp_path: Path, seed_tok: Any) -> None:
    seed_tok.save(tmp_path / "tok")
    (tmp_path / "huge.jinja").write_text(HOSTILE["huge range"], encoding="utf-8")
    (tmp_path / "conv.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    args = ["render", "-t", tmp_path / "tok", "--template", tmp_path / "huge.jinja"]
    result = CliRunner().invoke(
        chat, [*map(str, args), "--messages", str(tmp_path / "conv.json")], catch_exceptions=False
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "OverflowError" not in result.output
    assert "range" in result.output and "at most 100,000" in result.output


# --------------------------------------------------------------------------- sandbox rules

SANDBOX_ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ messages.__class__ }}",
    "{{ messages[0].__class__.__init__.__globals__ }}",
    "{{ messages.append(1) }}",
    "{{ messages[0].pop('role') }}",
    "{{ messages[0].clear() }}",
    "{{ messages[0].update({'role': 'system'}) }}",
    "{% set ns = namespace(a=1) %}{{ ns._Namespace__attrs }}",
    "{% set ns = namespace(a=1) %}{% set ns._a = 1 %}",
    "{{ namespace(_a=1) }}",
    "{{ raise_exception.__globals__ }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ '{0.__class__}'.format(messages) }}",
    "{% macro m() %}{% endmacro %}{{ m.__call__.__globals__ }}",
    "{{ dict.__call__.__globals__ }}",
]


@pytest.mark.parametrize("source", SANDBOX_ESCAPES)
def test_sandbox_still_blocks_unsafe_access(source: str, tp: ModuleType, seed_tok: Any) -> None:
    """Each escape either raises (SecurityError when used) or prints the sandbox's empty
    undefined, as Jinja's own sandbox does; nothing of Python's internals comes out, and
    the messages are not mutated."""
    messages = [{"role": "user", "content": "x"}]
    try:
        text = tp.chat.ChatTemplate(source, seed_tok).render_text(messages).text
    except tp.chat.ChatTemplateError:
        text = ""
    for leak in ("class", "function", "built-in", "module", "object at", "0x", "globals"):
        assert leak not in text, text
    assert messages == [{"role": "user", "content": "x"}]


def _probe_objects() -> list[Any]:
    def function() -> None: ...

    def generator() -> Any:
        yield 1

    ns = _TemplateNamespace(a=1)
    return [
        "text", b"bytes", 3, 2.5, None, True, [1], (1,), {"a": 1}, {1}, frozenset({1}),
        function, print, "x".upper, [].append, {}.keys, type, str, generator(),
        function.__code__, ns, range(3), jinja2.sandbox, object(),
    ]  # fmt: skip


_ATTRIBUTES = sorted(
    {name for obj in _probe_objects() for name in dir(obj)}
    | {"mro", "gi_frame", "gi_code", "func_code", "append", "pop", "items", "role", "a"}
)


def test_cached_safety_decisions_equal_jinjas() -> None:
    """The cache is keyed by (type, name); Jinja's uncached answer is the reference."""
    ours = SpanEnvironment()
    reference = jinja2.sandbox.ImmutableSandboxedEnvironment()
    for _ in range(2):  # the second pass reads the cache
        for obj in _probe_objects():
            for name in _ATTRIBUTES:
                assert ours.is_safe_attribute(obj, name, None) == reference.is_safe_attribute(
                    obj, name, None
                ), (type(obj), name)


def test_abc_registration_refreshes_cached_decisions() -> None:
    class Stack:
        def append(self, item: Any) -> None: ...

    env = SpanEnvironment()
    assert env.is_safe_attribute(Stack(), "append", None)  # cached as safe
    MutableSequence.register(Stack)
    assert not env.is_safe_attribute(Stack(), "append", None)  # now a known mutable
