"""Structural validation of a Hugging Face ``tokenizer.json``, in one place, before any
table is built.

A ``tokenizer.json`` downloaded from the internet is untrusted input (docs/SECURITY.md).
The loaders in :mod:`.hf_json` and :mod:`.hf_pipeline` read it with plain dict access,
so this module checks every shape they rely on first: each component node against the
field types of its typed component (:mod:`tokenpact.components`, the one description of
the format), the vocabulary, merges, added tokens and post-processor templates, IDs as
unsigned 32-bit integers, finite scores, and a bounded nesting depth. Every violation is
an :class:`~tokenpact.errors.ArtifactError` naming the JSON path and the fix.

Unknown component types are left to the loaders, which name them as unsupported.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, NoReturn, cast

from ..components import Regex, component_class
from ..errors import ArtifactError

# IDs cross into the engine as uint32.
MAX_ID = 2**32 - 1
# Deepest Sequence-in-Sequence nesting accepted (real files use 1 or 2).
MAX_DEPTH = 16
_CHILDREN = {
    "normalizer": "normalizers",
    "pre_tokenizer": "pretokenizers",
    "decoder": "decoders",
    "post_processor": "processors",
}
_ADDED_FLAGS = ("special", "single_word", "lstrip", "rstrip", "normalized")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Checker:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str, fix: str) -> NoReturn:
        raise ArtifactError(f"{self.path}: {where}: {problem}; {fix}")

    def expect(self, value: Any, cls: type | tuple[type, ...], where: str, what: str) -> None:
        if not isinstance(value, cls) or (isinstance(value, bool) and bool not in _tuple(cls)):
            self.fail(where, f"expected {what}, found {_type_name(value)}", f"write {what} here")

    def id_(self, value: Any, where: str) -> int:
        if not _is_int(value) or not 0 <= value <= MAX_ID:
            self.fail(
                where,
                f"{value!r} is not a token ID",
                f"give an integer in 0..{MAX_ID}",
            )
        return int(value)

    # ------------------------------------------------------------------ top level
    def document(self, data: Any) -> None:
        if not isinstance(data, dict):
            self.fail(
                "$", f"expected a JSON object, found {_type_name(data)}", "load a tokenizer.json"
            )
        model = data.get("model")
        if not isinstance(model, dict):
            self.fail(
                "$.model",
                f"expected the model object, found {_type_name(model)}",
                "give the model node (BPE, WordPiece, WordLevel or Unigram)",
            )
        for kind in ("normalizer", "pre_tokenizer", "decoder", "post_processor"):
            node = data.get(kind)
            if node is not None:
                self.component(kind, node, f"$.{kind}", 0)
        self.component("model", model, "$.model", 0)
        self.added_tokens(data.get("added_tokens"))
        for key in ("truncation", "padding"):
            value = data.get(key)
            if value is not None:
                self.expect(value, dict, f"$.{key}", "an object or null")
        padding = data.get("padding") or {}
        if "pad_token" in padding and not isinstance(padding["pad_token"], str):
            self.fail("$.padding.pad_token", "is not a string", "give the padding token's text")

    def added_tokens(self, value: Any) -> None:
        if value is None:
            return
        self.expect(value, list, "$.added_tokens", "a list of token objects")
        for i, entry in enumerate(value):
            where = f"$.added_tokens[{i}]"
            self.expect(entry, dict, where, "an object {id, content, ...}")
            self.id_(entry.get("id"), f"{where}.id")
            content = entry.get("content")
            if not isinstance(content, str) or not content:
                self.fail(f"{where}.content", f"{content!r}", "give the token's non-empty text")
            for flag in _ADDED_FLAGS:
                if flag in entry and not isinstance(entry[flag], bool):
                    self.fail(f"{where}.{flag}", f"{entry[flag]!r}", "write true or false")

    # ------------------------------------------------------------------ components
    def component(self, kind: str, node: Any, where: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.fail(where, f"nested deeper than {MAX_DEPTH} levels", "flatten the Sequence")
        self.expect(node, dict, where, f"a {kind} object or null")
        kind_type = node.get("type")
        if not isinstance(kind_type, str):
            self.fail(f"{where}.type", f"{kind_type!r}", f"name the {kind} type")
        cls = component_class(kind, kind_type)
        if cls is None:
            return  # the loader names the unsupported type
        for name, annotation in _field_types(cast(Any, cls)).items():
            if name not in node:
                continue
            value, at = node[name], f"{where}.{name}"
            if name == _CHILDREN.get(kind) and kind_type == "Sequence":
                self.expect(value, list, at, f"a list of {kind} objects")
                for i, child in enumerate(value):
                    self.component(kind, child, f"{at}[{i}]", depth + 1)
            elif kind == "model" and name == "vocab":
                self.vocab(kind_type, value, at)
            elif kind == "model" and name == "merges":
                self.merges(value, at)
            elif name == "pattern":
                self.pattern(value, at)
            else:
                self.value(value, annotation, at)
        if kind == "post_processor":
            self.post_processor(node, where)

    def value(self, value: Any, annotation: Any, where: str) -> None:
        if not _matches(value, annotation):
            what = _describe(annotation)
            self.fail(where, f"expected {what}, found {_short(value)}", f"write {what} here")

    def pattern(self, value: Any, where: str) -> None:
        ok = isinstance(value, dict) and len(value) == 1
        key = next(iter(value), None) if ok else None
        if not ok or key not in ("String", "Regex") or not isinstance(value[key], str):
            self.fail(where, f"{_short(value)}", 'write {"String": "..."} or {"Regex": "..."}')

    def vocab(self, model_type: str, value: Any, where: str) -> None:
        if model_type == "Unigram":
            self.expect(value, list, where, "a list of [piece, score] pairs")
            for i, entry in enumerate(value):
                ok = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                score: Any = entry[1] if ok else None
                if not ok or not _is_number(score) or not math.isfinite(score):
                    self.fail(f"{where}[{i}]", f"{_short(entry)}", "give [piece, finite score]")
            return
        self.expect(value, dict, where, "an object {token: ID}")
        for token, token_id in value.items():
            if not _is_int(token_id) or not 0 <= token_id <= MAX_ID:
                self.id_(token_id, f"{where}[{token!r}]")

    def merges(self, value: Any, where: str) -> None:
        self.expect(value, list, where, 'a list of "left right" strings or [left, right] pairs')
        for i, entry in enumerate(value):
            if isinstance(entry, str):
                continue
            if not (
                isinstance(entry, list)
                and len(entry) == 2
                and isinstance(entry[0], str)
                and isinstance(entry[1], str)
            ):
                self.fail(f"{where}[{i}]", f"{_short(entry)}", 'give "left right" or [left, right]')

    def post_processor(self, node: dict[str, Any], where: str) -> None:
        kind = node.get("type")
        if kind in ("BertProcessing", "RobertaProcessing"):
            for key in ("sep", "cls"):
                pair = node.get(key)
                if pair is not None and not (
                    isinstance(pair, list)
                    and len(pair) == 2
                    and isinstance(pair[0], str)
                    and _is_int(pair[1])
                ):
                    self.fail(f"{where}.{key}", f"{_short(pair)}", "give [token, id]")
                if pair is not None:
                    self.id_(pair[1], f"{where}.{key}[1]")
        if kind != "TemplateProcessing":
            return
        for key in ("single", "pair"):
            for i, item in enumerate(node.get(key) or []):
                self.template_item(item, f"{where}.{key}[{i}]")
        for name, spec in (node.get("special_tokens") or {}).items():
            at = f"{where}.special_tokens[{name!r}]"
            self.expect(spec, dict, at, "an object {id, ids, tokens}")
            ids, tokens = spec.get("ids", []), spec.get("tokens", [])
            self.expect(ids, list, f"{at}.ids", "a list of IDs")
            self.expect(tokens, list, f"{at}.tokens", "a list of token strings")
            for j, token_id in enumerate(ids):
                self.id_(token_id, f"{at}.ids[{j}]")
            if not all(isinstance(t, str) for t in tokens):
                self.fail(f"{at}.tokens", "holds a non-string", "list the token strings")

    def template_item(self, item: Any, where: str) -> None:
        ok = isinstance(item, dict) and len(item) == 1
        key = next(iter(item), None) if ok else None
        body = item.get(key) if ok else None
        if key not in ("SpecialToken", "Sequence") or not isinstance(body, dict):
            self.fail(
                where, f"{_short(item)}", 'give {"SpecialToken": {...}} or {"Sequence": {...}}'
            )
        if not isinstance(body.get("id"), str):
            self.fail(f"{where}.{key}.id", f"{_short(body.get('id'))}", "give the token or A/B")
        if key == "Sequence" and body["id"] not in ("A", "B"):
            self.fail(f"{where}.Sequence.id", f"{body['id']!r}", 'use "A" or "B"')
        type_id = body.get("type_id", 0)
        if not _is_int(type_id) or not 0 <= type_id <= MAX_ID:
            self.fail(f"{where}.{key}.type_id", f"{_short(type_id)}", "give a small integer")


def validate(path: str | Path, data: Any) -> None:
    """Raise :class:`ArtifactError` (naming the JSON path and the fix) unless ``data``
    has the shape every ``tokenizer.json`` reader in tokenpact relies on."""
    _Checker(Path(path)).document(data)


# ---------------------------------------------------------------------- type matching
@cache
def _field_types(cls: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _tuple(cls: type | tuple[type, ...]) -> tuple[type, ...]:
    return cls if isinstance(cls, tuple) else (cls,)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _matches(value: Any, annotation: Any) -> bool:
    """Whether a JSON value fits a component field's annotation."""
    if annotation is Any:
        return True
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return _is_int(value) and abs(value) <= MAX_ID
    if annotation is float:
        return _is_number(value) and math.isfinite(value)
    if annotation is str:
        return isinstance(value, str)
    if annotation is Regex:
        return False  # patterns are checked by _Checker.pattern
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_matches(v, args[0]) for v in value)
    if origin is tuple:
        return (
            isinstance(value, list)
            and len(value) == len(args)
            and all(_matches(v, a) for v, a in zip(value, args, strict=True))
        )
    if origin is dict:
        return isinstance(value, dict) and all(_matches(v, args[1]) for v in value.values())
    if isinstance(annotation, type) and issubclass(annotation, Mapping):
        return isinstance(value, dict)
    return isinstance(annotation, type) and isinstance(value, annotation)


def _describe(annotation: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}
    if annotation in names:
        return names[annotation]
    if annotation is type(None):
        return "null"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is list:
        return f"a list of ({_describe(args[0])})"
    if origin is tuple:
        return f"[{', '.join(_describe(a) for a in args)}]"
    if origin is dict:
        return f"an object of ({_describe(args[1])})"
    return "an object"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
