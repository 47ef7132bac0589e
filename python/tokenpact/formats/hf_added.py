"""Added tokens of a Hugging Face ``tokenizer.json``: the IDs ``tokenizers`` gives them,
and the control tokens a post-processor may insert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..components.processors import PostProcessor
from ..errors import AddedTokenIdWarning, warn_at_caller
from .hf_pipeline import fail


def resolve_added_ids(
    added_list: list[dict[str, Any]], model: dict[str, Any], label: Path
) -> list[int]:
    """The ID of every added token as Hugging Face ``tokenizers`` assigns it.

    ``tokenizers`` ignores the ``id`` written in the file: a token whose text is in the
    model vocabulary (or was added before) keeps that ID, any other gets the next ID after
    the model vocabulary and the tokens added so far, in file order. A file whose IDs
    disagree (a gap, a duplicate) therefore loads with ``tokenizers``' IDs, and a
    :class:`tokenpact.errors.AddedTokenIdWarning` names the first difference.
    """
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        model_ids: dict[str, int] = vocab
        size = len(vocab)
    else:
        entries = vocab if isinstance(vocab, list) else []
        model_ids = {entry[0]: i for i, entry in enumerate(entries)}
        size = len(entries)
    added: dict[str, int] = {}
    ids: list[int] = []
    top = -1
    for t in added_list:
        content = t["content"]
        if content in added:
            new = added[content]
        elif content in model_ids:
            new = model_ids[content]
        else:
            new = top + 1 if top >= size or size == 0 else size
        added[content] = new
        if new >= size:
            top = max(top, new)
        ids.append(new)
    moved = [(t, i) for t, i in zip(added_list, ids, strict=True) if t["id"] != i]
    if moved:
        t, i = moved[0]
        warn_at_caller(
            f"{label}: {len(moved)} added token(s) have IDs that Hugging Face tokenizers "
            f"reassigns (first: {t['content']!r} is written as {t['id']} and gets {i}); "
            "tokenpact uses the IDs tokenizers uses. Re-save the file with tokenizers to "
            "write the real IDs",
            AddedTokenIdWarning,
        )
    return ids


def check_template_tokens(p: Path, template: PostProcessor | None, specials: set[str]) -> None:
    """Every control token a post-processor inserts must be a special token of the file
    (rejected at load, not at the first ``add_special_tokens=True``)."""
    if template is None:
        return
    for key in ("single", "pair"):
        for kind, value, _ in template.template_items(pair=key == "pair"):
            if kind == "special" and value not in specials:
                raise fail(
                    p,
                    f"post_processor.{key}",
                    f"inserts {value!r}, which is not a special token of this file",
                    "add it to added_tokens with special: true, or fix the post-processor",
                )
