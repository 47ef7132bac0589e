"""The Rust stop-string automaton equals the Python Aho-Corasick reference (and both
equal a naive search): same first completing match, same pattern, same live depth."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact import _native
from tokenpact.runtime.automaton import Automaton

ALPHABET = st.sampled_from("ab€ S\u0301")


@settings(max_examples=300)
@given(
    patterns=st.lists(st.text(ALPHABET, min_size=1, max_size=5), min_size=1, max_size=6),
    chunks=st.lists(st.text(ALPHABET, max_size=6), max_size=8),
)
def test_rust_scanner_equals_reference(patterns: list[str], chunks: list[str]) -> None:
    rust = _native.StopScannerCore(patterns)
    ref = Automaton(patterns)
    state, seen = 0, ""
    for chunk in chunks:
        want = None
        for k, char in enumerate(chunk):
            state = ref.step(state, char)
            if ref.match(state) >= 0:
                want = (k + 1, ref.match(state))
                break
        got = rust.feed(chunk)
        assert got == want
        if got is not None:
            used, index = got
            text = seen + chunk[:used]
            # Naive: no stop occurs before this end, and the chosen one is the longest here.
            ends = [p for p in patterns if text.endswith(p)]
            assert patterns[index] == max(ends, key=len)
            assert not any(p in text[:-1] for p in patterns)
            return
        seen += chunk
        assert rust.depth() == ref.depth[state]
        live = max(
            (k for p in patterns for k in range(1, len(p)) if seen.endswith(p[:k])), default=0
        )
        assert rust.depth() == live
