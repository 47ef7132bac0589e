"""Canonical JSON: one byte string per value, so equal values hash equally.

The profile is a strict subset of RFC 8785 (JSON Canonicalization Scheme). For every
value it accepts, the output is byte-identical to RFC 8785:

* values: ``null``, booleans, strings, arrays, objects and *safe* integers
  (``-(2**53 - 1) .. 2**53 - 1``, the range every JSON reader represents exactly);
* strings must be valid Unicode scalar sequences (no lone surrogates); they are written
  as UTF-8 and are **not** Unicode-normalized (normalization is tokenizer behaviour and
  must stay visible in the normalizer component);
* object keys are sorted by their UTF-16 code units, as RFC 8785 requires;
* no insignificant whitespace;
* floats (including NaN and infinities) are rejected: write exact decimals as strings.

Array order is kept as given: whether an array is ordered (merges) or set-like (stop IDs)
is decided by the schema, and set-like arrays are sorted before they are sealed.

>>> canonical_bytes({"b": [1, None], "a": "é"})
b'{"a":"\\xc3\\xa9","b":[1,null]}'
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any

from ..errors import ContractError

MAX_SAFE_INTEGER = 2**53 - 1
# Deep nesting is never meaningful in our documents; the bound keeps recursion safe.
MAX_DEPTH = 256

_encode_string = json.JSONEncoder(ensure_ascii=False).encode


class CanonicalError(ContractError):
    """A value falls outside the canonical JSON profile."""


def _fail(path: str, problem: str, fix: str) -> CanonicalError:
    return CanonicalError(f"{path}: {problem}; {fix}")


def _check_string(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _fail(
            path,
            f"string has a lone surrogate at index {exc.start}",
            "store only valid Unicode text (escape raw data as hex or a code-point list)",
        ) from None


def _write(value: Any, path: str, depth: int, out: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise _fail(path, f"nesting deeper than {MAX_DEPTH}", "flatten the document")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, numbers.Integral):
        number = int(value)
        if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            raise _fail(
                path,
                f"integer {value} is outside the safe range ±(2**53 - 1)",
                "store it as a decimal string",
            )
        out.append(str(number))
    elif isinstance(value, float):
        raise _fail(
            path,
            f"float {value!r} is not allowed",
            "store exact decimals as strings (for example '0.5')",
        )
    elif isinstance(value, str):
        _check_string(value, path)
        out.append(_encode_string(value))
    elif isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise _fail(path, f"object key {key!r} is not a string", "use string keys")
            _check_string(key, f"{path}.{key!r}")
        # RFC 8785 orders keys by UTF-16 code units; big-endian bytes compare the same way.
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        out.append("{")
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(_encode_string(key))
            out.append(":")
            _write(value[key], f"{path}.{key}", depth + 1, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, f"{path}[{index}]", depth + 1, out)
        out.append("]")
    else:
        raise _fail(
            path,
            f"{type(value).__name__} is not a JSON value",
            "convert it to null, bool, int, str, list or dict first",
        )


def reference_text(value: Any) -> str:
    """Return the canonical text using the element-by-element writer (the specification;
    slow on large values, and the source of every located error message)."""
    out: list[str] = []
    _write(value, "$", 0, out)
    return "".join(out)


_PLAIN = frozenset({str, bool, type(None)})
# Above U+DFFF, code-point order and UTF-16 order disagree (astral characters sort before
# U+E000..U+FFFF in UTF-16), so such keys need the reference writer's ordering.
_KEY_ORDER_LIMIT = "\ue000"


def _ints_safe(values: Any) -> bool:
    return not values or (min(values) >= -MAX_SAFE_INTEGER and max(values) <= MAX_SAFE_INTEGER)


def _fast_ok(value: Any, depth: int = 0) -> bool:
    """Return True when ``json.dumps`` gives the canonical text; False means "let the
    reference writer decide" (floats, unusual types, keys whose order differs)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (key and max(key) >= _KEY_ORDER_LIMIT):
                return False
            if not _fast_ok(item, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        # Checking types in bulk keeps large vocab / merge / ID lists fast.
        types = set(map(type, value))
        if types <= _PLAIN:
            return True
        if types == {int}:
            return _ints_safe(value)
        if types <= {list, tuple}:
            inner = [x for item in value for x in item]
            inner_types = set(map(type, inner))
            if inner_types <= _PLAIN or (inner_types == {int} and _ints_safe(inner)):
                return depth + 1 < MAX_DEPTH
        return all(_fast_ok(item, depth + 1) for item in value)
    return False


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical UTF-8 bytes of ``value``; this is what hashes cover."""
    if _fast_ok(value):
        text = json.dumps(
            value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), sort_keys=True
        )
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: the reference writer names where it is
    return reference_text(value).encode("utf-8")


def canonical_text(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (raises :class:`CanonicalError`)."""
    return canonical_bytes(value).decode("utf-8")


def check_canonical(value: Any) -> None:
    """Raise :class:`CanonicalError` if ``value`` is outside the profile."""
    canonical_text(value)


def _reject_constant(name: str) -> Any:
    raise CanonicalError(f"JSON constant {name} is not allowed; store exact decimals as strings")


def _reject_float(text: str) -> Any:
    raise CanonicalError(f"JSON number {text} is not an integer; store exact decimals as strings")


class DuplicateKeyError(CanonicalError):
    """A JSON object names one key twice (``key``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate object key {key!r}; keep exactly one")
        self.key = key


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` that refuses a key written twice
    (:class:`DuplicateKeyError`): readers disagree on which duplicate wins, so the
    document is ambiguous."""
    result: dict[str, Any] = {}
    for key, item in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = item
    return result


def loads(data: str | bytes) -> Any:
    """Parse JSON strictly: no duplicate keys, floats, NaN or values outside the profile.

    Whitespace and key order are free; the parsed value is what gets hashed.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CanonicalError(f"document is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(
            data,
            object_pairs_hook=unique_object,
            parse_float=_reject_float,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as exc:
        raise CanonicalError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise CanonicalError(f"nesting deeper than {MAX_DEPTH}; flatten the document") from None
    check_canonical(value)
    return value


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar), without
    recursion, so a hostile document cannot exhaust the stack while it is measured."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def is_canonical(data: bytes) -> bool:
    """Return True when ``data`` is exactly the canonical encoding of the value it holds."""
    try:
        return canonical_bytes(loads(data)) == data
    except CanonicalError:
        return False


def pretty_text(value: Any) -> str:
    """Return a human-friendly rendering (sorted keys, indented) of a canonical value.

    Files we write for people to read use this; hashes always use :func:`canonical_bytes`.
    """
    check_canonical(value)
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
