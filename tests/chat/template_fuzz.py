"""Random Jinja expressions and statement lists for the native-engine parity tests.

Each generator draws from a small grammar of what chat templates do (string methods and
filters on tracked content, arithmetic, comparisons, loops with break/continue/else,
set blocks, macros, namespaces, scoping of names set at the top level); the tests render
each draw with both engines and compare.
"""

from __future__ import annotations

import random
from typing import Any

from tokenpact.chat.spans import track

ATOMS = [
    "c", "d", "n", "f", "lst", "dct", "u", "none", "true", "false", "'x y'", "' a '", "''",
    "0", "1", "-2", "2.5", "[1, 'a']", "{'k': c}", "(1, 2)", "tup", "e",
]  # fmt: skip
UNARY = [
    "{} | trim", "{} | length", "{} | string", "{} | upper", "{} | first", "{} | last",
    "{} | list", "{} | tojson", "{} | reverse | list", "{} | default('D')", "{} | join('-')",
    "{} | items | list", "{}.strip()", "{}.split()", "{}.upper()", "{} | safe", "{}[0]",
    "{}[-1]", "{}[1:]", "{}[::-1]", "{}['k']", "{}.k", "{}.get('k')", "{} is string",
    "{} is defined", "{} is none", "{} is mapping", "{} is iterable", "{} is sequence",
    "{} is number", "not {}", "-{}", "({})", "{}.items() | list", "{} | select | list",
    "{} | map('upper') | list", "{}.startswith('a')", "{} | replace('a', 'b')",
    "{}.replace(' ', '')", "{} | tojson(indent=1)", "{} | selectattr('k') | list",
    "{}.split('a')", "{}.rstrip('x ')",
]  # fmt: skip
BINARY = [
    "{} + {}", "{} ~ {}", "{} * {}", "{} - {}", "{} / {}", "{} // {}", "{} % {}", "{} == {}",
    "{} != {}", "{} < {}", "{} >= {}", "{} in {}", "{} not in {}", "{} and {}", "{} or {}",
    "{} if {} else 'no'", "[{}, {}]", "{{'a': {}, 'b': {}}}", "({}, {}) | join('/')",
]  # fmt: skip
VALUES = [
    "x", "i", "loop.index0", "loop.last", "loop.previtem", "ns.v", "m(x)", "m(i, 'k')",
    "c|trim", "c.split()|length", "x ~ i", "y|length", "loop.length", "q",
]  # fmt: skip
MACRO = (
    "{% set ns = namespace(v=1) %}{% macro m(a, b='B') %}[{{ a }}{{ b }}{{ x }}"
    "{% set x = 9 %}{{ x }}]{% endmacro %}"
)


def expression(rng: random.Random, depth: int = 3) -> str:
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    if rng.random() < 0.55:
        return rng.choice(UNARY).format(expression(rng, depth - 1))
    return rng.choice(BINARY).format(expression(rng, depth - 1), expression(rng, depth - 1))


def statements(rng: random.Random, depth: int = 3, in_loop: bool = False) -> str:
    out = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.25:
            out.append("{{ " + rng.choice(VALUES) + " }}")
        elif r < 0.4:
            target = rng.choice(["x", "q", "ns.v"])
            out.append("{% set " + target + " = " + rng.choice(VALUES) + " %}")
        elif r < 0.55 and depth > 0:
            source = rng.choice(["y", "range(3)", "c", "[]", "y[::-1]", "dct", "dct.items()|list"])
            test = " if i" if rng.random() < 0.2 else ""
            other = "{% else %}E" if rng.random() < 0.2 else ""
            body = statements(rng, depth - 1, True)
            out.append(f"{{% for i in {source}{test} %}}{body}{other}{{% endfor %}}")
        elif r < 0.7 and depth > 0:
            then, other = statements(rng, depth - 1, in_loop), statements(rng, depth - 1, in_loop)
            out.append(f"{{% if {rng.choice(VALUES)} %}}{then}{{% else %}}{other}{{% endif %}}")
        elif r < 0.78 and in_loop:
            out.append(rng.choice(["{% break %}", "{% continue %}"]))
        elif r < 0.86 and depth > 0:
            body = statements(rng, depth - 1, False)
            out.append(f"{{% set blk %}}{body}{{% endset %}}{{{{ blk|length }}}}")
        else:
            out.append(rng.choice(["a", "\n", " b "]))
    return "".join(out)


def program(rng: random.Random) -> str:
    return MACRO + statements(rng) + "{{ x }}{{ q }}{{ ns.v }}"


def context(rng: random.Random) -> dict[str, Any]:
    """Tracked and plain strings, numbers, containers; ``x`` only sometimes given."""
    out: dict[str, Any] = {
        "c": track(" a<b> xé ", 0),
        "d": track("a", 1),
        "e": "plain a",
        "n": 7,
        "f": 0.5,
        "lst": [track("p", 2), "q", 3],
        "dct": {"k": track("v", 3), "z": [1, None]},
        "tup": ("a", 1),
        "y": ["p", track("q", 4), 3],
    }
    if rng.random() < 0.5:
        out["x"] = "X"
    return out
