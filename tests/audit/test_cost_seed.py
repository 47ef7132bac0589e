"""Seed worked examples of the cost model, with their exact numbers.

Seed 000 0x0C ("Counting sequence positions", "Counting vocabulary parameters"), 0x0C1
("Comparing parameter and computation costs") and seed 004 ("Token counts and sequence
length", "Padding and vocabulary size": the padded shapes and the BPE merge sweep).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from tokenpact.audit import bits_per_byte, bits_per_byte_to_loss, cost, sequence_cost
from tokenpact.errors import ConfigError

# --------------------------------------------------------------------- seed 000 0x0C


def test_4096_byte_input_with_1024_versus_2048_ids() -> None:
    a = sequence_cost([1024], n_bytes=4096)
    b = sequence_cost([2048], n_bytes=4096)
    assert (a.positions, b.positions) == (1024, 2048)
    assert b.positions / a.positions == 2
    assert (a.attention_pairs, b.attention_pairs) == (1_048_576, 4_194_304)
    assert b.attention_pairs / a.attention_pairs == 4
    assert (a.bytes_per_token, b.bytes_per_token) == (4, 2)


def test_attention_pairs_sum_squares_per_record_not_square_of_sum() -> None:
    c = sequence_cost([3, 4])
    assert c.attention_pairs == 9 + 16
    assert c.attention_pairs != (3 + 4) ** 2


@pytest.mark.parametrize(
    ("vocab", "params", "mib"), [(32_000, 131_072_000, 250), (128_000, 524_288_000, 1000)]
)
def test_input_table_at_d4096_two_bytes(vocab: int, params: int, mib: int) -> None:
    c = cost(vocab, 4096, tied=True, dtype="bf16")
    assert c.input_params == params
    assert c.input_bytes / 2**20 == mib


def test_tied_versus_untied_and_bias() -> None:
    v, d = 50_000, 1024
    tied = cost(v, d, tied=True, bias=True)
    untied = cost(v, d, tied=False, bias=True)
    assert tied.vocab_params == v * d + v
    assert untied.vocab_params == 2 * v * d + v
    # Tying changes storage, not the logit width.
    assert tied.logits_flops_per_position == untied.logits_flops_per_position == 2 * d * v


def test_logits_flops_and_elements() -> None:
    c = cost(32_000, 4096, positions=10)
    assert c.logits_flops == 2 * 10 * 4096 * 32_000
    assert c.logit_elements == 10 * 32_000


def test_optimizer_state_bytes() -> None:
    c = cost(1000, 10, tied=False, dtype="bf16", optimizer="adamw", optimizer_dtype="fp32")
    assert c.vocab_params == 20_000
    assert c.param_bytes == 40_000
    assert c.optimizer_bytes == 2 * 20_000 * 4
    assert c.training_bytes == 40_000 + 40_000 + 160_000


# --------------------------------------------------------------------- seed 000 0x0C1


@pytest.mark.parametrize(("vocab", "params"), [(268, 17_420), (272, 17_680), (279, 18_135)])
def test_seed_candidates_vocab_params_65v(vocab: int, params: int) -> None:
    c = cost(vocab, 64, tied=True, bias=True, dtype="bf16")
    assert c.vocab_params == 65 * vocab == params
    assert cost(vocab, 64, tied=True, bias=True, positions=7).logits_flops == 2 * 7 * 64 * vocab


# --------------------------------------------------------------------- seed 004

# The fixed mixed corpus of seed 004 "Token counts and sequence length".
SEED_004_CORPUS = [
    "Café robots read code: x += 1.",
    "Café robots write tests; naïve bugs become visible.",
    "A short context lets the model see nearby symbols.",
    "def add(x, y): return x + y  # deterministic",
] * 3


def _merge(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def _words(text: str) -> list[tuple[str, ...]]:
    # The seed's toy BPE: casefolded whitespace words, each ending in "</w>".
    return [(*word, "</w>") for word in text.casefold().split()]


def _toy_bpe_train(text: str, merges: int) -> list[tuple[str, str]]:
    words = _words(text)
    learned: list[tuple[str, str]] = []
    for _ in range(merges):
        counts = Counter(p for w in words for p in zip(w, w[1:], strict=False))
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))  # count first, then the pair itself
        learned.append(best)
        words = [_merge(w, best) for w in words]
    return learned


def _toy_bpe_length(text: str, learned: list[tuple[str, str]]) -> int:
    total = 0
    for word in _words(text):
        for pair in learned:
            word = _merge(word, pair)
        total += len(word)
    return total


def _seed_004_lengths() -> dict[str, list[int]]:
    joined = "\n".join(SEED_004_CORPUS)
    learned = _toy_bpe_train(joined, 24)
    return {
        "character": [len(t) for t in SEED_004_CORPUS],
        "byte": [len(t.encode("utf-8")) for t in SEED_004_CORPUS],
        "word": [len(t.split()) for t in SEED_004_CORPUS],
        "bpe": [_toy_bpe_length(t, learned) for t in SEED_004_CORPUS],
    }


def test_seed_004_totals_and_attention_work() -> None:
    expected = {
        "character": (525, 23811),
        "byte": (534, 24618),
        "word": (99, 825),
        "bpe": (357, 11667),
    }
    chars = sum(len(t) for t in SEED_004_CORPUS)
    for name, lengths in _seed_004_lengths().items():
        c = sequence_cost(lengths)
        assert (c.positions, c.attention_pairs) == expected[name], name
    bpe = sequence_cost(_seed_004_lengths()["bpe"])
    assert f"{chars / bpe.positions:.2f}" == "1.47"


def test_seed_004_padded_shapes_and_valid_fraction() -> None:
    expected = {
        "character": (51, "0.858"),
        "byte": (53, "0.840"),
        "word": (9, "0.917"),
        "bpe": (38, "0.783"),
    }
    for name, lengths in _seed_004_lengths().items():
        c = sequence_cost(lengths)
        assert c.records == 12
        assert (c.padded_width, f"{c.padding_valid_fraction:.3f}") == expected[name], name


def test_seed_004_merge_sweep() -> None:
    joined = "\n".join(SEED_004_CORPUS)
    chars = sum(len(t) for t in SEED_004_CORPUS)
    expected = {
        0: "44.5 0.98",
        4: "40.5 1.08",
        8: "37.5 1.17",
        16: "33.5 1.31",
        24: "29.8 1.47",
        40: "25.8 1.70",
    }
    for merges, row in expected.items():
        learned = _toy_bpe_train(joined, merges)
        assert len(learned) == merges
        c = sequence_cost([_toy_bpe_length(t, learned) for t in SEED_004_CORPUS])
        assert f"{c.positions / c.records:.1f} {chars / c.positions:.2f}" == row


# --------------------------------------------------------------------- bits per byte


def test_bits_per_byte_makes_different_tokenizers_comparable() -> None:
    # The same text (4000 bytes) and the same total information (2000 nats) under two
    # tokenizers: per-token losses differ, bits per byte agree.
    a = bits_per_byte(2.0, tokens=1000, n_bytes=4000)
    b = bits_per_byte(1.0, tokens=2000, n_bytes=4000)
    assert a == pytest.approx(b) == pytest.approx(2000 / math.log(2) / 4000)
    assert bits_per_byte(1.0, tokens=8, n_bytes=8, base=2) == 1.0
    assert bits_per_byte_to_loss(a, tokens=1000, n_bytes=4000) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: cost(0, 64),
        lambda: cost(100, 64, dtype="bf17"),
        lambda: cost(100, 64, optimizer="adamax"),
        lambda: bits_per_byte(float("nan"), tokens=1, n_bytes=1),
        lambda: bits_per_byte(1.0, tokens=1, n_bytes=0),
        lambda: sequence_cost([1, -2]),
    ],
)
def test_bad_arguments_raise_config_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        call()
