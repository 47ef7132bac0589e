"""Typed pipeline components with ``to_config()`` / ``from_config()``.

Each stage of a tokenizer is a small frozen dataclass whose fields are exactly the keys of
its Hugging Face ``tokenizer.json`` node (same names, order and defaults), grouped as
Hugging Face groups them: :mod:`.normalizers`, :mod:`.pre_tokenizers`, :mod:`.models`,
:mod:`.decoders`, :mod:`.processors`. ``Tokenizer.from_components(...)`` assembles them
into a ``tokenizer.json`` document and builds the Rust engine from it, and
``tok.components()`` gives them back for any tokenizer that has a ``tokenizer.json`` form.

Example::

    import tokenpact as tp
    from tokenpact.components import models, normalizers, pre_tokenizers, decoders

    tok = tp.Tokenizer.from_components(
        model=models.WordPiece(vocab={"[UNK]": 0, "un": 1, "##want": 2, "##ed": 3}),
        normalizer=normalizers.BertNormalizer(),
        pre_tokenizer=pre_tokenizers.BertPreTokenizer(),
        decoder=decoders.WordPiece(),
    )
    tok.encode("unwanted")  # [1, 2, 3]
    normalizers.Normalizer.from_config({"type": "NFC"})  # NFC()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigError
from . import decoders, models, normalizers, pre_tokenizers, processors
from ._base import Component, Regex, component_class, from_config, known_types

__all__ = [
    "AddedToken",
    "Component",
    "Pipeline",
    "Regex",
    "component_class",
    "decoders",
    "from_config",
    "known_types",
    "models",
    "normalizers",
    "pre_tokenizers",
    "processors",
]


@dataclasses.dataclass(frozen=True)
class AddedToken:
    """An entry of ``added_tokens``; the flags are Hugging Face's. An ordinary token
    (``special=False``) is content and matches in every call, as in HF; a special token is
    control and matches only with ``allowed_special`` permission (``"all"`` = HF)."""

    content: str
    id: int
    special: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool | None = None  # None: Hugging Face's default, ``not special``

    def to_config(self) -> dict[str, Any]:
        normalized = (not self.special) if self.normalized is None else self.normalized
        return {
            "id": self.id,
            "content": self.content,
            "single_word": self.single_word,
            "lstrip": self.lstrip,
            "rstrip": self.rstrip,
            "normalized": normalized,
            "special": self.special,
        }

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> AddedToken:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(node) - known)
        if unknown or "content" not in node or "id" not in node:
            raise ConfigError(
                f"added token {node!r}: needs content and id; unknown fields {unknown}"
            )
        return cls(**dict(node))


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """All stages of one tokenizer; ``to_config()`` is its ``tokenizer.json`` document."""

    model: models.Model
    normalizer: normalizers.Normalizer | None = None
    pre_tokenizer: pre_tokenizers.PreTokenizer | None = None
    post_processor: processors.PostProcessor | None = None
    decoder: decoders.Decoder | None = None
    added_tokens: tuple[AddedToken, ...] = ()

    def to_config(self) -> dict[str, Any]:
        def node(component: Component | None) -> dict[str, Any] | None:
            return None if component is None else component.to_config()

        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [t.to_config() for t in self.added_tokens],
            "normalizer": node(self.normalizer),
            "pre_tokenizer": node(self.pre_tokenizer),
            "post_processor": node(self.post_processor),
            "decoder": node(self.decoder),
            "model": self.model.to_config(),
        }

    def build(self, *, config: Mapping[str, Any] | None = None) -> Any:
        """The :class:`~tokenpact.Tokenizer` of this pipeline; ``config`` is an optional
        ``tokenizer_config.json`` dict (roles, chat template)."""
        # tokenpact.files sits layers above: reached through the package root's public
        # name (imported on first use), so this layer imports nothing above it.
        import tokenpact

        return tokenpact.files.from_components(
            self.model,
            normalizer=self.normalizer,
            pre_tokenizer=self.pre_tokenizer,
            post_processor=self.post_processor,
            decoder=self.decoder,
            added_tokens=self.added_tokens,
            config=None if config is None else dict(config),
        )

    @classmethod
    def from_config(cls, document: Mapping[str, Any]) -> Pipeline:
        """Parse a whole ``tokenizer.json`` document (``truncation``/``padding`` are not
        pipeline stages and are ignored here)."""
        if "model" not in document:
            raise ConfigError("tokenizer.json document has no model")

        def optional(kind: str) -> Any:
            value = document.get(kind)
            return None if value is None else from_config(kind, value)

        added: Iterable[Mapping[str, Any]] = document.get("added_tokens") or []
        return cls(
            model=models.Model.from_config(document["model"]),  # type: ignore[arg-type]
            normalizer=optional("normalizer"),
            pre_tokenizer=optional("pre_tokenizer"),
            post_processor=optional("post_processor"),
            decoder=optional("decoder"),
            added_tokens=tuple(AddedToken.from_config(t) for t in added),
        )
