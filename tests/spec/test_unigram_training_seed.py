"""Seed 000, 0x08: the abab lattice, its posteriors, Viterbi and pruning, exactly."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

from tokenpact import _native
from tokenpact.reference import unigram as ref

PIECES = {"a": F(1, 4), "b": F(1, 4), "ab": F(7, 20), "aba": F(1, 10), "bab": F(1, 20)}
ORDER = ["a", "b", "ab", "aba", "bab"]


def test_marginal_and_paths() -> None:
    paths = ref.segmentations("abab", PIECES)
    assert len(paths) == 6
    probs = {p: ref.path_probability(p, PIECES) for p in paths}
    assert probs[("a", "b", "a", "b")] == F(1, 256)
    assert probs[("a", "b", "ab")] == F(7, 320)
    assert probs[("a", "bab")] == F(1, 80)
    assert probs[("ab", "a", "b")] == F(7, 320)
    assert probs[("ab", "ab")] == F(49, 400)
    assert probs[("aba", "b")] == F(1, 40)
    assert sum(probs.values()) == F(1329, 6400) == ref.marginal("abab", PIECES)
    assert float(ref.marginal("abab", PIECES)) == 0.20765625


def test_forward_backward_posteriors() -> None:
    assert ref.forward("abab", PIECES) == [F(1), F(1, 4), F(33, 80), F(13, 64), F(1329, 6400)]
    assert ref.backward("abab", PIECES) == [F(1329, 6400), F(49, 320), F(33, 80), F(1, 4), F(1)]
    gamma = ref.edge_posteriors("abab", PIECES)
    assert gamma[(0, "ab", 2)] == F(308, 443)
    assert gamma[(2, "ab", 4)] == F(308, 443)
    assert ref.expected_counts({"abab": 1}, PIECES)["ab"] == F(616, 443)


def test_viterbi_is_ab_ab_not_longest_match() -> None:
    assert ref.viterbi("abab", PIECES) == ("ab", "ab")
    assert ref.path_probability(("ab", "ab"), PIECES) == F(49, 400)
    assert ref.path_probability(("aba", "b"), PIECES) == F(1, 40)


def test_pruning_removes_bab_first() -> None:
    kept, steps = ref.prune_exact({"abab": 1}, PIECES, ["a", "b"], 4)
    first = steps[0]
    assert first.removed == "bab"
    assert first.losses["bab"] == pytest.approx(0.06208, abs=5e-6)
    assert first.losses["aba"] == pytest.approx(0.12828, abs=5e-6)
    assert first.losses["ab"] == pytest.approx(1.61245, abs=5e-6)
    assert set(first.losses) == {"ab", "aba", "bab"}  # required a, b never candidates
    rest = {z: p for z, p in PIECES.items() if z != "bab"}
    assert ref.marginal("abab", rest) == F(1249, 6400)
    assert ref.marginal("abab", {z: p for z, p in PIECES.items() if z != "aba"}) == F(1169, 6400)
    assert ref.marginal("abab", {z: p for z, p in PIECES.items() if z != "ab"}) == F(53, 1280)
    assert "bab" not in kept


def core() -> _native.UnigramCore:
    logp = [math.log(PIECES[z]) for z in ORDER]
    return _native.UnigramCore(ORDER, logp, 0, None)


def test_engine_reproduces_the_lattice() -> None:
    log_z, expected, viterbi, nbest = core().lattice_stats("abab", 6)
    assert math.exp(log_z) == pytest.approx(1329 / 6400, rel=1e-12)
    assert expected[ORDER.index("ab")] == pytest.approx(616 / 443, rel=1e-12)
    assert [ORDER[i] for i in viterbi] == ["ab", "ab"]
    assert len(nbest) == 6
    assert math.exp(nbest[0][1]) == pytest.approx(49 / 400)
    exact = sorted(
        (float(ref.path_probability(p, PIECES)) for p in ref.segmentations("abab", PIECES)),
        reverse=True,
    )
    assert [math.exp(s) for _, s in nbest] == pytest.approx(exact)


def test_engine_sampling_matches_tempered_distribution() -> None:
    c = core()
    exact = ref.tempered_distribution("abab", PIECES, alpha=1)
    draws = 4000
    seen: dict[tuple[str, ...], int] = {}
    for sample in range(draws):
        path = tuple(ORDER[i] for i in c.sample_raw("abab", 1.0, (7, 0, sample, 0)))
        assert "".join(path) == "abab"
        seen[path] = seen.get(path, 0) + 1
    assert set(seen) <= set(exact)
    for path, q in exact.items():
        sd = math.sqrt(float(q) * (1 - float(q)) / draws)
        assert abs(seen.get(path, 0) / draws - float(q)) < 5 * sd + 1e-3
