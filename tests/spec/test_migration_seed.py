"""Seed 000 0x0C2 worked numbers: compact-268 -> balanced-272, d=64, tied head."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tiny_lm
import tokenpact as tp
from tokenpact import migrate

# Twelve merges that touch none of e, r, =, 1, 0: compact-268 is 256 bytes + 12 merges.
OLD_MERGES = [(c, c) for c in b"abcdfghijklm"]
# balanced-272 appends "er", "re", "==", "10" (IDs 268..271), in this order.
NEW_MERGES = [(101, 114), (114, 101), (61, 61), (49, 48)]


def _tokenizers() -> tuple[tp.Tokenizer, tp.Tokenizer]:
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=())
    new = migrate.build_extended(old, NEW_MERGES)
    return old, new


def test_seed_vocabulary_transition() -> None:
    old, new = _tokenizers()
    assert (old.vocab_size, new.vocab_size) == (268, 272)
    assert [new.token_bytes(i) for i in range(268, 272)] == [b"er", b"re", b"==", b"10"]
    assert migrate.prefix_problems(old, new) == []
    assert migrate.decompositions(old, new) == {
        268: [101, 114],
        269: [114, 101],
        270: [61, 61],
        271: [49, 48],
    }


def test_seed_resize_numbers(tmp_path: Path) -> None:
    old, new = _tokenizers()
    src, dst = tmp_path / "compact-268", tmp_path / "balanced-272"
    before = tiny_lm.build(src, rows=268, dim=64, tied=True, bias=True, optimizer=True)
    plan = migrate.resize_checkpoint(src, dst, old, new, init="fvt")
    assert plan.shapes[tiny_lm.EMB] == ([268, 64], [272, 64])
    assert plan.shapes[tiny_lm.BIAS] == ([268], [272])
    assert plan.tied
    assert plan.added_parameters == 256 + 4 == 260
    assert plan.adam_slot_values == 2 * 260 == 520
    assert plan.optimizer_slot_values == 520
    after = tiny_lm.load(dst)
    emb = before[tiny_lm.EMB]
    expected = np.stack(
        [
            (emb[101] + emb[114]) / 2,
            (emb[114] + emb[101]) / 2,
            (emb[61] + emb[61]) / 2,
            (emb[49] + emb[48]) / 2,
        ]
    )
    np.testing.assert_allclose(after[tiny_lm.EMB][268:272], expected, rtol=1e-6, atol=1e-7)
    assert after[tiny_lm.EMB][:268].tobytes() == emb.tobytes()
    assert tiny_lm.HEAD not in after  # still tied: the loader ties it
    assert np.all(after[tiny_lm.BIAS][268:] == 0)
    for slot in ("exp_avg", "exp_avg_sq"):
        for name in (tiny_lm.EMB, tiny_lm.BIAS):
            grown = after[f"{slot}.{name}"]
            assert grown.shape[0] == 272 and not grown[268:].any()
