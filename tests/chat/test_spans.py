"""Content spans survive the string operations and Jinja constructs chat templates use.

Each case checks exact positions: the characters a span covers in the result are the
content characters that landed there, and nothing else.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jinja2")

from tokenpact.chat.jinja_env import GENERATION_OWNER, compile_template, tojson  # noqa: E402
from tokenpact.chat.spans import SpanStr, concat, spans_of, track  # noqa: E402


def covered(value: str) -> list[tuple[int, str]]:
    """``(owner, text)`` of every span of ``value``."""
    return [(o, value[a:b]) for a, b, o in spans_of(value)]


def render(source: str, **context: object) -> tuple[str, list[tuple[int, str]]]:
    text = ""
    spans: list[tuple[int, int, int]] = []
    for piece in compile_template(source).generate(**context):
        spans += [(a + len(text), b + len(text), o) for a, b, o in spans_of(piece)]
        text += piece
    return text, [(o, text[a:b]) for a, b, o in spans]


def test_track_and_plain_results() -> None:
    s = track("abc", 7)
    assert isinstance(s, SpanStr) and s == "abc" and covered(s) == [(7, "abc")]
    assert type(track("", 7)) is str  # empty content has nothing to track
    assert covered("x" + s + "y") == [(7, "abc")]
    assert ("x" + s + "y")[0:2] == "xa" and covered(("x" + s + "y")[0:2]) == [(7, "a")]
    assert type(s[5:]) is str  # no content left: plain string


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (lambda s: s.strip(), [(1, "a b")]),
        (lambda s: s.lstrip(), [(1, "a b  ")]),
        (lambda s: s.rstrip(), [(1, "  a b")]),
        (lambda s: s.strip(" a"), [(1, "b")]),
        (lambda s: s.split()[1], [(1, "b")]),
        (lambda s: s.split(" ")[3], [(1, "b")]),
        (lambda s: s.rsplit(None, 1)[0], [(1, "  a")]),
        (lambda s: s.partition("a")[2], [(1, " b  ")]),
        (lambda s: s.replace("a", "<A>"), [(1, "  "), (1, " b  ")]),
        (lambda s: s.upper(), [(1, "  A B  ")]),
        (lambda s: s[::-1], [(1, "  b a  ")]),
        (lambda s: s[-3], [(1, "b")]),
        (lambda s: s * 2, [(1, "  a b  "), (1, "  a b  ")]),
    ],
)
def test_string_operations_keep_exact_spans(op, expected) -> None:
    assert covered(op(track("  a b  ", 1))) == expected


def test_splitlines_and_removeprefix() -> None:
    s = track("one\r\ntwo\nthree", 2)
    assert [covered(x) for x in s.splitlines()] == [[(2, "one")], [(2, "two")], [(2, "three")]]
    assert [covered(x) for x in s.splitlines(True)][0] == [(2, "one\r\n")]
    assert covered(s.removeprefix("one")) == [(2, "\r\ntwo\nthree")]


def test_concat_mixes_owners_in_order() -> None:
    out = concat(["<", track("a", 0), "|", track("bc", 1), ">"])
    assert out == "<a|bc>" and covered(out) == [(0, "a"), (1, "bc")]


def test_jinja_constructs_keep_spans() -> None:
    source = (
        "{% set ns = namespace(acc='') %}"
        "{% for m in messages %}"
        "{% set ns.acc = ns.acc + m.content %}"
        "{{ '<u>' + m.content|trim ~ '</u>' }}"
        "{% set block %}[{{ m.content.split('|')[-1] }}]{% endset %}{{ block }}"
        "{% endfor %}"
        "{% macro wrap(x) %}({{ x }}){% endmacro %}{{ wrap(ns.acc) }}"
        "{{ messages|map(attribute='content')|join(',') }}"
    )
    messages = [{"content": track(" x|y ", 0)}, {"content": track("z", 1)}]
    text, spans = render(source, messages=messages)
    assert text == "<u>x|y</u>[y ]<u>z</u>[z]( x|y z) x|y ,z"
    assert spans == [
        (0, "x|y"),
        (0, "y "),
        (1, "z"),
        (1, "z"),
        (0, " x|y "),
        (1, "z"),
        (0, " x|y "),
        (1, "z"),
    ]


def test_generation_blocks_are_marked() -> None:
    text, spans = render(
        "{% for m in messages %}<a>{% generation %}{{ m.content }}</e>{% endgeneration %}"
        "{% endfor %}",
        messages=[{"content": track("hi", 0)}],
    )
    assert text == "<a>hi</e>"
    assert (GENERATION_OWNER, "hi</e>") in spans and (0, "hi") in spans


def test_tojson_locates_tracked_strings() -> None:
    args = {"city": track('Pa"ris', 3), "n": 2, "tags": ["x", track("y", 4)]}
    out = tojson(args)
    assert out == '{"city": "Pa\\"ris", "n": 2, "tags": ["x", "y"]}'
    assert covered(out) == [(3, 'Pa\\"ris'), (4, "y")]
    assert covered(tojson(args, indent=2, sort_keys=True)) == [(3, 'Pa\\"ris'), (4, "y")]


def test_sandbox_and_helpers() -> None:
    from jinja2.exceptions import SecurityError, TemplateError

    with pytest.raises(TemplateError, match="nope"):
        render("{{ raise_exception('nope') }}")
    with pytest.raises(SecurityError):
        render("{% set ns = namespace(_x=1) %}")
    text, _ = render(
        "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    )
    assert text == "012"
    assert render("{{ strftime_now('%Y')|length }}")[0] == "4"
