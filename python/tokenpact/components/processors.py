"""Post-processor components (``tokenizer.json`` ``post_processor`` nodes).

Example (BERT)::

    from tokenpact.components import processors as q
    q.TemplateProcessing.from_strings(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 101), ("[SEP]", 102)],
    )
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigError
from ._base import ByteLevelFields, Component, children_field, from_config

__all__ = [
    "BertProcessing",
    "ByteLevel",
    "PostProcessor",
    "PrependBos",
    "RobertaProcessing",
    "Sequence",
    "Template",
    "TemplateItem",
    "TemplateProcessing",
    "template_node",
]

# One item of a tokenpact template: ("special", spelling, type_id) or
# ("sequence", "A" | "B", type_id).
TemplateItem = tuple[str, str, int]


@dataclasses.dataclass(frozen=True)
class PostProcessor(Component):
    KIND = "post_processor"

    def template_items(self, pair: bool = False) -> list[TemplateItem]:
        """The items of the single (``pair``: pair) template, for the post-processors a
        :class:`~tokenpact.core.TokenizerSpec` holds (:class:`Template`,
        :class:`PrependBos`); Hugging Face's own nodes are read into those."""
        raise ConfigError(
            f"post-processor {self.TYPE} is a tokenizer.json node; a spec holds its "
            "template form (Template or PrependBos)"
        )


# tokenpact's post-processors: the canonical forms a TokenizerSpec holds and its config
# lists. The tokenizer.json reader turns BertProcessing, RobertaProcessing and
# TemplateProcessing into a Template; tokenizers built from ranks or a SentencePiece
# model prepend their BOS token.
@dataclasses.dataclass(frozen=True)
class Template(PostProcessor):
    """A template of control tokens around the content: ``single`` / ``pair`` are
    :data:`TemplateItem` tuples (written as JSON arrays)."""

    TYPE = "template"
    single: tuple[TemplateItem, ...] = ()
    pair: tuple[TemplateItem, ...] = ()

    def __post_init__(self) -> None:
        for name in ("single", "pair"):
            items = []
            for item in getattr(self, name):
                kind, value, type_id = item
                if kind not in ("special", "sequence") or not isinstance(value, str):
                    raise ConfigError(f"template.{name}: {item!r} is not [kind, value, type_id]")
                items.append((str(kind), value, int(type_id)))
            object.__setattr__(self, name, tuple(items))

    def template_items(self, pair: bool = False) -> list[TemplateItem]:
        return list(self.pair if pair else self.single)


@dataclasses.dataclass(frozen=True)
class PrependBos(PostProcessor):
    """Put the special token ``token`` (the BOS) before the content."""

    TYPE = "prepend_bos"
    token: str = ""

    def template_items(self, pair: bool = False) -> list[TemplateItem]:
        first = [("special", self.token, 0), ("sequence", "A", 0)]
        return [*first, ("sequence", "B", 1)] if pair else first


@dataclasses.dataclass(frozen=True)
class TemplateProcessing(PostProcessor):
    """``single`` / ``pair`` are Hugging Face's item lists (``{"SpecialToken": ...}`` or
    ``{"Sequence": ...}``); :meth:`from_strings` builds them from ``"[CLS] $A [SEP]"``."""

    TYPE = "TemplateProcessing"
    single: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    pair: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    special_tokens: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_strings(
        cls, *, single: str, pair: str | None = None, special_tokens: Iterable[tuple[str, int]]
    ) -> TemplateProcessing:
        ids = dict(special_tokens)
        pair = pair if pair is not None else f"{single} $B:1"

        def items(template: str) -> list[dict[str, Any]]:
            out = []
            for word in template.split():
                name, _, type_id = word.partition(":")
                if type_id and not type_id.isdigit():
                    raise ConfigError(f"template item {word!r}: type id must be a number")
                tid = int(type_id or 0)
                if name.startswith("$"):
                    seq = name[1:] or "A"
                    if seq not in ("A", "B"):
                        raise ConfigError(f"template item {word!r}: use $A or $B")
                    out.append({"Sequence": {"id": seq, "type_id": tid}})
                elif name in ids:
                    out.append({"SpecialToken": {"id": name, "type_id": tid}})
                else:
                    raise ConfigError(
                        f"template item {word!r} is neither $A/$B nor a listed special token"
                    )
            return out

        specials = {s: {"id": s, "ids": [i], "tokens": [s]} for s, i in ids.items()}
        return cls(single=items(single), pair=items(pair), special_tokens=specials)


@dataclasses.dataclass(frozen=True)
class BertProcessing(PostProcessor):
    TYPE = "BertProcessing"
    sep: tuple[str, int] = ("[SEP]", 102)
    cls: tuple[str, int] = ("[CLS]", 101)


@dataclasses.dataclass(frozen=True)
class RobertaProcessing(PostProcessor):
    TYPE = "RobertaProcessing"
    sep: tuple[str, int] = ("</s>", 2)
    cls: tuple[str, int] = ("<s>", 0)
    trim_offsets: bool = True
    add_prefix_space: bool = True


@dataclasses.dataclass(frozen=True)
class ByteLevel(PostProcessor, ByteLevelFields):
    TYPE = "ByteLevel"


@dataclasses.dataclass(frozen=True)
class Sequence(PostProcessor):
    TYPE = "Sequence"
    processors: list[PostProcessor] = children_field("post_processor")


def template_node(post: PostProcessor | Mapping[str, Any] | None) -> PostProcessor | None:
    """A spec's post-processor given as its config dict (``{"type": "prepend_bos",
    "token": ...}``, ``{"type": "template", "single": ..., "pair": ...}``) as its typed
    node; a node or None is returned as it is."""
    if post is None or isinstance(post, PostProcessor):
        return post
    node = from_config("post_processor", post)
    if not isinstance(node, Template | PrependBos):
        raise ConfigError(
            f"post-processor {node.TYPE}: a spec holds a template (type 'template' or "
            "'prepend_bos')"
        )
    return node
