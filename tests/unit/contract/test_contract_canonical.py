"""Canonical JSON: the RFC 8785 subset every hash is computed over."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenpact.contract.canonical import (
    MAX_SAFE_INTEGER,
    CanonicalError,
    canonical_bytes,
    canonical_text,
    is_canonical,
    loads,
    pretty_text,
    reference_text,
)
from tokenpact.errors import ContractError


def test_sorted_keys_no_whitespace_raw_utf8() -> None:
    value = {"b": [1, None, True, False], "a": "é\n\x1f", "c": {}}
    assert canonical_bytes(value) == '{"a":"é\\n\\u001f","b":[1,null,true,false],"c":{}}'.encode()


def test_keys_are_ordered_by_utf16_code_units_like_rfc8785() -> None:
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+E000 although its code point is
    # larger; Python's sort_keys would put U+E000 first.
    text = canonical_text({"\ue000": 1, "\U0001f600": 2, "a": 3})
    assert text == '{"a":3,"\U0001f600":2,"\ue000":1}'


def test_rfc8785_escaping_of_control_characters_and_quotes() -> None:
    assert canonical_text('"\\\b\f\n\r\t\x00\x7f') == '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\x7f"'


def test_null_differs_from_empty_object() -> None:
    assert canonical_bytes(None) != canonical_bytes({})
    assert canonical_bytes({"decoder": None}) != canonical_bytes({"decoder": {}})


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (0.5, "float"),
        (float("nan"), "float"),
        (float("inf"), "float"),
        (MAX_SAFE_INTEGER + 1, "safe range"),
        (-MAX_SAFE_INTEGER - 1, "safe range"),
        ({1: "x"}, "not a string"),
        (b"bytes", "not a JSON value"),
        ({"x"}, "not a JSON value"),
        ("a\ud800b", "lone surrogate"),
        ({"k\udfff": 1}, "lone surrogate"),
    ],
)
def test_values_outside_the_profile_are_rejected_with_a_fix(value: object, needle: str) -> None:
    with pytest.raises(CanonicalError, match=needle):
        canonical_bytes(value)


def test_errors_name_the_path_and_are_contract_errors() -> None:
    with pytest.raises(ContractError, match=r"\$\.model\.scores\[1\]"):
        canonical_bytes({"model": {"scores": [1, 0.25]}})


def test_safe_integer_limits_are_accepted() -> None:
    assert canonical_text([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]) == (
        f"[{MAX_SAFE_INTEGER},-{MAX_SAFE_INTEGER}]"
    )


def test_deep_nesting_is_rejected() -> None:
    value: object = []
    for _ in range(300):
        value = [value]
    with pytest.raises(CanonicalError, match="nesting"):
        canonical_bytes(value)


def test_tuples_and_numpy_integers_serialize_like_lists_and_ints() -> None:
    assert canonical_text({"ids": (1, np.int64(2))}) == '{"ids":[1,2]}'


def test_fast_path_matches_the_reference_writer() -> None:
    value = {
        "vocab": ["6162", "20"],
        "merges": [[0, 1], [2, 3]],
        "specials": [{"id": 9, "content": "<|bos|>", "role": "bos"}],
        "text": "Ελληνικά 👍",
        "nested": [[["x"]], [], {}],
    }
    assert canonical_bytes(value) == reference_text(value).encode("utf-8")


def test_loads_is_strict() -> None:
    assert loads(b' { "b" : [1, 2], "a" : null } ') == {"a": None, "b": [1, 2]}
    with pytest.raises(CanonicalError, match="duplicate"):
        loads('{"a": 1, "a": 2}')
    with pytest.raises(CanonicalError, match="not an integer"):
        loads('{"a": 1.0}')
    with pytest.raises(CanonicalError, match="NaN"):
        loads('{"a": NaN}')
    with pytest.raises(CanonicalError, match="UTF-8"):
        loads(b'{"a": "\xff"}')
    with pytest.raises(CanonicalError, match="invalid JSON"):
        loads("{")


def test_is_canonical() -> None:
    assert is_canonical(b'{"a":1,"b":[]}')
    assert not is_canonical(b'{"b":[],"a":1}')
    assert not is_canonical(b'{"a": 1}')
    assert not is_canonical(b"{oops")


def test_pretty_text_parses_back_to_the_same_value() -> None:
    value = {"z": [1, {"y": "é"}], "a": None}
    assert json.loads(pretty_text(value)) == value
    assert pretty_text(value).endswith("\n")
