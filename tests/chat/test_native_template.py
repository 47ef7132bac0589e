"""The native template engine renders exactly what the Python engine renders, or declines.

Two checks of one rule (``tokenpact.chat.template_pass.render_pass``): where the native
engine returns a render, its text and content spans equal the Python engine's; where the
Python engine raises (a template's ``raise_exception``, a type error, a limit), the native
engine declines, so the Python engine raises the same error. Real templates run end to end
with the engine on and off; synthetic templates exercise each modelled operation on
generated content (hypothesis).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenpact import _native
from tokenpact.chat import jinja_compat, template_pass
from tokenpact.chat.jinja_env import compile_template
from tokenpact.chat.limits import TemplateLimits
from tokenpact.chat.spans import SpanStr, track

from . import template_fuzz
from .chat_data import CHAT_MODELS, model_dir
from .conversations import WEATHER_TOOL, conversations

LIMITS = TemplateLimits()


class Counting:
    """A native template that counts how often it rendered and declined."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.rendered = 0
        self.declined: list[str] = []

    def render(self, *args: Any) -> Any:
        out = self.inner.render(*args)
        if type(out) is tuple:
            self.rendered += 1
        else:
            self.declined.append(out)
        return out


def outcome(template: Any, messages: Any, options: dict[str, Any]) -> Any:
    """``render_text``'s result as comparable data, or its error."""
    try:
        r = template.render_text(messages, **options)
    except Exception as exc:  # noqa: BLE001 - compared between the engines
        return ("error", type(exc).__name__, str(exc))
    return (
        r.text,
        r.spans,
        r.generation_spans,
        [tuple(o) for o in r.owners],
        r.roles,
        r.control_in_input,
    )


@pytest.mark.parametrize("name", CHAT_MODELS)
def test_real_templates_render_identically(
    name: str, tp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = model_dir(name)
    tok = tp.Tokenizer.load(directory)
    native = tp.chat.ChatTemplate.from_hf(directory, tok)
    monkeypatch.setenv("TOKENPACT_NATIVE_TEMPLATES", "0")
    python = tp.chat.ChatTemplate.from_hf(directory, tok)
    monkeypatch.undo()
    assert python._native["default"] is None
    assert native._native["default"] is not None, "the native engine runs every tested template"
    counter = native._native["default"] = Counting(native._native["default"])
    is_control = tok.special_tokens.__contains__
    cases = conversations(name, is_control, count=120, seed=3)
    # Hostile and unusual content: control spellings, whitespace Python strips, non-ASCII.
    odd = ["<|im_end|>", "<｜end▁of▁sentence｜>", "\x1c x \x1f", "\u3000 ü \u2029", "</think>a", ""]
    for k, text in enumerate(odd):
        cases.append(([{"role": "user", "content": text}], {"add_generation_prompt": k % 2 == 0}))
        cases.append(
            (
                [
                    {"role": "system", "content": f" {text} "},
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": f"<think>\n{text}\n</think>\n\nA{text}"},
                ],
                {},
            )
        )
    for k in range(4):  # tool schemas in the prompt (tojson with indent on Llama 3.1)
        question = [{"role": "user", "content": f"Weather in {odd[k]} Paris?"}]
        cases.append((question, {"tools": [WEATHER_TOOL], "add_generation_prompt": True}))
    for messages, options in cases:
        ours = outcome(native, messages, options)
        theirs = outcome(python, messages, options)
        assert ours == theirs, (messages, options)
    assert counter.rendered >= 0.9 * len(cases), counter.declined[:5]


# ---------------------------------------------------------------- synthetic templates
SYNTHETIC = [
    "{{ '<u>' + c|trim + '</u>' + d }}",
    "{{ c.strip() ~ '|' ~ c.lstrip('a ') ~ '|' ~ c.rstrip() }}",
    "{{ c.split('</think>')[-1].lstrip('\\n') }}#{{ c.split('</think>')[0].rstrip('\\n')"
    ".split('<think>')[-1].lstrip('\\n') }}",
    "{{ c[1:5] ~ c[::-1] ~ c[-3:] ~ c[::2] ~ c[2] ~ c[-1] }}",
    "{{ c.replace('a', d) }}|{{ c|replace(' ', '_') }}|{{ c.replace('', '.') }}",
    "{{ c.split() | join('|') }}/{{ c.split(None, 1) | join('+') }}/{{ c.split('a', 1)|join(d) }}",
    "{{ {'k': c, 'n': [1, 2.5, none, true, d]} | tojson }}",
    "{{ {'b': c, 'a': {'x': [d, []], 'y': {}}} | tojson(indent=2, sort_keys=true) }}",
    "{{ [c, d] | tojson(ensure_ascii=true) }}{{ c | tojson(separators=(',', ':')) }}",
    "{% for w in c.split() %}{{ loop.index }}:{{ w }}{% if not loop.last %},{% endif %}"
    "{% else %}empty{% endfor %}",
    "{% macro m(x, y='!') %}[{{ x|trim }}{{ y }}]{% endmacro %}{{ m(c) }}{{ m(d, y=c) }}",
    "{% set ns = namespace(n=0, s='') %}{% for ch in c %}{% set ns.n = ns.n + 1 %}"
    "{% set ns.s = ns.s + ch %}{% endfor %}{{ ns.n }}{{ ns.s }}",
    "{{ c|length }} {{ c|reverse }} {{ c|first }} {{ c|last }} {{ c.startswith('a') }}"
    " {{ 'x' in c }} {{ c == d }} {{ c < d }} {{ c is string }} {{ c|upper }}",
    "{{ c * 2 }}{{ (c + d)[:3] }}{% if c %}T{% else %}F{% endif %}{{ c or d }}{{ c and d }}",
    "{% set x %}<{{ c }}>{% endset %}{{ x|trim }}{{ x|length }}",
    "{{ c.removeprefix('a') ~ c.removesuffix('b') ~ c.find('a') }}{{ ', '.join([c, d]) }}",
    "{% for k, v in {'a': c, 'b': d}|items %}{{ k }}={{ v }};{% endfor %}"
    "{{ [c, d]|select('equalto', d)|list|length }}{{ [{'a': c}]|map(attribute='a')|join }}",
    "{{ n }} {{ n + 1 }} {{ n * 3 }} {{ n // 7 }} {{ n % 5 }} {{ -n }} {{ n / 4 }} {{ f }}"
    " {{ [n, f] }} {{ f * 2 }} {{ n is odd }} {{ range(3)|list }} {{ n > f }}",
    "{{ c|string }}{{ none|string }}{{ u|default('dflt') }}{{ ''|default('e', true) }}"
    "{{ u }}{{ u|length }}{{ u is defined }}{{ c['x'] is defined }}{{ none.x }}",
    "{% if c is mapping or c is iterable %}I{% endif %}{% if n is number %}N{% endif %}"
    "{{ c|tojson|safe }}{{ ([1] + [2])|join(',') }}",
    "{% for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}"
    "{% if i == 2 %}{% break %}{% endif %}{% endfor %}{{ raise_exception('x') if n > 1000 }}",
    # case mapping (non-ASCII included), filter, call and generation blocks
    "{{ c|lower }}|{{ c.upper() }}|{{ c|capitalize }}|{{ (d ~ c).capitalize() }}"
    "|{{ c[::-1]|upper }}",
    "{% filter upper %}<{{ c }}>{% endfilter %}{% filter trim|replace('a', d) %} {{ c }} "
    "{% set q = 1 %}{% endfilter %}{{ q }}{% set s | trim | upper %} {{ d }} {% endset %}{{ s }}",
    "{% macro box(x) %}[{{ x }}|{{ caller() }}|{{ caller() }}]{% endmacro %}"
    "{% call box(c) %}{{ d|trim }}{% endcall %}{% for i in [1, 2] %}{% call box(i) %}{{ i }}"
    "{{ c }}{% endcall %}{% endfor %}",
    "{% macro m(a, caller=none) %}{{ a }}{{ caller(a) if caller else '-' }}{% endmacro %}"
    "{{ m(c) }}{% call(v) m(d) %}<{{ v ~ c }}>{% endcall %}"
    "{% macro k() %}{{ caller is defined }}{% endmacro %}{{ k() }}",
    # a filter block reads its filters' names in the enclosing scope, a set block in its own
    "{% filter replace('a', d) %}a{% endfilter %}{% set s | replace('a', c) %}a{% endset %}"
    "{{ s }}{% set c = 'C' %}{% set d = 'D' %}{{ c ~ d }}",
    "<a>{% generation %}{{ c }}</e>{% endgeneration %}{% generation %}{% endgeneration %}"
    "{% set g %}{% generation %}{{ d }}{% endgeneration %}{% endset %}{{ g ~ g[1:] }}"
    "{{ g[::-1] }}{% generation %}{% generation %}{{ c }}{% endgeneration %}!{% endgeneration %}",
]

PIECES = list("ab xy\n\t</>think_") + ["\x1c", "\u3000", "ü", "é", "中", "😀", "\r\n", "<|im_end|>"]
PIECES += ["ß", "Σ", "İ", "ა", "ﬁ", "ı", "Ǆ", "\u0345", "ǅ"]  # case mappings
TEXT = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@pytest.fixture(scope="module")
def compiled() -> list[tuple[Any, Any]]:
    out = []
    for source in SYNTHETIC:
        template = compile_template(source)
        out.append((template, template_pass.native_template(source, template)))
    return out


def test_synthetic_templates_compile_natively(compiled: list[tuple[Any, Any]]) -> None:
    declined = [SYNTHETIC[k] for k, (_, native) in enumerate(compiled) if native is None]
    assert declined == []


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    c=TEXT,
    d=TEXT,
    n=st.integers(min_value=-(10**6), max_value=10**6),
    f=st.floats(allow_nan=False, allow_infinity=False, width=64),
    plain=st.booleans(),
)
def test_synthetic_templates_agree(
    compiled: list[tuple[Any, Any]], c: str, d: str, n: int, f: float, plain: bool
) -> None:
    content = c if plain else track(c, 0)
    context = {"c": content, "d": track(d, 1), "n": n, "f": f}
    rendered = 0
    for template, native in compiled:
        out = native.render(dict(template.globals, **context), 1000, 10_000)
        try:
            text, spans, generation = jinja_compat.run_template(
                template, dict(template.globals, **context), LIMITS
            )
        except Exception as exc:  # noqa: BLE001 - the native engine must have declined
            assert type(out) is str, (template, exc)
            continue
        if type(out) is tuple:
            rendered += 1
            assert out == (text, sorted(spans), generation), template
    assert rendered >= len(compiled) // 2


def test_declines_instead_of_raising() -> None:
    cases = {
        "{{ raise_exception('no') }}": "raised",
        "{{ x.y }}": "attribute",
        "{{ 'a' + 1 }}": "Add",
        "{{ c|wordcount }}": "filter",
        "{% for i in range(10) %}{% for j in range(10) %}{% endfor %}{% endfor %}": "limit",
    }
    for source, reason in cases.items():
        template = compile_template(source)
        native = template_pass.native_template(source, template)
        out = native.render(dict(template.globals, c="a"), 50, 100)
        assert type(out) is str and reason in out, (source, out)


def test_allocations_are_bounded_before_they_are_made() -> None:
    """Even under a huge output limit, a template cannot make the engine allocate
    gigabytes in one operation: replace, join and repetition decline first."""
    for source in (
        "{{ (c * 20000).replace('', c * 20000) }}",
        "{{ (c * 50000).replace('a', c * 50000) }}",
        "{{ (c * 20000).join(range(20000)|map('string')) }}",
        "{{ c * 1000000000 }}",
    ):
        template = compile_template(source)
        native = template_pass.native_template(source, template)
        out = native.render(dict(template.globals, c="a"), 10**6, 10**12)
        assert "size limit" in out, (source, out)


def test_unmodelled_templates_are_not_compiled() -> None:
    for source in (
        "{% for x in y recursive %}{{ loop(x) }}{% endfor %}",
        "{% include 'other' %}",
    ):
        with pytest.raises(ValueError):
            _native.NativeChatTemplate(source, SpanStr, {})


WHITESPACE = [
    "{% if x %}", "{% endif %}", "{%- if x %}", "{% if x -%}", "{%+ if x %}", "{% if x +%}",
    "{% endif -%}", "{%- endif %}", "{{ x }}", "{{- x }}", "{{ x -}}", "{# c #}", "{#- c #}",
    "{# c -#}", "\n", "  ", "\t", " \n", "a", "b\n", "\n\n", "{% raw %}{{ x }}{% endraw %}",
    "{% for i in y %}", "{% endfor %}", "{%- for i in y -%}", "{%- endfor -%}", "{{ i }}",
    "   {% set z = 1 %}\n", "{% set w %}q\n{% endset %}{{ w }}", "\r\n", "\r",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from(WHITESPACE), min_size=1, max_size=10),
    x=st.booleans(),
    y=st.integers(0, 2),
)
def test_whitespace_control_agrees(parts: list[str], x: bool, y: int) -> None:
    """trim_blocks, lstrip_blocks, +/- markers, comments, raw blocks and newlines: the
    native engine's text is Jinja's (a template with carriage returns is left to Jinja,
    whose lexer turns them into newlines)."""
    source = "".join(parts)
    try:
        template = compile_template(source)
    except Exception:  # noqa: BLE001 - unbalanced blocks
        return
    native = template_pass.native_template(source, template)
    if "\r" in source:
        assert native is None
        return
    assert native is not None
    context = dict(template.globals, x=x, y=[1, 2][:y])
    out = native.render(dict(context), 1000, 100_000)
    assert out == (jinja_compat.run_template(template, context, LIMITS)[0], [], [])


def test_literals_read_as_python_reads_them() -> None:
    source = (
        "{{ 0x1E }}|{{ 0b11 }}|{{ 0o17 }}|{{ 1_000 }}|{{ 1e3 }}|{{ 2.5E-3 }}|{{ 'a\\tb\\x41' }}"
    )
    template = compile_template(source)
    out = template_pass.native_template(source, template).render(dict(template.globals), 9, 99)
    assert out == ("30|3|15|1000|1000.0|0.0025|a\tbA", [], [])
    assert out[0] == jinja_compat.run_template(template, dict(template.globals), LIMITS)[0]


def test_switched_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    template = compile_template("{{ c }}")
    monkeypatch.setenv("TOKENPACT_NATIVE_TEMPLATES", "0")
    assert template_pass.native_template("{{ c }}", template) is None
    monkeypatch.delenv("TOKENPACT_NATIVE_TEMPLATES")
    assert template_pass.native_template("{{ c }}", template) is not None


def test_strftime_now_is_the_local_date() -> None:
    source = "{{ strftime_now('%d %b %Y, %A %B %j %H:%M %p %y') }}"
    template = compile_template(source)
    native = template_pass.native_template(source, template)
    for _ in range(3):  # the minute may turn between the two renders
        ours = native.render(dict(template.globals), 100, 1000)
        theirs = jinja_compat.run_template(template, dict(template.globals), LIMITS)
        if ours == (theirs[0], [], []):
            return
    pytest.fail(f"{ours!r} != {theirs!r}")


MUTATIONS = ["{%", "%}", "{{", "}}", "-", "|", ".", "'", '"', "(", ")", "[", "]", " ", "x", "\\"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Jinja on a broken escape
@settings(max_examples=120, deadline=None)
@given(
    model=st.sampled_from(CHAT_MODELS),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 3), st.sampled_from(MUTATIONS)), max_size=4
    ),
)
def test_mutated_templates_compile_or_decline_and_agree(
    model: str, edits: list[tuple[float, int, str]]
) -> None:
    """Fuzzing the parser with broken real templates: the native engine compiles or
    declines (ValueError), never crashes, and agrees with Jinja where both run."""
    source = (model_dir(model) / "tokenizer_config.json").read_text(encoding="utf-8")
    import json

    config = json.loads(source)
    text = config.get("chat_template")
    if not isinstance(text, str):
        jinja = model_dir(model) / "chat_template.jinja"
        text = jinja.read_text(encoding="utf-8")
    for where, cut, piece in edits:
        at = int(where * len(text))
        text = text[:at] + piece + text[at + cut :]
    try:
        template = compile_template(text)
    except Exception:  # noqa: BLE001 - Jinja rejects it; the native engine must not crash
        try:
            _native.NativeChatTemplate(text, SpanStr, {})
        except ValueError:
            pass
        return
    native = template_pass.native_template(text, template)
    if native is None:
        return
    context = dict(
        template.globals,
        messages=[
            {"role": "system", "content": track(" sys ", 0)},
            {"role": "user", "content": track("hi </think>", 1)},
            {"role": "assistant", "content": track("<think>r</think>ok", 2)},
        ],
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token="</s>",
    )
    out = native.render(dict(context), 10_000, 100_000)
    try:
        theirs = jinja_compat.run_template(template, dict(context), LIMITS)
    except Exception:  # noqa: BLE001 - then the native engine declined
        assert type(out) is str
        return
    if type(out) is tuple:
        assert out == (theirs[0], sorted(theirs[1]), theirs[2])


def test_batches_render_on_workers_and_fall_back_per_record(deepseek: Any, tp: Any) -> None:
    """render_batch/render_columns leave the native render to the worker threads; a
    record the engine declines is rendered with Jinja instead, and a template error
    raises as the serial loop raises it."""
    source = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content|trim }}"
        "{% if m.content == 'odd' %}{{ m.content|wordcount }}{% endif %}"
        "{% if m.content == 'fail' %}{{ raise_exception('boom') }}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<|Assistant|>{% endif %}"
    )
    template = tp.chat.ChatTemplate(source, deepseek.tok)
    records = [
        [{"role": "user", "content": f" hi {k} "}, {"role": "assistant", "content": "odd"}]
        if k % 5 == 0
        else [{"role": "user", "content": f"q{k} <｜end▁of▁sentence｜>"}]
        for k in range(40)
    ]
    serial = [template.render(r) for r in records]
    for threads in (1, 2):
        batch = template.render_batch(records, threads=threads)
        assert [c.to_json() for c in batch] == [c.to_json() for c in serial]
        columns = template.render_columns(records, threads=threads)
        assert [c.to_json() for c in columns.to_conversations()] == [c.to_json() for c in serial]
    failing = [*records[:7], [{"role": "user", "content": "fail"}], *records[7:]]
    with pytest.raises(tp.chat.ChatTemplateError, match="boom") as info:
        template.render_batch(failing, threads=2)
    assert "(conversation 7 of the batch)" in str(info.value.__notes__)


def agree(source: str, context: dict[str, Any]) -> bool:
    """Whether the engines agree on ``source`` (True also when Jinja rejects it and the
    native engine declines); False only where the native engine renders differently."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python's SyntaxWarning on `1[0]` and the like
        try:
            template = compile_template(source)
        except Exception:  # noqa: BLE001 - not a template
            return True
    native = template_pass.native_template(source, template)
    if native is None:
        return True
    variables = dict(template.globals, **context)
    out = native.render(dict(variables), 1000, 100_000)
    try:
        text, spans, generation = jinja_compat.run_template(template, dict(variables), LIMITS)
    except Exception:  # noqa: BLE001 - then the native engine must decline
        return type(out) is str
    return type(out) is str or out == (text, sorted(spans), generation)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_expressions_agree(seed: int) -> None:
    rng = random.Random(seed)
    source = "{{ " + template_fuzz.expression(rng) + " }}"
    assert agree(source, template_fuzz.context(rng)), source


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_statements_agree(seed: int) -> None:
    """Loops (break, continue, else), set blocks, macros and names set at the top level
    (which Jinja binds undefined until set, even for a macro called earlier)."""
    rng = random.Random(seed)
    source = template_fuzz.program(rng)
    assert agree(source, template_fuzz.context(rng)), source


def test_a_jinja_compiler_assertion_is_a_typed_error() -> None:
    """jinja2's code generator asserts on a set block whose filter argument is read
    nowhere else; compiling such a template is a ChatTemplateError, not an escaped
    AssertionError."""
    from tokenpact.chat.errors import ChatTemplateError

    with pytest.raises(ChatTemplateError, match="cannot compile"):
        compile_template("{% set s | replace('a', y) %}x{% endset %}{{ s }}")
