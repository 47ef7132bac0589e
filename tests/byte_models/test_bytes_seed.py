"""Seed 000, 0x0E worked example: one sentence under five declared model contracts."""

from __future__ import annotations

import numpy as np
import pytest

import tokenpact as tp
from tokenpact.bytes import (
    BLTConfig,
    ByT5Config,
    CanineConfig,
    CharformerConfig,
    EntropyRule,
    ExplicitStarts,
    MegabyteConfig,
    TextUnits,
    account_all,
    check_prefix_stability,
    starts_from_entropies,
    tokenizer_segmenter,
)

SENTENCE = "A naïve cat.\n"
ENTROPY_STARTS = (0, 2, 4, 8, 9, 13)


def test_units_of_the_sentence() -> None:
    units = TextUnits.of(SENTENCE)
    assert units.data.hex(" ") == "41 20 6e 61 c3 af 76 65 20 63 61 74 2e 0a"
    assert (units.n_bytes, units.n_code_points, units.n_graphemes) == (14, 13, 13)
    assert units.byte_to_code_point(5) == 4  # the second byte of ï belongs to code point 4
    assert units.code_point_to_byte(5) == 6


def test_five_contracts_n_global_squared() -> None:
    models = [
        ByT5Config(),
        CanineConfig(stride=4),
        CharformerConfig(max_block=4, downsample=2),
        MegabyteConfig(patch_width=4),
        BLTConfig(patcher=ExplicitStarts(ENTROPY_STARTS, 14)),
    ]
    accounts = account_all(SENTENCE, models)
    assert [a.n_global_squared for a in accounts] == [196, 16, 49, 16, 36]
    assert [a.n_raw for a in accounts] == [14, 13, 14, 14, 14]
    assert [a.unit for a in accounts] == ["bytes", "code_points", "bytes", "bytes", "bytes"]
    assert accounts[-1].boundaries == (*ENTROPY_STARTS, 14)


def test_charformer_candidate_blocks() -> None:
    account = CharformerConfig(max_block=4, downsample=2).account(SENTENCE)
    assert account.details["candidate_blocks"] == 14 + 7 + 5 + 4 == 30
    assert account.n_global == 7


def test_megabyte_positions_and_causal_shift() -> None:
    config = MegabyteConfig(patch_width=4)
    account = config.account(SENTENCE)
    assert (account.n_global, account.n_local, account.n_output) == (4, 16, 14)
    assert config.global_input_spans(14) == [None, (0, 4), (4, 8), (8, 12)]


def test_synthetic_entropy_trace_gives_the_seed_starts() -> None:
    # A trace whose high-entropy bytes are exactly the seed's starts.
    h = np.full(14, 1.0, dtype=np.float32)
    h[list(ENTROPY_STARTS)] = 3.5
    assert starts_from_entropies(h, EntropyRule(kind="global", threshold=2.0)).tolist() == list(
        ENTROPY_STARTS
    )
    # The same trace is prefix stable: a start compares one causal entropy with a threshold.
    for cut in range(1, 14):
        prefix = starts_from_entropies(h[:cut], EntropyRule(threshold=2.0)).tolist()
        assert prefix == [s for s in ENTROPY_STARTS if s < cut]


def test_bpe_counterexample_is_not_prefix_stable() -> None:
    # rank 0: b + c -> bc; rank 1: a + b -> ab
    tok = tp.Tokenizer.from_merges([(ord("b"), ord("c")), (ord("a"), ord("b"))])
    segment = tokenizer_segmenter(tok)
    assert segment(b"ab") == [b"ab"]
    assert segment(b"abc") == [b"a", b"bc"]
    report = check_prefix_stability(segment, b"abc")
    assert not report.stable
    violation = report.violations[0]
    assert (violation.cut, violation.prefix_starts, violation.full_starts_before_cut) == (
        2,
        (0,),
        (0, 1),
    )


@pytest.mark.parametrize("text", ["", "x", SENTENCE, "日本語のテキスト", "👩‍👩‍👧 family"])
def test_units_are_consistent(text: str) -> None:
    units = TextUnits.of(text)
    offsets = units.code_point_byte_offsets
    assert offsets[-1] == units.n_bytes and len(offsets) == units.n_code_points + 1
    assert units.n_graphemes <= units.n_code_points <= units.n_bytes


def test_megabyte_cost_estimates() -> None:
    from fractions import Fraction

    config = MegabyteConfig(patch_width=4)
    # O(T^2/P^2 + T P) for the seed's 14 bytes, patch width 4: 196/16 + 56.
    assert config.attention_estimate(14) == Fraction(14**2, 4**2) + 14 * 4 == Fraction(273, 4)
    # Counted over whole patches (K = 4): 4^2 global pairs + 4 patches of 4^2 local pairs.
    assert config.attention_pairs(14) == 16 + 64
    # A long sequence: the patched shape beats one byte-level stack's T^2 by ~P^2.
    t = 1 << 20
    assert MegabyteConfig(patch_width=8).attention_estimate(t) == t * t // 64 + t * 8
    assert t * t / MegabyteConfig(patch_width=8).attention_estimate(t) > 63
    # F ~ 2T(m_G/P + m_L): the global stack runs once per patch, the local one per byte.
    flops = config.forward_flops(14, global_params=1_000_000, local_params=50_000)
    assert flops == 2 * 14 * (Fraction(1_000_000, 4) + 50_000) == 8_400_000
    # P = 1 with no local model is a plain transformer's 2 T m.
    plain = MegabyteConfig(patch_width=1).forward_flops(14, global_params=10, local_params=0)
    assert plain == 2 * 14 * 10
    with pytest.raises(tp.ConfigError):
        config.forward_flops(-1, global_params=1, local_params=1)
