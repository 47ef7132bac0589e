"""Detectors that render a chat template with a small conversation and encode the result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .findings import detector
from .subject import Subject
from .tokenizer_checks import MARKER

Found = Iterator[tuple[str, str]]

CONVERSATIONS: tuple[tuple[dict[str, str], ...], ...] = (
    (
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Thanks"},
    ),
    (
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Thanks"},
    ),
)


def _render(subject: Subject) -> tuple[str | None, str | None]:
    """``(rendered text, None)`` or ``(None, the errors of every attempt)``; rendered once
    per subject (three detectors read it)."""
    if "rendered" not in subject.cache:
        subject.cache["rendered"] = _render_uncached(subject)
    result: tuple[str | None, str | None] = subject.cache["rendered"]
    return result


def _render_uncached(subject: Subject) -> tuple[str | None, str | None]:
    from ..chat import ChatTemplate

    if subject.tokenizer is None:  # the detectors that read this need the tokenizer
        return None, "no tokenizer to render with"
    errors = []
    for messages in CONVERSATIONS:
        try:
            template = ChatTemplate(
                subject.template or "", subject.tokenizer, special_tokens=_specials(subject)
            )
            return template.render_text(list(messages), add_generation_prompt=True).text, None
        except Exception as exc:  # noqa: BLE001 - any template error is the finding
            errors.append(f"{type(exc).__name__}: {exc}")
    return None, " / ".join(errors)


def _specials(subject: Subject) -> dict[str, Any]:
    return {k: v for k, v in subject.template_specials.items() if v is not None}


@detector(
    "template-render-failed",
    failure="chat template cannot format a plain conversation",
    needs=("template", "tokenizer"),
)
def template_render_failed(subject: Subject) -> Found:
    if not subject.template or subject.tokenizer is None:
        return
    text, error = _render(subject)
    if text is None:
        yield (
            f"rendering system/user/assistant/user (and without system) raised: {error}",
            "fix the template (or the special-token names it reads from tokenizer_config.json)",
        )


@detector(
    "template-markers-as-text",
    failure="template prints control markers as text",
    needs=("template", "tokenizer"),
)
def template_markers_as_text(subject: Subject) -> Found:
    tok = subject.tokenizer
    if not subject.template or tok is None:
        return
    text, _ = _render(subject)
    if text is None:
        return
    known = set(tok.special_tokens) | set(tok.added_tokens)
    loose = sorted({m for m in MARKER.findall(text) if m not in known})
    if loose:
        example = loose[0]
        pieces = [tok.token_bytes(i).decode("utf-8", "replace") for i in tok.encode(example)]
        yield (
            f"the rendered template prints {loose[:6]} but the tokenizer has no such "
            f"special token; {example!r} encodes as ordinary pieces {pieces}",
            "add the markers as special tokens (and train their rows) or use the spellings "
            "the tokenizer defines; the model sees text pieces, not a role boundary",
        )


@detector(
    "boundary-twice",
    failure="BOS/EOS inserted twice",
    needs=("template", "tokenizer"),
)
def boundary_twice(subject: Subject) -> Found:
    tok = subject.tokenizer
    if not subject.template or tok is None:
        return
    text, _ = _render(subject)
    if text is None:
        return
    ids = tok.encode(text, allowed_special="all", add_special_tokens=True)
    for name, token_id, pair in (("BOS", tok.bos_id, ids[:2]), ("EOS", tok.eos_id, ids[-2:])):
        if token_id is None:
            continue
        if pair == [token_id, token_id]:
            yield (
                f"the template already prints {name} ({token_id}) and the tokenizer's "
                f"post-processor adds it again: encode(render(...), add_special_tokens=True) "
                f"has {name} twice ({ids[:3]}...{ids[-3:]})",
                "encode rendered chat text with add_special_tokens=False (transformers: "
                "apply_chat_template(tokenize=True) does this), or drop the marker from one side",
            )


@detector(
    "boundary-flag-twice",
    failure="BOS/EOS inserted twice (by loaders that honor add_bos_token)",
    needs=("template", "tokenizer"),
    severity="warning",
)
def boundary_flag_twice(subject: Subject) -> Found:
    tok = subject.tokenizer
    if not subject.template or tok is None:
        return
    text, _ = _render(subject)
    if text is None:
        return
    ids = tok.encode(text, allowed_special="all", add_special_tokens=True)
    plain = tok.encode(text, allowed_special="all")
    config = subject.tokenizer_config or {}
    for name, token_id, printed, added, flag in (
        ("BOS", tok.bos_id, plain[:1], ids[:2], "add_bos_token"),
        ("EOS", tok.eos_id, plain[-1:], ids[-2:], "add_eos_token"),
    ):
        doubled_here = token_id is not None and added == [token_id, token_id]
        if token_id is None or doubled_here or printed != [token_id]:
            continue
        if config.get(flag) is True:
            yield (
                f"the template prints {name} ({token_id}) and tokenizer_config.json sets "
                f"{flag}: true; this tokenizer.json's post-processor does not add it, but "
                f"loaders that honor the flag (transformers' Llama tokenizer classes before "
                f"v5) add a second {name} when the rendered text is encoded",
                f"set {flag} to false (the template owns {name}) or encode rendered chat "
                "text with add_special_tokens=False",
            )
