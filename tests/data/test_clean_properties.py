"""Properties of the cleaning statistics and rewrites, on generated text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.data.cleaning import PiiConfig, QualityConfig, ngram_keys
from tokenpact.data.cleaning import quality_stats as qs
from tokenpact.data.cleaning.decontam import text_units

WORDS = st.lists(
    st.sampled_from(["the", "cat", "sleeps", "猫", "は", "眠る", "#", "...", "-", "x1", "été"]),
    max_size=60,
)
TEXT = st.lists(
    st.sampled_from(list("ab c\n.@-:0123456789猫ねé#{}+()") + ["...", "\n\n", " lorem ipsum "]),
    max_size=200,
).map("".join)


@given(WORDS, st.integers(1, 6))
def test_ngram_fractions_are_shares(words: list[str], n: int) -> None:
    top = qs.top_ngram_char_fraction(words, n)
    dup = qs.duplicate_ngram_char_fraction(words, n)
    assert 0.0 <= top <= 1.0 and 0.0 <= dup <= 1.0
    # A repeated most-frequent n-gram means some characters are in repeated n-grams.
    assert (top > 0) <= (dup > 0)
    # Doubling a text makes every n-gram of it repeat.
    if len(words) >= n and any(words):
        assert qs.duplicate_ngram_char_fraction(words + words, n) == 1.0


@settings(max_examples=300)
@given(WORDS, st.integers(1, 12))
def test_vectorized_ngram_shares_equal_the_reference(words: list[str], n: int) -> None:
    shares = qs.NgramShares(words)
    assert shares.top(n) == qs.top_ngram_char_fraction(words, n)
    assert shares.duplicate(n) == qs.duplicate_ngram_char_fraction(words, n)


@given(st.lists(st.text(max_size=8), max_size=20))
def test_duplicate_fractions_count_repeats_after_the_first(items: list[str]) -> None:
    share, chars = qs.duplicate_fractions(items)
    assert 0.0 <= share <= 1.0 and 0.0 <= chars <= 1.0
    assert share == (0.0 if not items else (len(items) - len(set(items))) / len(items))


@settings(max_examples=200)
@given(TEXT)
def test_pii_scrub_is_idempotent(text: str) -> None:
    worker = PiiConfig(types=("EMAIL", "IPV4", "IPV6", "CREDIT_CARD", "IBAN", "PHONE")).prepare()
    once, counts = worker.scrub(text)
    twice, again = worker.scrub(once)
    assert twice == once and not again
    assert sum(counts.values()) == sum(once.count(f"<{t}>") - text.count(f"<{t}>") for t in counts)


@settings(max_examples=100)
@given(TEXT)
def test_quality_worker_is_total_and_deterministic(text: str) -> None:
    worker = QualityConfig.c4().prepare()
    a, b = worker(text, {}), worker(text, {})
    assert a == b
    assert (a.text is None) == bool(a.reasons)


@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "猫", "犬", "鳥"]), min_size=1, max_size=40)
)
def test_a_text_shares_every_ngram_with_itself(units: list[str]) -> None:
    text = " ".join(units)
    keys = ngram_keys(text, n=3, char_n=2)
    words, chars = text_units(text)
    assert len(keys) <= max(0, len(words) - 2) + max(0, len(chars) - 1)
    assert keys <= ngram_keys(text + " " + text, n=3, char_n=2)
