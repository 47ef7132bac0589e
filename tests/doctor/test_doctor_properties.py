"""Hypothesis: batches built by tokenpact's own collators never trigger a batch detector."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.batch import SequenceRecord, collate_packed, collate_padded
from tokenpact.doctor import DoctorReport, Subject, run_detectors
from tokenpact.doctor.batch_view import BatchView

EOS, PAD = 2, 0
HASH = {"tokenizer_hash": "sha256:" + "00" * 32}

records = st.lists(
    st.lists(st.integers(3, 12), min_size=1, max_size=10), min_size=1, max_size=6
).map(lambda rows: [SequenceRecord(f"s{i}", [*r, EOS]) for i, r in enumerate(rows)])
conventions = st.sampled_from(["pre_shifted", "unshifted"])


def _findings(view: BatchView) -> list[str]:
    report = DoctorReport()
    run_detectors(Subject(batches=[("memory", view)], eos_id=EOS), report)
    return [f"{f.code}: {f.evidence}" for f in report.findings]


@settings(deadline=None)
@given(records, conventions, st.sampled_from(["right", "left"]))
def test_collated_padded_batches_are_clean(recs, convention, side) -> None:  # type: ignore[no-untyped-def]
    batch = collate_padded(recs, pad_id=PAD, side=side, label_convention=convention)
    view = BatchView(
        batch.input_ids,
        np.ones(batch.input_ids.shape, dtype=bool),
        labels=batch.labels,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        metadata=dict(HASH),
    )
    assert _findings(view) == []


@settings(deadline=None)
@given(records, conventions)
def test_collated_packed_batches_are_clean(recs, convention) -> None:  # type: ignore[no-untyped-def]
    batch = collate_packed(recs, label_convention=convention)
    view = BatchView(
        batch.input_ids[None, :],
        np.ones((1, batch.input_ids.size), dtype=bool),
        labels=batch.labels[None, :],
        position_ids=batch.position_ids[None, :],
        cu_seqlens=[batch.cu_seqlens.astype(np.int64)],
        lengths=batch.lengths,
        metadata=dict(HASH),
        extras={"seq_idx": batch.seq_idx},
    )
    assert _findings(view) == []


@settings(deadline=None)
@given(records.filter(lambda r: len(r) >= 2))
def test_labels_shifted_across_the_buffer_are_found(recs) -> None:  # type: ignore[no-untyped-def]
    batch = collate_packed(recs)
    crossing = np.append(batch.input_ids[1:], -100)  # shift over the flat buffer
    view = BatchView(
        batch.input_ids[None, :],
        np.ones((1, batch.input_ids.size), dtype=bool),
        labels=crossing[None, :],
        cu_seqlens=[batch.cu_seqlens.astype(np.int64)],
        metadata=dict(HASH),
    )
    assert any(f.startswith("label-crosses-boundary") for f in _findings(view))
