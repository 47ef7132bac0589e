"""MinHash signatures identical to datasketch 2.x; the engine equals the reference."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash
from datasketch.lsh import _optimal_param
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.data import (
    Document,
    MinHashParams,
    jaccard,
    minhash_signatures,
    optimal_bands,
    reference_signature,
    shingles,
)
from tokenpact.errors import ConfigError, InvalidInputError


def _datasketch(text: str, p: MinHashParams) -> np.ndarray:
    m = MinHash(num_perm=p.num_perm, seed=p.seed, scheme=p.scheme)
    m.update_batch([s.encode("utf-8") for s in shingles(text, kind=p.shingle, n=p.n)])
    return np.asarray(m.hashvalues, dtype=np.uint64)


def test_seed_example_two_word_shingles() -> None:
    a = shingles("The cat sleeps.", kind="word", n=2)
    b = shingles("The cat wakes.", kind="word", n=2)
    assert a == ["The cat", "cat sleeps."]
    assert b == ["The cat", "cat wakes."]
    assert jaccard(set(a), set(b)) == pytest.approx(1 / 3)


@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
@pytest.mark.parametrize(("kind", "n"), [("word", 5), ("word", 1), ("char", 5)])
def test_signatures_equal_datasketch_on_real_text(
    real_docs: list[Document], scheme: str, kind: str, n: int
) -> None:
    p = MinHashParams(num_perm=128, seed=1, shingle=kind, n=n, scheme=scheme)
    docs = real_docs[:120] + [Document("empty", ""), Document("space", " \t\n")]
    sigs = minhash_signatures([d.text for d in docs], p)
    assert sigs.shape == (len(docs), 128) and sigs.dtype == np.uint32
    for doc, row in zip(docs, sigs, strict=True):
        np.testing.assert_array_equal(row.astype(np.uint64), _datasketch(doc.text, p), doc.doc_id)


def test_permutations_equal_datasketch_for_other_seeds() -> None:
    for scheme in ("affine32", "legacy"):
        for seed in (0, 7, 2**31):
            p = MinHashParams(num_perm=64, seed=seed, scheme=scheme)
            a, b = MinHash(num_perm=64, seed=seed, scheme=scheme).permutations
            np.testing.assert_array_equal(p.permutations[0], np.asarray(a, dtype=np.uint64))
            np.testing.assert_array_equal(p.permutations[1], np.asarray(b, dtype=np.uint64))


_TEXT = st.text(
    alphabet=st.sampled_from(list("ab cé\t\n\x1c\x85\u3000\u00a0猫ß")) | st.characters(),
    max_size=60,
)


@given(
    _TEXT,
    st.sampled_from(["word", "char"]),
    st.integers(1, 4),
    st.sampled_from(["affine32", "legacy"]),
)
def test_engine_equals_reference(text: str, kind: str, n: int, scheme: str) -> None:
    p = MinHashParams(num_perm=8, seed=3, shingle=kind, n=n, scheme=scheme)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(InvalidInputError):
            minhash_signatures([text], p)
        return
    assert minhash_signatures([text], p)[0].tolist() == reference_signature(text, p)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("num_perm", [64, 128])
def test_bands_and_rows_as_datasketch_chooses(threshold: float, num_perm: int) -> None:
    assert optimal_bands(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)


def test_bad_options_are_typed_errors() -> None:
    with pytest.raises(ConfigError, match="num_perm"):
        MinHashParams(num_perm=0)
    with pytest.raises(ConfigError, match="scheme"):
        MinHashParams(scheme="affine64")
    with pytest.raises(InvalidInputError, match="not str"):
        minhash_signatures([b"bytes"], MinHashParams())  # type: ignore[list-item]


# Words and separators that stress the engine's fast paths: separators of every kind
# (the 64-byte mask scan), runs that are and are not single-space separated (shingles in
# place vs joined), words long enough that a shingle needs two SHA-1 blocks (> 55 bytes),
# and permutation counts around the vector tile sizes.
_PIECES = st.sampled_from(
    [
        "the",
        "cat",
        "Straße",
        "猫が寝る",
        "x" * 60,
        "ü" * 23,
        "—",
        "\u3042\u3001",
        "a\u2029b",
    ]
) | st.text(max_size=8)
_SEPARATORS = st.sampled_from(
    [" ", " ", " ", "  ", "\n", "\t\n", "\x1f", "\u00a0", "\u3000", "\x85"]
)


@given(
    st.lists(st.tuples(_PIECES, _SEPARATORS), max_size=80),
    st.sampled_from([1, 33, 128, 130]),
    st.sampled_from(["affine32", "legacy"]),
    st.integers(1, 6),
)
def test_engine_equals_datasketch_on_generated_documents(
    parts: list[tuple[str, str]], num_perm: int, scheme: str, n: int
) -> None:
    text = "".join(word + sep for word, sep in parts)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are refused (tested above)
    p = MinHashParams(num_perm=num_perm, seed=11, n=n, scheme=scheme)
    got = minhash_signatures([text, text[: len(text) // 2]], p)
    for row, t in zip(got, [text, text[: len(text) // 2]], strict=True):
        np.testing.assert_array_equal(row.astype(np.uint64), _datasketch(t, p))
