"""N-best lists, likelihoods and samples of *loaded* Unigram models against
``sentencepiece`` 0.2.3 (the capabilities of the engine of every Unigram model).

Models: Unigram ``.model`` files trained here by ``sentencepiece`` on harvested text (with
and without byte fallback, a user-defined symbol, the default ``nmt_nfkc`` charsmap),
loaded with ``tp.load``, and the same model exported to a Hugging Face ``tokenizer.json``
and loaded again (the pipeline engine's Unigram). Peer: ``nbest_encode`` (IDs and the
scores of its proto). Likelihoods: for words short enough that ``nbest_encode`` lists every
segmentation, log P(word) is the log-sum-exp of sentencepiece's path scores. Samples:
seeded determinism, and the frequencies of many draws against those exact path
probabilities.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp

from . import peer_data

spm = pytest.importorskip("sentencepiece")

N = 5
# sentencepiece sums float32 scores; tokenpact sums them in float64.
TOL = 2e-3


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return peer_data.harvest_texts()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, texts: list[str]) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spm_lattice")
    corpus = root / "train.txt"
    lines = [line for t in texts[::2] for line in t.splitlines() if line.strip()]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = {}
    for name, byte_fallback in (("unigram", False), ("unigram-bytes", True)):
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(root / name),
            model_type="unigram",
            vocab_size=800,
            byte_fallback=byte_fallback,
            character_coverage=0.995,  # leave rare characters unknown
            user_defined_symbols=["<tool>"],
            control_symbols=["<ctl>"],
            num_threads=2,
            input_sentence_size=5000,
            shuffle_input_sentence=False,
            minloglevel=2,
        )
        out[name] = root / f"{name}.model"
    return out


def _held_out(texts: list[str], count: int = 120) -> list[str]:
    lines = [line[:80] for t in texts[1::2] for line in t.splitlines()[:2] if line.strip()]
    return [*lines[:count], "über ☃ <tool> x", "a  b\tc", "<tool><tool>", "☃☃"]


def _peer_nbest(sp: Any, text: str, n: int) -> list[tuple[list[int], float]]:
    proto = sp.nbest_encode(text, nbest_size=n, return_type="proto")
    return [([p.id for p in best.pieces], best.score) for best in proto.nbests]


def _check_nbest(ours: list[tuple[list[int], float]], peer: list[tuple[list[int], float]]) -> int:
    """Same scores rank by rank; the same IDs wherever a score is not tied with another
    (sentencepiece orders tied paths its own way), the last rank compared with the next
    path (both lists are one longer than what is checked). Returns the untied ranks."""
    assert len(ours) == len(peer)
    untied = 0
    scores = [s for _, s in ours]
    for i, ((ids, score), (peer_ids, peer_score)) in enumerate(zip(ours, peer, strict=True)):
        if i == len(ours) - 1 and len(ours) > N:
            break
        assert score == pytest.approx(peer_score, abs=TOL), (i, ids, peer_ids)
        if all(abs(score - other) > TOL for j, other in enumerate(scores) if j != i):
            assert ids == peer_ids, (i, score)
            untied += 1
    return untied


@pytest.mark.parametrize("name", ["unigram", "unigram-bytes"])
def test_nbest_matches_sentencepiece(name: str, models: dict[str, Path], texts: list[str]) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    tok = tp.load(models[name])
    assert type(tok) is tp.Tokenizer  # a plain loaded model, no trainer subclass
    assert {"nbest", "sample", "log_likelihood"} <= tok.capabilities
    untied = total = 0
    for text in _held_out(texts):
        ours = tok.nbest(text, N + 1)
        assert [ids for ids, _ in ours][:1] == [tok.encode(text)]
        untied += _check_nbest(ours, _peer_nbest(sp, text, N + 1))
        total += min(len(ours), N)
        # The ID lists alone, as sentencepiece's nbest_encode_as_ids gives them: the
        # same paths wherever no tie crosses the cut.
        peer_ids = sp.nbest_encode_as_ids(text, N)
        mine = [ids for ids, _ in tok.nbest(text, N)]
        if len(ours) <= N or abs(ours[N - 1][1] - ours[N][1]) > TOL:
            assert sorted(map(tuple, peer_ids)) == sorted(map(tuple, mine)), text
    assert untied > total * 3 // 4  # most ranks are checked path by path


def test_hf_export_has_the_same_lattice(
    models: dict[str, Path], texts: list[str], tmp_path: Path
) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models["unigram"]))
    path = tp.export(tp.load(models["unigram"]), "hf", tmp_path / "tokenizer.json")
    hf = tp.load(path)
    assert hf.spec.sentencepiece_model is None  # the pipeline engine's Unigram
    assert {"nbest", "sample", "log_likelihood"} <= hf.capabilities
    for text in _held_out(texts, 40):
        if "<tool>" in text:
            continue  # an added token in tokenizer.json: matched before the model, unscored
        _check_nbest(hf.nbest(text, N + 1), _peer_nbest(sp, text, N + 1))


@pytest.mark.parametrize("name", ["unigram", "unigram-bytes"])
def test_log_likelihood_is_the_marginal_of_every_path(
    name: str, models: dict[str, Path], texts: list[str]
) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    tok = tp.load(models[name])
    words = sorted({w for t in texts[1:40:2] for w in t.split() if 2 <= len(w) <= 9})
    checked = 0
    for word in [*words[:150], "<tool>x", "☃ab"]:
        paths = _peer_nbest(sp, word, 512)
        if len(paths) == 512:
            continue  # maybe not every path: not a complete enumeration
        marginal = math.log(math.fsum(math.exp(s) for _, s in paths))
        assert tok.log_likelihood(word) == pytest.approx(marginal, abs=TOL), word
        checked += 1
    assert checked > 100


def test_samples_follow_the_path_probabilities(models: dict[str, Path]) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models["unigram"]))
    tok = tp.load(models["unigram"])
    word = "located"
    paths = _peer_nbest(sp, word, 512)
    assert 2 < len(paths) < 512
    alpha = 0.5
    weights = {tuple(ids): math.exp(alpha * s) for ids, s in paths}
    z = math.fsum(weights.values())
    draws = 4000
    counts = Counter(
        tuple(tok.sample(word, alpha=alpha, key=tp.SampleKey(seed=11, sample_id=i)))
        for i in range(draws)
    )
    assert set(counts) <= set(weights)
    # Total variation distance of the empirical shares (deterministic: seeded draws).
    tv = 0.5 * sum(abs(counts.get(p, 0) / draws - w / z) for p, w in weights.items())
    assert tv < 0.03, tv
    # lcg64_v1: the same distribution through the sequential generator.
    lcg = Counter(map(tuple, tok.samples(word, draws, alpha=alpha, generator="lcg64_v1", seed=7)))
    tv = 0.5 * sum(abs(lcg.get(p, 0) / draws - w / z) for p, w in weights.items())
    assert tv < 0.03, tv


def test_sampling_is_seeded_and_replays(models: dict[str, Path], texts: list[str]) -> None:
    tok = tp.load(models["unigram-bytes"])
    text = " ".join(_held_out(texts, 6))
    key = tp.SampleKey(seed=3, epoch=1, sample_id="doc/1")
    first = tok.sample(text, alpha=0.2, key=key)
    assert tok.sample(text, alpha=0.2, key=key) == first
    assert tok.decode(first) == tok.decode(tok.encode(text))
    others = [tok.sample(text, alpha=0.2, key=tp.SampleKey(seed=3, sample_id=i)) for i in range(5)]
    assert any(o != first for o in others)
    record = tok.sampling_record(0.2, key)
    assert tp.contract.replay_segmentation(tok, text, record, expected=first) == first
    lcg = tok.samples(text, 3, alpha=0.2, seed=5)
    assert lcg == tok.samples(text, 3, alpha=0.2, seed=5)
    assert lcg[0] == tok.sample(text, alpha=0.2, generator="lcg64_v1", seed=5)
    assert all(tok.decode(ids) == tok.decode(tok.encode(text)) for ids in lcg)
