"""The component base: a typed node of a Hugging Face ``tokenizer.json`` pipeline.

Every component is a frozen dataclass whose fields are the node's keys, in the order
Hugging Face writes them, with Hugging Face's defaults. ``to_config()`` returns that node
(a dict ready for ``json.dumps``) and ``<kind>.from_config(node)`` rebuilds the object,
rejecting unknown types and keys with :class:`~tokenpact.errors.ConfigError`. The engine
is always built from these nodes (``Tokenizer.from_components``), so a component and the
file form can never drift apart.

A component read by ``from_config`` remembers the shape of its node: which keys it had,
in which order, and (``keep_unknown=True``, how the ``tokenizer.json`` reader reads a
file) the keys it does not know. ``to_config()`` then writes exactly that node back, so
a file's stages are typed objects inside a :class:`~tokenpact.core.TokenizerSpec` and
still serialize to the bytes the semantic hash has always covered. A component built in
code has no recorded shape and writes every field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..errors import ConfigError

KINDS = ("normalizer", "pre_tokenizer", "model", "decoder", "post_processor")
_REGISTRY: dict[str, dict[str, type[Component]]] = {kind: {} for kind in KINDS}


@dataclasses.dataclass(frozen=True)
class Regex:
    """A regular-expression pattern (Hugging Face ``{"Regex": ...}``); a plain ``str``
    pattern matches literally (``{"String": ...}``)."""

    pattern: str


def pattern_field(default: Any = dataclasses.MISSING) -> Any:
    """A field holding ``str`` (literal) or :class:`Regex`, written as HF's pattern node."""
    return dataclasses.field(default=default, metadata={"pattern": True})


def children_field(kind: str) -> Any:
    """A field holding a list of components of ``kind`` (a ``Sequence``'s members)."""
    return dataclasses.field(default_factory=list, metadata={"children": kind})


def _encode_pattern(value: str | Regex) -> dict[str, str]:
    return {"Regex": value.pattern} if isinstance(value, Regex) else {"String": value}


def _decode_pattern(node: Any, where: str) -> str | Regex:
    if isinstance(node, Mapping) and len(node) == 1:
        if isinstance(node.get("Regex"), str):
            return Regex(node["Regex"])
        if isinstance(node.get("String"), str):
            return str(node["String"])
    raise ConfigError(f"{where}: pattern {node!r} must be {{'String': s}} or {{'Regex': r}}")


# Instance attributes (outside the dataclass fields, so equality, ``repr`` and
# ``dataclasses.fields`` ignore them) holding a read node's shape.
_KEYS = "_node_keys"
_EXTRA = "_node_extra"


@dataclasses.dataclass(frozen=True)
class Component:
    """Base of every pipeline component; subclasses set ``KIND`` and ``TYPE``."""

    KIND: ClassVar[str] = ""
    TYPE: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.TYPE:
            _REGISTRY[cls.KIND][cls.TYPE] = cls

    def to_config(self) -> dict[str, Any]:
        """The ``tokenizer.json`` node of this component (a read node: the keys it had,
        in its order, its unknown keys included)."""
        keys: tuple[str, ...] | None = self.__dict__.get(_KEYS)
        extra: Mapping[str, Any] = self.__dict__.get(_EXTRA) or {}
        fields = {f.name: f for f in dataclasses.fields(self)}
        if keys is None:
            keys = ("type", *fields)
        node: dict[str, Any] = {}
        for key in keys:
            f = fields.get(key)
            if key == "type":
                node[key] = self.TYPE
            elif f is None:
                node[key] = extra[key]
            else:
                node[key] = self._field_node(f)
        return node

    def _field_node(self, f: dataclasses.Field[Any]) -> Any:
        value = getattr(self, f.name)
        if f.metadata.get("pattern"):
            return _encode_pattern(value)
        if f.metadata.get("children"):
            return [child.to_config() for child in value]
        return _plain(value)

    def given(self, name: str, absent: Any) -> Any:
        """The field ``name``, or ``absent`` when the node this component was read from
        did not have the key (a reader whose default differs from the field's)."""
        keys: tuple[str, ...] | None = self.__dict__.get(_KEYS)
        if keys is not None and name not in keys:
            return absent
        return getattr(self, name)

    @property
    def extra(self) -> Mapping[str, Any]:
        """The keys of the read node that this component does not know (legacy spellings
        such as Metaspace's ``add_prefix_space``); empty for a component built in code."""
        return MappingProxyType(dict(self.__dict__.get(_EXTRA) or {}))

    @classmethod
    def from_config(cls, node: Mapping[str, Any], *, keep_unknown: bool = False) -> Component:
        """Rebuild a component of this kind from its ``tokenizer.json`` node (see
        :func:`from_config`)."""
        return from_config(cls.KIND, node, keep_unknown=keep_unknown)


def _plain(value: Any) -> Any:
    """Tuples become lists (JSON arrays); everything else is already JSON-shaped."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def from_config(
    kind: str, node: Mapping[str, Any], where: str | None = None, *, keep_unknown: bool = False
) -> Component:
    """The component of ``kind`` described by ``node``; ConfigError names what is wrong.

    The component remembers the node's shape, so ``to_config()`` gives ``node`` back.
    Unknown keys raise ConfigError, unless ``keep_unknown`` (the ``tokenizer.json``
    reader: a file's extra keys are kept and written back, children included)."""
    where = where or kind
    if not isinstance(node, Mapping):
        raise ConfigError(f"{where}: expected a JSON object, got {type(node).__name__}")
    kind_types = _REGISTRY[kind]
    cls = kind_types.get(node.get("type", ""))
    if cls is None:
        raise ConfigError(
            f"{where}: unknown {kind} type {node.get('type')!r}; "
            f"known types: {', '.join(sorted(kind_types))}"
        )
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(node) - set(fields) - {"type"})
    if unknown and not keep_unknown:
        raise ConfigError(
            f"{where}: {cls.TYPE} has no field(s) {unknown}; its fields: {sorted(fields)}"
        )
    args: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in node:
            continue  # the dataclass default is Hugging Face's default
        value = node[name]
        if f.metadata.get("pattern"):
            value = _decode_pattern(value, f"{where}.{name}")
        elif f.metadata.get("children"):
            if not isinstance(value, list):
                raise ConfigError(f"{where}.{name}: expected a list of {f.metadata['children']}")
            value = [
                from_config(
                    f.metadata["children"],
                    item,
                    f"{where}.{name}[{i}]",
                    keep_unknown=keep_unknown,
                )
                for i, item in enumerate(value)
            ]
        args[name] = value
    try:
        component = cls(**args)
    except TypeError as exc:
        raise ConfigError(f"{where}: cannot build {cls.TYPE}: {exc}") from None
    # The node's shape (keys, order, unknown keys), so to_config() writes it back.
    object.__setattr__(component, _KEYS, tuple(node))
    if unknown:
        object.__setattr__(component, _EXTRA, {key: node[key] for key in unknown})
    return component


def component_class(kind: str, type_name: str) -> type[Component] | None:
    """The component class of ``kind`` named ``type_name`` (None when tokenpact has none)."""
    return _REGISTRY[kind].get(type_name)


def known_types(kind: str) -> list[str]:
    """The ``type`` names of ``kind`` that tokenpact can describe."""
    return sorted(_REGISTRY[kind])


# Field groups that Hugging Face repeats across kinds (the same keys and defaults).
@dataclasses.dataclass(frozen=True)
class ByteLevelFields:
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True


@dataclasses.dataclass(frozen=True)
class MetaspaceFields:
    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True


@dataclasses.dataclass(frozen=True)
class ReplaceFields:
    """Replace every match of ``pattern`` (a literal ``str`` or a :class:`Regex`)."""

    pattern: str | Regex = pattern_field()
    content: str = ""
