"""Hypothesis: fast entropy patcher == reference, chunking never matters, prefix stability."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tokenpact as tp
from tokenpact.bytes import (
    ByteNGramModel,
    EntropyPatcher,
    EntropyRule,
    FixedStridePatcher,
    Smoothing,
    WhitespacePatcher,
    check_prefix_stability,
    reference_entropies,
    reference_starts,
    tokenizer_segmenter,
)

# Small alphabets make repeated contexts (and so low entropies) likely.
small_bytes = st.binary(min_size=0, max_size=60).map(lambda b: bytes(x % 7 + 97 for x in b))
any_bytes = st.one_of(small_bytes, st.binary(max_size=60))
models = st.builds(
    lambda docs, k, alpha, backoff: ByteNGramModel.train(
        docs, context_bytes=k, smoothing=Smoothing(alpha=alpha, backoff=backoff)
    ),
    st.lists(any_bytes, max_size=6),
    st.integers(0, 3),
    st.sampled_from([0.0, 0.01, 0.1, 1.0]),
    st.booleans(),
)
rules = st.builds(
    lambda kind, t: EntropyRule(kind=kind, threshold=t),
    st.sampled_from(["global", "relative"]),
    st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.5, 4.0, 7.9]),
)


@settings(deadline=None)
@given(models, rules, any_bytes)
def test_fast_patcher_equals_reference(
    model: ByteNGramModel, rule: EntropyRule, data: bytes
) -> None:
    patcher = EntropyPatcher(model, rule)
    fast = patcher.entropies(data)
    ref = np.asarray(reference_entropies(model, data), dtype=np.float32)
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-5)
    # Starts agree unless an entropy (or jump) sits within rounding of the threshold.
    jumps = np.diff(fast) if rule.kind == "relative" else fast
    assume(not np.any(np.abs(jumps - np.float32(rule.threshold)) < 1e-4))
    assert patcher.starts(data).tolist() == reference_starts(model, rule, data)


@settings(deadline=None)
@given(models, rules, any_bytes, st.lists(st.integers(1, 20), max_size=8))
def test_chunked_incremental_equals_whole(
    model: ByteNGramModel, rule: EntropyRule, data: bytes, sizes: list[int]
) -> None:
    patcher = EntropyPatcher(model, rule)
    stream = patcher.incremental()
    position = 0
    for size in [*sizes, len(data)]:
        committed = stream.starts.tolist()
        stream.push(data[position : position + size])
        assert stream.starts.tolist()[: len(committed)] == committed  # never moved
        position += size
    assert stream.starts.tolist() == patcher.starts(data).tolist()


@settings(deadline=None)
@given(models, rules, any_bytes)
def test_entropy_patcher_is_prefix_stable(
    model: ByteNGramModel, rule: EntropyRule, data: bytes
) -> None:
    report = check_prefix_stability(EntropyPatcher(model, rule).starts, data)
    assert report.stable, report.describe()


@settings(deadline=None)
@given(any_bytes, st.integers(1, 9))
def test_rule_based_patchers_are_prefix_stable(data: bytes, stride: int) -> None:
    assert check_prefix_stability(FixedStridePatcher(stride=stride).starts, data).stable
    assert check_prefix_stability(WhitespacePatcher().starts, data).stable


@settings(deadline=None)
@given(st.text(alphabet="abc", min_size=3, max_size=12))
def test_bpe_counterexample_generalizes(text: str) -> None:
    tok = tp.Tokenizer.from_merges([(ord("b"), ord("c")), (ord("a"), ord("b"))])
    report = check_prefix_stability(tokenizer_segmenter(tok), text, cuts="chars")
    # Unstable exactly when some "ab" is followed by "c" (the b+c merge steals the b).
    assert report.stable == ("abc" not in text)


def _whitespace_reference(data: bytes) -> list[int]:
    """The whitespace rule one byte at a time: a non-space-like byte after a space-like one."""

    def space_like(b: int) -> bool:
        return b < 128 and not chr(b).isalnum()

    return [
        i
        for i in range(len(data))
        if i == 0 or (space_like(data[i - 1]) and not space_like(data[i]))
    ]


@settings(deadline=None)
@given(any_bytes)
def test_whitespace_patcher_equals_reference(data: bytes) -> None:
    assert WhitespacePatcher().starts(data).tolist() == _whitespace_reference(data)
