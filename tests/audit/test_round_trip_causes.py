"""A Unigram model's whitespace policy: ``normalize`` returns what ``encode`` sees, the
trainer warns when its default (SentencePiece's) is lossy, and the audit names the
cause of every failed round trip with the option that fixes it."""

from __future__ import annotations

import re
import warnings

import pytest

import tokenpact as tp
from tokenpact.audit.metrics import ROUND_TRIP_FIXES, reconstruction, round_trip_cause
from tokenpact.audit.selection import Gates, ModelShape, evaluate_candidate

TEXTS = [
    "def f(x):\n    return  x  + 1",
    "  indented line with  double spaces ",
    "The cat sleeps on the mat.",
    "A quick brown fox jumps over the lazy dog.",
] * 30


def _train(**kwargs: object) -> tp.Tokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.LossyWhitespaceWarning)
        return tp.train_unigram(TEXTS, vocab_size=120, **kwargs)


def test_default_whitespace_policy_warns_with_the_fix() -> None:
    with pytest.warns(tp.LossyWhitespaceWarning, match="remove_extra_whitespaces=False") as rec:
        tp.train_unigram(TEXTS, vocab_size=120)
    assert "60 of 120 training texts" in str(rec[0].message)
    assert "--keep-extra-whitespaces" in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.LossyWhitespaceWarning)
        tp.train_unigram(TEXTS, vocab_size=120, remove_extra_whitespaces=True)  # explicit
        tp.train_unigram(TEXTS, vocab_size=120, remove_extra_whitespaces=False)
        tidy = [re.sub(" +", " ", t).strip(" ") for t in TEXTS]  # nothing to collapse
        tp.train_unigram(tidy, vocab_size=120)


def test_default_is_sentencepiece_and_explicit_false_is_lossless() -> None:
    collapsing = _train()
    assert collapsing.training is not None
    assert collapsing.training["config"]["remove_extra_whitespaces"] is True
    lossless = _train(remove_extra_whitespaces=False)
    for text in TEXTS[:4]:
        assert lossless.decode(lossless.encode(text)) == text


def test_normalize_returns_what_encode_sees() -> None:
    uni = _train()
    for text in ["  the cat", "a  quick   fox ", "x\ny  z", *TEXTS[:4]]:
        assert uni.normalize(text) == uni.decode(uni.encode(text)), text
    assert uni.normalize("  the  cat ") == "the cat"
    nfkc = _train(normalization="nfkc", remove_extra_whitespaces=False)
    assert nfkc.normalize("  ﬁne") == "  fine" == nfkc.decode(nfkc.encode("  ﬁne"))
    assert len(uni) == uni.vocab_size


def test_round_trip_causes_name_the_fix() -> None:
    uni = _train()
    text = "  the  cat"
    ids = uni.encode(text)
    assert round_trip_cause(uni, text, uni.decode(ids), ids) == "whitespace collapse"
    nfkc = _train(normalization="nfkc", remove_extra_whitespaces=False)
    ids = nfkc.encode("ﬁne")
    assert round_trip_cause(nfkc, "ﬁne", nfkc.decode(ids), ids) == "normalization"
    ids = uni.encode("snow ☃")
    assert round_trip_cause(uni, "snow ☃", uni.decode(ids), ids) == "unknown pieces"
    assert "--keep-extra-whitespaces" in ROUND_TRIP_FIXES["whitespace collapse"]
    assert "--byte-fallback" in ROUND_TRIP_FIXES["unknown pieces"]


def test_selection_gate_says_why_records_fail() -> None:
    uni = _train()
    validation = ["  two  spaces", "plain text here", "snow ☃ man"]
    report = evaluate_candidate(
        "uni",
        uni,
        validation=validation,
        validation_slices=["a", "a", "a"],
        fit=[],
        shape=ModelShape(d_model=64),
        gates=Gates(exact_reconstruction=True),
    )
    (failure,) = report.failures
    assert "2 validation records do not round-trip" in failure
    assert "1 whitespace collapse: retrain with remove_extra_whitespaces=False" in failure
    assert "1 unknown pieces: train with byte_fallback=True" in failure


def test_reconstruction_counts_causes() -> None:
    from tokenpact.audit.encoded import encode_corpus
    from tokenpact.audit.text_units import text_units

    uni = _train()
    texts = ["  two  spaces", "plain text here", "snow ☃ man"]
    enc = encode_corpus(uni, texts, name="v")
    result = reconstruction(uni, enc, texts, text_units(texts))
    assert result["causes"] == {"whitespace collapse": 1, "unknown pieces": 1}
    assert result["normalized"] == 2  # the whitespace collapse is what normalize() gives
