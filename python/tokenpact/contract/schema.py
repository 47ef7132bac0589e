"""The packaged JSON Schemas (Draft 2020-12) and structural validation against them.

``manifest.schema.json`` describes ``manifest.json``; ``declarations.schema.json`` holds
the corpus, template, golden, dataset, checkpoint and bundle documents under ``$defs``.
Schemas check structure only; relations across documents are checked in Python.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..errors import ContractError

MANIFEST_SCHEMA = "manifest.schema.json"
DECLARATIONS_SCHEMA = "declarations.schema.json"
DECLARATION_KINDS = ("corpus", "template", "golden", "dataset", "checkpoint", "bundle")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Return a packaged schema by file name."""
    folder = resources.files(__package__).joinpath("schemas")
    text = folder.joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(name: str, definition: str | None) -> Any:
    try:
        # Lazy: jsonschema (and its referencing/rpds stack) loads only when a manifest is
        # validated, not with every import of the contract.
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a runtime dependency
        raise ContractError(
            "schema validation needs the 'jsonschema' package; pip install jsonschema"
        ) from None
    schema = load_schema(name)
    if definition is not None:
        if definition not in schema.get("$defs", {}):
            raise ContractError(f"{name} has no definition {definition!r}")
        # A wrapper that points at one definition keeps local $refs resolvable.
        schema = {
            "$schema": schema["$schema"],
            "$defs": schema["$defs"],
            "$ref": f"#/$defs/{definition}",
        }
    cls = jsonschema.Draft202012Validator
    cls.check_schema(schema)
    return cls(schema)


def _where(path: Any) -> str:
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def schema_errors(document: Any, name: str, definition: str | None = None) -> list[str]:
    """Return readable schema violations of ``document`` (empty when it conforms)."""
    validator = _validator(name, definition)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path)))
    return [f"{_where(e.path)}: {e.message}" for e in errors]


def manifest_errors(manifest: Any) -> list[str]:
    """Return schema violations of a tokenizer manifest."""
    return schema_errors(manifest, MANIFEST_SCHEMA)


def declaration_errors(document: Any, kind: str) -> list[str]:
    """Return schema violations of a declaration of ``kind`` (corpus, dataset, ...)."""
    if kind not in DECLARATION_KINDS:
        raise ContractError(f"unknown declaration kind {kind!r}; use one of {DECLARATION_KINDS}")
    return schema_errors(document, DECLARATIONS_SCHEMA, kind)


def kind_of(document: Any) -> str | None:
    """Return the short kind (``"corpus"``, ``"bundle"``, ...) of a declaration, or None."""
    kind = document.get("kind") if isinstance(document, dict) else None
    if isinstance(kind, str) and kind.startswith("tokenpact."):
        short = kind[len("tokenpact.") :]
        if short in DECLARATION_KINDS:
            return short
    return None
