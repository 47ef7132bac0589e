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
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError
from ._base import ByteLevelFields, Component, children_field

__all__ = [
    "BertProcessing",
    "ByteLevel",
    "PostProcessor",
    "RobertaProcessing",
    "Sequence",
    "TemplateProcessing",
]


@dataclasses.dataclass(frozen=True)
class PostProcessor(Component):
    KIND = "post_processor"


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
