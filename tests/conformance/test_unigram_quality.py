"""Unigram training quality against ``sentencepiece`` on real corpora, per language.

Issue 12: the same training text, ``vocab_size=8000``, ``byte_fallback=True`` on both
sides and SentencePiece's defaults otherwise (``normalization_rule_name`` ``identity``
or ``nmt_nfkc``, which strip and collapse runs of spaces); ``train_unigram`` with the
same normalization (its defaults match SentencePiece's). Held out: 15% of a shuffled 4
MB slice of ``bench-mixed`` (per slice) and of a multilingual mix from
``parallel-gettext`` (per language). For every slice and language, our held-out tokens
per byte are at most 2% above SentencePiece's, and our held-out log-likelihood per byte
is within 1% (computed by the same exact forward algorithm over the same normalized
words for both models). The earlier whitespace bug (runs of spaces kept as one-``▁``
words, so a lone ``▁`` became the cheapest piece) measured +13% on bench-mixed and +19%
to +32% per language here; without SentencePiece's script rule (pieces gluing
punctuation to letters) Arabic measured +3.2% (identity) and +3.8% (nmt_nfkc).
"""

from __future__ import annotations

import io
import math
from typing import Any

import pytest

import tokenpact as tp
from tokenpact import _native

from .corpus_slices import bench_split, multilingual_split, nbytes

spm = pytest.importorskip("sentencepiece")

VOCAB = 8000
METASPACE = "\u2581"
# Held-out tokens/byte bound (ours / sentencepiece), every slice and language.
TOKEN_BOUND = 1.02
CASES = [
    ("bench-mixed", "identity"),
    ("multilingual", "identity"),
    ("multilingual", "nmt_nfkc"),
]


def _train_pair(corpus: str, rule: str) -> tuple[Any, Any, dict[str, tuple[str, ...]]]:
    train, held = bench_split() if corpus == "bench-mixed" else multilingual_split()
    ours = tp.train_unigram(train, vocab_size=VOCAB, byte_fallback=True, normalization=rule)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train),
        model_writer=model,
        model_type="unigram",
        vocab_size=VOCAB,
        byte_fallback=True,
        normalization_rule_name=rule,
        max_sentence_length=1 << 16,
        num_threads=2,
        minloglevel=2,
    )
    return ours, spm.SentencePieceProcessor(model_proto=model.getvalue()), held


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def trained(request: pytest.FixtureRequest) -> tuple[Any, Any, dict[str, tuple[str, ...]]]:
    return _train_pair(*request.param)


def _peer_lattice(sp: Any) -> Any:
    size = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(size)]
    scores = [
        sp.get_score(i)
        if not (sp.is_unknown(i) or sp.is_control(i) or sp.is_byte(i))
        else -math.inf
        for i in range(size)
    ]
    return _native.UnigramCore(pieces, scores, sp.unk_id(), None)


def test_held_out_tokens_per_byte(trained: tuple[Any, Any, dict[str, tuple[str, ...]]]) -> None:
    ours, sp, held = trained
    report = {}
    for name, lines in held.items():
        size = nbytes(lines)
        ours_tpb = sum(len(ids) for ids in ours.encode_batch(list(lines))) / size
        peer_tpb = sum(len(ids) for ids in sp.encode(list(lines))) / size
        report[name] = round(ours_tpb / peer_tpb, 3)
    print("tokens/byte, ours / sentencepiece:", report)
    for name, ratio in report.items():
        assert ratio <= TOKEN_BOUND, (name, report)


def test_held_out_log_likelihood_per_byte(
    trained: tuple[Any, Any, dict[str, tuple[str, ...]]],
) -> None:
    ours, sp, held = trained
    peer = _peer_lattice(sp)
    report = {}
    for name, lines in held.items():
        size = nbytes(lines)
        ours_ll = sum(ours.log_likelihood(line) for line in lines) / size
        # The peer's words: its own normalizer's output, spelled with spaces again for
        # the lattice's metaspace split (the same text ours sees).
        peer_ll = (
            sum(
                peer.log_likelihood(
                    sp.normalize(line).removeprefix(METASPACE).replace(METASPACE, " ")
                )
                for line in lines
            )
            / size
        )
        report[name] = round(ours_ll / peer_ll, 4)
    print("log-likelihood/byte, ours / sentencepiece:", report)
    for name, ratio in report.items():
        assert ratio <= 1.01, (name, report)


def test_trained_model_normalizes_like_sentencepiece(
    trained: tuple[Any, Any, dict[str, tuple[str, ...]]],
) -> None:
    """The written .model carries the rule and whitespace handling training used."""
    ours, sp, held = trained
    lines = [line for group in held.values() for line in group[:50]]
    lines += ["  two  spaces  ", "\u00a0no-break\u3000ideographic", "ｆｕｌｌｗｉｄｔｈ ①"]
    for line in lines:
        assert ours._core.normalize(line) == sp.normalize(line), line
