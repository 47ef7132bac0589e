"""Padded and packed layouts of the same records train the same objective.

For random records: the multiset of (sample, position, label, label owner) is identical in
both layouts, no label ever crosses a record boundary, and a tiny numpy causal-attention
forward gives the same per-token outputs on the padded batch (with its mask) and on the
packed batch (with its block-diagonal mask).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tokenpact.batch import (
    PackedBatch,
    PaddedBatch,
    RecordTable,
    SequenceRecord,
    best_fit_decreasing,
    collate_bins,
    collate_packed,
    collate_padded,
    first_fit_decreasing,
)

VOCAB = 40
PAD = VOCAB  # outside the content IDs 0..39
OWNERS = ("system", "prompt", "response")


@st.composite
def record_lists(draw: st.DrawFn) -> list[SequenceRecord]:
    count = draw(st.integers(1, 6))
    records = []
    for i in range(count):
        n = draw(st.integers(1, 12))
        records.append(
            SequenceRecord(
                f"s{i}",
                draw(st.lists(st.integers(0, VOCAB - 1), min_size=n, max_size=n)),
                special_tokens_mask=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                token_owners=draw(st.lists(st.sampled_from(OWNERS), min_size=n, max_size=n)),
                target_supervision=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
            )
        )
    return records


conventions = st.sampled_from(["pre_shifted", "unshifted"])


def _padded_triples(batch: PaddedBatch) -> Counter[tuple[str, int, int, str]]:
    valid = batch.attention_mask.astype(bool)
    return Counter(
        zip(
            batch.sample_ownership()[valid].tolist(),
            batch.position_ids[valid].tolist(),
            batch.labels[valid].tolist(),
            batch.label_ownership()[valid].tolist(),
            strict=True,
        )
    )


def _packed_triples(batch: PackedBatch) -> Counter[tuple[str, int, int, str]]:
    return Counter(
        zip(
            batch.sample_ownership().tolist(),
            batch.position_ids.tolist(),
            batch.labels.tolist(),
            batch.label_ownership().tolist(),
            strict=True,
        )
    )


@given(
    record_lists(),
    conventions,
    st.sampled_from(["right", "left"]),
    st.integers(1, 5),
)
def test_padded_and_packed_hold_the_same_labels(
    records: list[SequenceRecord], convention: str, side: str, multiple: int
) -> None:
    padded = collate_padded(
        records, pad_id=PAD, multiple=multiple, side=side, label_convention=convention
    )
    packed = collate_packed(records, label_convention=convention)
    assert _padded_triples(padded) == _packed_triples(packed)
    assert padded.report.supervised_targets == packed.report.supervised_targets
    # PAD never carries a label.
    assert not padded.loss_mask[padded.attention_mask == 0].any()
    assert (padded.labels[padded.attention_mask == 0] == -100).all()


@given(record_lists(), conventions)
def test_no_label_crosses_a_boundary(records: list[SequenceRecord], convention: str) -> None:
    packed = collate_packed(records, label_convention=convention)
    ids, seq = packed.input_ids, packed.seq_idx
    where = np.flatnonzero(packed.loss_mask)
    if convention == "pre_shifted":
        # The label at t is token t + 1 of the same record and a supervised target.
        assert (where + 1 < ids.shape[0]).all()
        assert (packed.labels[where] == ids[where + 1]).all()
        assert (seq[where + 1] == seq[where]).all()
        targets = where + 1
    else:
        # The label at t is token t itself, never a record's first token (the model's own
        # shift would then pair it with the previous record's last logits).
        assert (packed.labels[where] == ids[where]).all()
        assert (packed.position_ids[where] > 0).all()
        targets = where
    supervision = np.concatenate([r.target_supervision for r in records])
    assert supervision[targets].all()
    # Every supervised non-first token is a label exactly once.
    first = np.zeros(ids.shape[0], dtype=bool)
    first[packed.cu_seqlens[:-1]] = True
    assert int(packed.loss_mask.sum()) == int((supervision & ~first).sum())


def _attention_forward(
    ids: np.ndarray, positions: np.ndarray, mask: np.ndarray, weights: dict[str, np.ndarray]
) -> np.ndarray:
    """One causal self-attention layer over ``[..., T]`` tokens with a boolean mask."""
    x = weights["embed"][ids] + weights["pos"][positions]
    q, k, v = x @ weights["q"], x @ weights["k"], x @ weights["v"]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -1e30)  # masked keys get exactly zero weight
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs @ v


@given(record_lists(), st.sampled_from(["right", "left"]), st.integers(1, 3))
def test_attention_outputs_match_between_layouts(
    records: list[SequenceRecord], side: str, multiple: int
) -> None:
    rng = np.random.default_rng(0)
    d = 8
    weights = {
        "embed": rng.normal(size=(VOCAB + 1, d)),
        "pos": rng.normal(size=(64, d)),
        "q": rng.normal(size=(d, d)),
        "k": rng.normal(size=(d, d)),
        "v": rng.normal(size=(d, d)),
    }
    padded = collate_padded(records, pad_id=PAD, multiple=multiple, side=side)
    packed = collate_packed(records)
    out_padded = _attention_forward(
        padded.input_ids, padded.position_ids, padded.causal_mask(), weights
    )
    out_packed = _attention_forward(
        packed.input_ids, packed.position_ids, packed.dense_causal_mask(), weights
    )
    valid = padded.attention_mask.astype(bool)
    np.testing.assert_allclose(out_padded[valid], out_packed, rtol=1e-9, atol=1e-9)


@given(st.lists(st.integers(1, 30), min_size=1, max_size=40), st.integers(30, 64))
def test_packers_place_every_record_once_and_keep_ids(lengths: list[int], capacity: int) -> None:
    table = RecordTable(
        np.arange(sum(lengths)) % VOCAB,
        offsets=np.concatenate(([0], np.cumsum(lengths))),
        sample_ids=[f"doc-{i}" for i in range(len(lengths))],
    )
    for packer in (first_fit_decreasing, best_fit_decreasing):
        plan = packer(lengths, capacity=capacity)
        plan.verify()
        batch = collate_bins(table, plan)
        assert sorted(batch.sample_ids) == sorted(table.sample_ids.tolist())
        # The packed rows are the source records, whatever order the packer chose.
        by_id = {sid: table.record(i).input_ids.tolist() for i, sid in enumerate(table.sample_ids)}
        for sid, row in zip(batch.sample_ids, batch.records(), strict=True):
            assert row.tolist() == by_id[sid]
        assert int(np.diff(batch.bin_offsets).max()) <= capacity
