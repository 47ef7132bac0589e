"""Near dedup: LSH clusters equal the all-pairs reference; min doc_id kept."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.data import (
    Document,
    MinHashParams,
    brute_force_clusters,
    deduplicate,
    jaccard,
    near_dedup,
    shingles,
)
from tokenpact.errors import ConfigError


def _edited(text: str, rnd: random.Random, edits: int) -> str:
    words = text.split()
    for _ in range(edits):
        if words:
            words[rnd.randrange(len(words))] = rnd.choice(["foo", "bar", "baz"])
    return " ".join(words)


def _corpus(real_docs: list[Document]) -> list[Document]:
    """Real paragraphs plus lightly edited copies (true near duplicates)."""
    rnd = random.Random(0)
    base = [d for d in real_docs if len(d.text.split()) >= 80][:80]
    docs = list(base)
    for i, d in enumerate(base[:30]):
        for k in range(rnd.randint(1, 3)):
            docs.append(Document(f"copy{i:02d}-{k}", _edited(d.text, rnd, k % 2), d.source))
    rnd.shuffle(docs)
    return docs


def _clusters(result: object) -> set[frozenset[str]]:
    return {frozenset((c.kept, *c.removed)) for c in result.clusters}  # type: ignore[attr-defined]


def _similarities(docs: list[Document], params: MinHashParams) -> list[float]:
    sets = [set(shingles(d.text, kind=params.shingle, n=params.n)) for d in docs]
    return [jaccard(a, b) for i, a in enumerate(sets) for b in sets[i + 1 :]]


@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_clusters_equal_brute_force_on_real_text(
    real_docs: list[Document], threshold: float
) -> None:
    """LSH is probabilistic: a pair just above the threshold can be missed. The corpus is
    checked to have no pair in [threshold, 0.85), where the banding chosen for these
    thresholds detects a pair with probability > 0.999, so equality is the expectation."""
    docs = _corpus(real_docs)
    params = MinHashParams(num_perm=128, n=3)
    assert not [j for j in _similarities(docs, params) if threshold <= j < 0.85]
    fast = near_dedup(docs, threshold=threshold, params=params)
    slow = brute_force_clusters(docs, threshold=threshold, params=params)
    assert fast.clusters, "the corpus must contain near duplicates"
    assert _clusters(fast) == _clusters(slow)
    assert fast.duplicate_of == slow.duplicate_of
    assert [d.doc_id for d in fast.kept] == [d.doc_id for d in slow.kept]
    for c in fast.clusters:
        assert c.kept == min((c.kept, *c.removed))


@settings(max_examples=40)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=0, max_size=8), max_size=14),
    st.sampled_from([0.2, 0.4, 0.6, 1.0]),
)
def test_every_candidate_band_finds_brute_force_clusters(
    word_lists: list[list[str]], threshold: float
) -> None:
    """With one row per band every pair sharing a shingle is a candidate, so LSH misses
    nothing and the clusters must equal the all-pairs reference exactly."""
    docs = [Document(f"{i:02d}", " ".join(w)) for i, w in enumerate(word_lists)]
    params = MinHashParams(num_perm=64, n=2)
    fast = near_dedup(docs, threshold=threshold, params=params, bands=64, rows=1)
    slow = brute_force_clusters(docs, threshold=threshold, params=params)
    assert _clusters(fast) == _clusters(slow)


def test_seed_sentences_at_one_third() -> None:
    docs = [Document("b", "The cat wakes."), Document("a", "The cat sleeps.")]
    p = MinHashParams(n=2)
    assert near_dedup(docs, threshold=0.3, params=p, bands=128, rows=1).duplicate_of == {"b": "a"}
    assert near_dedup(docs, threshold=0.34, params=p, bands=128, rows=1).duplicate_of == {}


def test_order_independent_and_report(real_docs: list[Document]) -> None:
    docs = _corpus(real_docs)
    docs.append(Document("zz-exact", docs[0].text, docs[0].source))
    first = deduplicate(docs, near=0.7, params=MinHashParams(n=3))
    rnd = random.Random(1)
    shuffled = docs[:]
    rnd.shuffle(shuffled)
    second = deduplicate(shuffled, near=0.7, params=MinHashParams(n=3))
    assert [d.doc_id for d in first.kept] == [d.doc_id for d in second.kept]
    report = first.report
    assert report.totals["exact_removed"] >= 1
    assert report.totals["near_removed"] == len(first.near.removed)  # type: ignore[union-attr]
    removed_bytes = sum(
        d.n_bytes
        for d in first.exact.removed + first.near.removed  # type: ignore[union-attr]
    )
    assert report.totals["bytes_removed"] == removed_bytes
    biggest = report.clusters[0]
    assert biggest["size"] == max(c["size"] for c in report.clusters)
    assert all(0.0 <= p["jaccard"] <= 1.0 for p in biggest["examples"])
    assert "bytes removed" in report.to_markdown()


def test_banding_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="both bands"):
        near_dedup([], bands=4)
    with pytest.raises(ConfigError, match="<= num_perm"):
        near_dedup([], bands=64, rows=4)
    with pytest.raises(ConfigError, match="engine"):
        near_dedup([Document("a", "x")], engine="spark")


def test_chunked_signatures_and_progress_give_the_same_clusters(
    real_docs: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tokenpact.data.near as near

    docs = _corpus(real_docs)
    whole = near_dedup(docs, threshold=0.7, params=MinHashParams(n=3))
    monkeypatch.setattr(near, "SIGNATURE_CHUNK", 7)
    chunked = near_dedup(docs, threshold=0.7, params=MinHashParams(n=3), progress=True)
    assert chunked.clusters == whole.clusters
