"""What the playground shows, computed with the public tokenizer and chat APIs.

Every function returns plain JSON-able values; ``app`` only parses requests, applies
the bounds and serializes. Offsets are codepoint spans of the raw input text (the
page maps them onto the text box), so a token that holds half of a multi-byte
character points at the whole character and is marked ``partial``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..chat import ChatTemplate
    from ..core import Tokenizer

# Origins as the page colors them: the chat module's kinds plus "role", a template
# token that spells a message's role label (``user`` after ``<|im_start|>``).
ORIGINS = ("control", "template", "role", "content", "document", "tools")


def piece_text(piece: bytes) -> tuple[str, bool]:
    """Readable text of a token's bytes and whether they are not valid UTF-8 alone.

    A byte that is half of a multi-byte character shows as ``\\xNN`` instead of a
    replacement character, so a split character stays visible.
    """
    out = []
    partial = False
    for char in piece.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
            partial = True
        else:
            out.append(char)
    return "".join(out), partial


def _token(
    tok: Tokenizer, index: int, token_id: int, span: Sequence[int], specials: set[int]
) -> dict[str, Any]:
    piece = tok.token_bytes(token_id)
    text, partial = piece_text(piece)
    return {
        "index": index,
        "id": token_id,
        "hex": piece.hex(),
        "text": text,
        "partial": partial,
        "special": token_id in specials,
        "start": int(span[0]),
        "end": int(span[1]),
    }


def counts(text: str, n_tokens: int) -> dict[str, Any]:
    n_bytes = len(text.encode("utf-8"))
    return {
        "tokens": n_tokens,
        "characters": len(text),
        "bytes": n_bytes,
        "bytes_per_token": round(n_bytes / n_tokens, 4) if n_tokens else None,
    }


def encode_view(
    tok: Tokenizer, text: str, *, allowed_special: str | Sequence[str] = ()
) -> dict[str, Any]:
    """Pieces with IDs, bytes and raw-text offsets, plus the counts."""
    enc = tok.encode_structured(
        text, allowed_special=allowed_special, truncation=False, padding=False
    )
    specials = set(dict(tok.special_tokens).values())
    tokens = [
        _token(tok, i, token_id, span, specials)
        for i, (token_id, span) in enumerate(zip(enc.ids, enc.offsets, strict=True))
    ]
    return {
        "ids": list(enc.ids),
        "tokens": tokens,
        "counts": counts(text, len(tokens)),
        "vocab_size": tok.vocab_size,
    }


def _merge(spans: list[tuple[int, int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def compare_view(named: Sequence[tuple[str, Any]], text: str) -> dict[str, Any]:
    """Each tokenizer's view, with every token whose span the others do not share marked.

    A token "differs" when at least one other tokenizer has no token with exactly its
    span; ``diff_spans`` are the merged text ranges of such tokens.
    """
    views = [(name, encode_view(tok, text)) for name, tok in named]
    span_sets = [{(t["start"], t["end"]) for t in view["tokens"]} for _, view in views]
    differing: list[tuple[int, int]] = []
    for k, (_, view) in enumerate(views):
        others = [s for j, s in enumerate(span_sets) if j != k]
        for token in view["tokens"]:
            span = (token["start"], token["end"])
            token["differs"] = any(span not in other for other in others)
            if token["differs"]:
                differing.append(span)
    return {
        "results": [{"name": name, **view} for name, view in views],
        "diff_spans": _merge(differing),
        "identical": not differing,
    }


def _role_labels(messages: Sequence[dict[str, Any]]) -> set[str]:
    return {str(m.get("role")) for m in messages if isinstance(m, dict)}


def chat_view(
    tok: Tokenizer,
    template: ChatTemplate,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
) -> dict[str, Any]:
    """The conversation rendered through the tokenizer's own chat template."""
    conv = template.render(messages, add_generation_prompt=add_generation_prompt)
    specials = set(dict(tok.special_tokens).values())
    roles = _role_labels(messages)
    tokens = []
    for i, token_id in enumerate(conv.input_ids):
        token = _token(tok, i, token_id, conv.offsets[i], specials)
        origin = conv.origin[i]
        if origin == "template" and token["text"].strip() in roles:
            origin = "role"
        token.update(
            origin=origin,
            message=int(conv.message_index[i]),
            assistant=bool(conv.assistant_mask[i]),
            prompt=i < conv.prompt_boundary,
        )
        tokens.append(token)
    return {
        "text": str(conv.text),
        "tokens": tokens,
        "ids": list(conv.input_ids),
        "prompt_boundary": int(conv.prompt_boundary),
        "stop_ids": list(conv.stop_policy.stop_ids),
        "counts": counts(str(conv.text), len(tokens)),
    }


def inject_specials(
    messages: list[dict[str, Any]], spellings: Sequence[str]
) -> list[dict[str, Any]]:
    """``messages`` with every special spelling appended to each string content."""
    payload = " ".join(spellings)
    out = []
    for message in messages:
        message = dict(message)
        if isinstance(message.get("content"), str):
            message["content"] = f"{message['content']} {payload}"
        out.append(message)
    return out


def injection_view(
    tok: Tokenizer,
    template: ChatTemplate,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
) -> dict[str, Any]:
    """Every special spelling injected into the content: safe render versus naive encode.

    ``safe`` is the tokenpact render: content is text whatever it spells. ``naive`` is
    what rendering to a string and encoding it with every special recognized (the
    ``apply_chat_template`` path) gives for the same string: a special ID whose span
    lies inside message content is a forged control token.
    """
    specials = dict(tok.special_tokens)
    injected = inject_specials(messages, sorted(specials))
    safe = chat_view(tok, template, injected, add_generation_prompt=add_generation_prompt)
    content_chars: set[int] = set()
    for token in safe["tokens"]:
        if token["origin"] in ("content", "document", "tools"):
            content_chars.update(range(token["start"], token["end"]))
    safe_forged = [t["index"] for t in safe["tokens"] if t["special"] and t["origin"] != "control"]
    naive = encode_view(tok, safe["text"], allowed_special="all")
    forged = []
    for token in naive["tokens"]:
        token["forged"] = token["special"] and token["start"] in content_chars
        if token["forged"]:
            forged.append(token["index"])
    return {
        "spellings": sorted(specials),
        "messages": injected,
        "safe": {**safe, "control_ids_from_content": len(safe_forged)},
        "naive": {**naive, "text": safe["text"], "forged": forged, "forged_count": len(forged)},
    }


def audit_view(tok: Tokenizer, *, d_model: int) -> dict[str, Any]:
    """The static vocabulary audit and the vocabulary's cost at ``d_model``."""
    from ..audit import CLASSES, audit_vocabulary, cost

    audit = audit_vocabulary(tok)
    counts = audit.counts()
    price = cost(tok.vocab_size, d_model, tied=False)
    return {
        "vocab_size": tok.vocab_size,
        "classes": [{"name": name, "count": int(counts.get(name, 0))} for name in CLASSES],
        "partial_utf8": int(audit.partial_utf8.sum()),
        "proof": audit.proof_applies,
        "seconds": round(float(audit.seconds), 3),
        "cost": {
            "d_model": d_model,
            "vocab_params": price.vocab_params,
            "param_bytes": price.param_bytes,
            "training_bytes": price.training_bytes,
            "logits_flops_per_position": price.logits_flops_per_position,
        },
    }
