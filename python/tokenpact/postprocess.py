"""Post-processors: trusted insertion of control tokens around encoded content.

A spec holds one of two typed forms (:mod:`tokenpact.components.processors`):
``PrependBos(token)`` (our trained tokenizers) and ``Template(single, pair)`` where each
item is ``("special", SPELLING, type_id)`` or ``("sequence", "A"|"B", type_id)`` (Hugging
Face's TemplateProcessing). Their config dicts (``{"type": "prepend_bos", ...}``,
``{"type": "template", ...}``) are accepted too. Control IDs come only from here, never
from the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .errors import ConfigError


class TemplateNode(Protocol):
    """A typed post-processor (``tokenpact.components.processors``, a layer above)."""

    def template_items(self, pair: bool = False) -> Sequence[tuple[str, str, int]]: ...


# A post-processor: the typed node a spec holds, or its config dict.
Post = TemplateNode | Mapping[str, Any]


def _template_items(post: Post, key: str) -> Sequence[Sequence[Any]]:
    if not isinstance(post, Mapping):
        return post.template_items(pair=key == "pair")
    if post.get("type") == "prepend_bos":
        if key == "pair":
            return [["special", post["token"], 0], ["sequence", "A", 0], ["sequence", "B", 1]]
        return [["special", post["token"], 0], ["sequence", "A", 0]]
    if post.get("type") == "template":
        return list(post.get(key) or [])
    raise ConfigError(f"unknown post-processor type {post.get('type')!r}")


def apply(
    post: Post | None,
    special_ids: dict[str, int],
    first: list[int],
    second: list[int] | None = None,
) -> tuple[list[int], list[int], list[int | None], list[bool]]:
    """Apply the template: ``(ids, type_ids, sequence_ids, is_control)`` per output token."""
    if post is None:
        seqs = [first] if second is None else [first, second]
        ids = [i for s in seqs for i in s]
        seq_ids: list[int | None] = [k for k, s in enumerate(seqs) for _ in s]
        types = [k for k, s in enumerate(seqs) for _ in s]
        return ids, types, seq_ids, [False] * len(ids)
    items = _template_items(post, "single" if second is None else "pair")
    ids = []
    types = []
    seq_ids = []
    control = []
    for kind, value, type_id in items:
        if kind == "special":
            ids.append(special_ids[value])
            types.append(int(type_id))
            seq_ids.append(None)
            control.append(True)
        else:
            part = first if value == "A" else (second or [])
            sid = 0 if value == "A" else 1
            ids.extend(part)
            types.extend([int(type_id)] * len(part))
            seq_ids.extend([sid] * len(part))
            control.extend([False] * len(part))
    return ids, types, seq_ids, control


def apply_single(post: Post | None, special_ids: dict[str, int], ids: list[int]) -> list[int]:
    """The single-sequence template applied to ``ids``."""
    return apply(post, special_ids, ids)[0]


def single_boundaries(
    post: Post | None, special_ids: dict[str, int]
) -> tuple[list[int], list[int]]:
    """The control IDs the single-sequence template puts before and after the content."""
    if post is None:
        return [], []
    before: list[int] = []
    after: list[int] = []
    seen_content = False
    for kind, value, _ in _template_items(post, "single"):
        if kind == "special":
            (after if seen_content else before).append(special_ids[value])
        else:
            seen_content = True
    return before, after


def with_boundaries(
    content: list[int],
    before: list[int],
    after: list[int],
    *,
    bos: bool | None,
    eos: bool | None,
    bos_id: int | None,
    eos_id: int | None,
) -> tuple[list[int], list[int]]:
    """Apply explicit ``bos``/``eos`` flags to the controls around ``content``.

    ``None`` keeps what the template gives. ``True`` makes the sequence start (end)
    with exactly one BOS (EOS): one is added unless the template or the content already
    puts it there, and a template BOS is dropped when the content itself starts with
    one. ``False`` removes the template's BOS (EOS); a BOS the text spelled (an allowed
    special) is content and stays.
    """
    if bos is not None:
        if bos_id is None:
            raise ConfigError("bos=... needs a special token with role 'bos'; this has none")
        before = [i for i in before if i != bos_id]
        if bos and not (content[:1] == [bos_id]):
            before = [bos_id, *before]
    if eos is not None:
        if eos_id is None:
            raise ConfigError("eos=... needs a special token with role 'eos'; this has none")
        after = [i for i in after if i != eos_id]
        if eos and not (content[-1:] == [eos_id]):
            after = [*after, eos_id]
    return before, after


def count_added(post: Post | None, pair: bool = False) -> int:
    """How many control tokens the template adds (for truncation budgets)."""
    if post is None:
        return 0
    return sum(
        1 for kind, *_ in _template_items(post, "pair" if pair else "single") if kind == "special"
    )
