"""The fast indented JSON writer is byte-identical to ``json.dumps(indent=2)``."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.formats.json_text import dumps_indented

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers() | st.booleans() | st.none(), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_matches_json_dumps(data: object) -> None:
    assert dumps_indented(data) == json.dumps(data, ensure_ascii=False, indent=2)


def test_trained_shapes() -> None:
    data = {
        "version": "1.0",
        "model": {
            "vocab": {"a": 0, "\u2581b\n": 1, '"': 2},
            "merges": [["a", "b"], ["ab", "</w>"]],
        },
        "added_tokens": [],
        "decoder": None,
        "x": {},
        "f": [1.5, float("inf"), float("-inf"), -0.0, 1e300],
    }
    assert dumps_indented(data) == json.dumps(data, ensure_ascii=False, indent=2)


def test_unserializable_raises_type_error() -> None:
    import pytest

    with pytest.raises(TypeError):
        dumps_indented({"a": object()})
    with pytest.raises(TypeError):
        dumps_indented({(1, 2): 1})
