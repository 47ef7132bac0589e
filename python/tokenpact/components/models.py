"""Model components (``tokenizer.json`` ``model`` nodes): BPE, WordPiece, WordLevel, Unigram.

Example::

    from tokenpact.components import models as m
    m.WordPiece(vocab={"[UNK]": 0, "un": 1, "##want": 2}, unk_token="[UNK]")
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ConfigError
from ._base import _EXTRA, _KEYS, Component

__all__ = ["BPE", "TABLES", "Model", "Unigram", "WordLevel", "WordPiece", "options"]

# The fields of a model node that are its tables rather than its options.
TABLES = ("vocab", "merges")


@dataclasses.dataclass(frozen=True)
class Model(Component):
    KIND = "model"


@dataclasses.dataclass(frozen=True)
class BPE(Model):
    """Merges apply in list order; pieces are the file's strings (GPT-2 byte characters
    for byte-level BPE). ``merges`` entries are ``(left, right)``; the older ``"l r"``
    spelling is accepted."""

    TYPE = "BPE"
    dropout: float | None = None
    unk_token: str | None = None
    continuing_subword_prefix: str | None = None
    end_of_word_suffix: str | None = None
    fuse_unk: bool = False
    byte_fallback: bool = False
    ignore_merges: bool = False
    vocab: dict[str, int] = dataclasses.field(default_factory=dict)
    merges: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        merges = []
        for i, entry in enumerate(self.merges):
            if isinstance(entry, str):
                parts = entry.split(" ")
                if len(parts) != 2:
                    raise ConfigError(f"BPE.merges[{i}]: {entry!r} is not 'left right'")
                entry = parts
            if len(entry) != 2 or not all(isinstance(x, str) for x in entry):
                raise ConfigError(f"BPE.merges[{i}]: {entry!r} is not a pair of strings")
            merges.append((entry[0], entry[1]))
        object.__setattr__(self, "merges", merges)


@dataclasses.dataclass(frozen=True)
class WordPiece(Model):
    TYPE = "WordPiece"
    unk_token: str = "[UNK]"
    continuing_subword_prefix: str = "##"
    max_input_chars_per_word: int = 100
    vocab: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class WordLevel(Model):
    TYPE = "WordLevel"
    vocab: dict[str, int] = dataclasses.field(default_factory=dict)
    unk_token: str = "<unk>"


@dataclasses.dataclass(frozen=True)
class Unigram(Model):
    """``vocab`` is ``[(piece, log probability), ...]`` in ID order."""

    TYPE = "Unigram"
    unk_id: int | None = 0
    vocab: list[tuple[str, float]] = dataclasses.field(default_factory=lambda: [("<unk>", 0.0)])
    byte_fallback: bool = False

    def __post_init__(self) -> None:
        vocab: list[tuple[str, float]] = []
        for i, entry in enumerate(self.vocab):
            ok = isinstance(entry, (list, tuple)) and len(entry) == 2
            if not ok or not isinstance(entry[0], str) or not _is_number(entry[1]):
                raise ConfigError(f"Unigram.vocab[{i}]: {entry!r} is not [piece, score]")
            vocab.append((entry[0], float(entry[1])))
        object.__setattr__(self, "vocab", vocab)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def options(model: Model) -> Model:
    """``model`` as its options node: the same type and options, its tables (``vocab``,
    ``merges``) left out of ``to_config()`` (a spec keeps the tables apart, as IDs)."""
    tables = {f.name for f in dataclasses.fields(model) if f.name in TABLES}
    node = dataclasses.replace(model, **{name: _empty(model, name) for name in tables})
    keys = model.__dict__.get(_KEYS) or ("type", *(f.name for f in dataclasses.fields(model)))
    object.__setattr__(node, _KEYS, tuple(k for k in keys if k not in TABLES))
    if _EXTRA in model.__dict__:
        object.__setattr__(node, _EXTRA, model.__dict__[_EXTRA])
    return node


def _empty(model: Model, name: str) -> Any:
    field = next(f for f in dataclasses.fields(model) if f.name == name)
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default
