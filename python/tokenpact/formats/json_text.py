"""``json.dumps(data, ensure_ascii=False, indent=2)``, byte for byte, without the slow path.

With ``indent`` set, the standard library drops its C encoder for a generator per value;
a trained ``tokenizer.json`` (tens of thousands of vocabulary entries and merges) spent
more time there than in training. This writer keeps the C string escaper and joins each
container's lines at once; ``tests/unit/test_json_text.py`` holds it to ``json.dumps``.
"""

from __future__ import annotations

import json
from typing import Any

_escape = json.encoder.encode_basestring  # type: ignore[attr-defined]
_float = float.__repr__


def _scalar(value: Any) -> str | None:
    """The text of a non-container value (``json.dumps``'s spelling), else ``None``."""
    if isinstance(value, str):
        return _escape(value)  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return _float(value)
    return None


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _escape(key)  # type: ignore[no-any-return]
    text = _scalar(key)  # json.dumps spells such keys as their value's text, quoted
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return _escape(text)  # type: ignore[no-any-return]


def _encode(value: Any, level: int) -> str:
    text = _scalar(value)
    if text is not None:
        return text
    inner = "\n" + "  " * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{_key(k)}: {_encode(v, level + 1)}" for k, v in value.items()]
        return "{" + inner + ("," + inner).join(items) + "\n" + "  " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = [_encode(v, level + 1) for v in value]
        return "[" + inner + ("," + inner).join(items) + "\n" + "  " * level + "]"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps_indented(data: Any) -> str:
    """Exactly ``json.dumps(data, ensure_ascii=False, indent=2)`` for JSON-shaped data."""
    return _encode(data, 0)
