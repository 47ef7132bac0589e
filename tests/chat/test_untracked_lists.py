"""Per-token lists the native layer builds (IDs, trusted kind lists, a batch record's
assistant mask) hold only ints or strs, so the cyclic collector does not track them (no collection
walks their items); they equal what Python would build, and a caller that later stores
a container in one makes a cycle that stays alive, never a freed object."""

from __future__ import annotations

import gc
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import ChatModel

TOKEN_LISTS = ("input_ids", "special_tokens_mask", "origin", "assistant_mask")


def reference_mask(length: int, ranges: list[tuple[int, int]]) -> list[int]:
    mask = [0] * length
    for lo, hi in ranges:
        mask[lo:hi] = [1] * (hi - lo)
    return mask


@st.composite
def mask_cases(draw: Any) -> tuple[int, list[tuple[int, int]]]:
    length = draw(st.integers(0, 400))
    bound = st.integers(0, length)
    pairs = draw(st.lists(st.tuples(bound, bound), max_size=6))
    return length, [(min(a, b), max(a, b)) for a, b in pairs]


@settings(max_examples=150, deadline=None)
@given(case=mask_cases())
def test_native_mask_equals_the_python_mask(case: tuple[int, list[tuple[int, int]]]) -> None:
    from tokenpact import _native

    length, ranges = case
    mask = _native.chat_mask_list(length, ranges)
    assert mask == reference_mask(length, ranges)
    assert not gc.is_tracked(mask)


def test_native_mask_rejects_bad_ranges(tp: ModuleType) -> None:
    from tokenpact import _native

    with pytest.raises(tp.errors.ConfigError, match="range 3..7 outside 5 tokens"):
        _native.chat_mask_list(5, [(3, 7)])
    with pytest.raises(tp.errors.ConfigError, match="range 4..2 outside 5 tokens"):
        _native.chat_mask_list(5, [(4, 2)])
    with pytest.raises(OverflowError):
        _native.chat_mask_list(5, [(-1, 2)])


def test_native_id_and_kind_lists_are_untracked(deepseek: ChatModel) -> None:
    from tokenpact import _native
    from tokenpact.chat._encode import _native_engine
    from tokenpact.chat.conversation import KINDS

    engine = _native_engine(deepseek.tok)
    assert engine is not None
    ids = np.array([0, 1, 2, 2**31], dtype=np.uint32)  # the last past the cached range
    codes = np.array([0, 1, 2, 3], dtype=np.uint8)
    for lists in (
        _native.chat_token_lists(ids, codes, KINDS),
        _native.chat_token_lists(ids, codes, KINDS, engine),
        (engine.id_array_list(ids),),
    ):
        assert lists[0] == ids.tolist()
        assert not any(gc.is_tracked(x) for x in lists)


@pytest.mark.parametrize("threads", [1, 2])
def test_conversation_lists_are_untracked(deepseek: ChatModel, threads: int) -> None:
    template = deepseek.template
    records = [
        [
            {"role": "user", "content": f"question {k} " * (k + 1)},
            {"role": "assistant", "content": f"answer {k}"},
        ]
        for k in range(12)
    ]
    single = template.render(records[0], mode="training")
    for name in TOKEN_LISTS[:3]:  # render's mask comes from the Python ownership pass
        assert not gc.is_tracked(getattr(single, name)), name
    # A batch record's lists built while later records render (the kind lists are
    # built on first read, after the batch, from numpy).
    for conv in template.render_batch(records, threads=threads):
        for name in ("input_ids", "assistant_mask"):
            assert not gc.is_tracked(getattr(conv, name)), name


def test_a_container_stored_later_stays_alive(deepseek: ChatModel) -> None:
    """An untracked list is an outside reference to the collector: a cycle stored in it
    survives collections (it is freed with the list), whatever the caller does."""
    conv = deepseek.template.render([{"role": "user", "content": "hello"}])
    ids = conv.input_ids
    cycle: list[Any] = []
    cycle.append(cycle)
    ids.append(cycle)
    del cycle
    gc.collect()
    assert ids[-1][0] is ids[-1]
    ids.pop()
    gc.collect()
