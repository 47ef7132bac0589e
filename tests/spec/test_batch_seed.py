"""Worked batch examples of the seed documents, with their exact numbers.

Seed 000, 0x0B "Building padded and packed batches" (records a, b, c; PAD 265; width 8)
and seed 004 "Causal windows", "Padding and vocabulary size", "Special tokens" and
"Frozen byte-level BPE artifact".
"""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import (
    IGNORE_INDEX,
    SequenceRecord,
    batch_packed_examples,
    causal_attention_mask,
    collate_packed,
    collate_padded,
    make_windows,
    pack_causal_examples,
    pack_documents,
    pad_batch,
)

PAD = 265
I = IGNORE_INDEX  # noqa: E741 - the seed's symbol for the ignore index


@pytest.fixture
def records() -> list[SequenceRecord]:
    # Control IDs 256/258/259/260 frame each record; content IDs stay below 256. The
    # prompt grammar owns the header, the response owns the targets.
    return [
        SequenceRecord(
            "sample-a",
            [256, 258, 117, 259, 65, 260],
            special_tokens_mask=[1, 1, 0, 1, 0, 1],
            token_owners=["prompt", "prompt", "prompt", "prompt", "response", "response"],
            target_supervision=[0, 0, 0, 0, 1, 1],
        ),
        SequenceRecord(
            "sample-b",
            [256, 258, 66, 260],
            special_tokens_mask=[1, 1, 0, 1],
            token_owners=["prompt", "prompt", "response", "response"],
            target_supervision=[0, 0, 1, 1],
        ),
        SequenceRecord(
            "sample-c",
            [256, 67, 260],
            special_tokens_mask=[1, 0, 1],
            token_owners=["prompt", "response", "response"],
            target_supervision=[0, 1, 1],
        ),
    ]


def test_padded_batch_arrays(records: list[SequenceRecord]) -> None:
    batch = collate_padded(records, pad_id=PAD, multiple=4)
    assert batch.shape == (3, 8)
    assert batch.input_ids.tolist() == [
        [256, 258, 117, 259, 65, 260, 265, 265],
        [256, 258, 66, 260, 265, 265, 265, 265],
        [256, 67, 260, 265, 265, 265, 265, 265],
    ]
    assert batch.attention_mask.tolist() == [
        [1, 1, 1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0, 0],
    ]
    assert batch.position_ids.tolist() == [
        [0, 1, 2, 3, 4, 5, 0, 0],
        [0, 1, 2, 3, 0, 0, 0, 0],
        [0, 1, 2, 0, 0, 0, 0, 0],
    ]
    assert batch.labels.tolist() == [
        [I, I, I, 65, 260, I, I, I],
        [I, 66, 260, I, I, I, I, I],
        [67, 260, I, I, I, I, I, I],
    ]
    assert batch.loss_mask.astype(int).tolist() == [
        [0, 0, 0, 1, 1, 0, 0, 0],
        [0, 1, 1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0, 0, 0],
    ]
    assert batch.lengths.tolist() == [6, 4, 3]


def test_padded_batch_ownership(records: list[SequenceRecord]) -> None:
    batch = collate_padded(records, pad_id=PAD, multiple=4)
    samples = batch.sample_ownership()
    assert samples[1].tolist() == ["sample-b"] * 4 + ["__pad__"] * 4
    labels = batch.label_ownership()
    assert labels[0].tolist() == ["__ignore__"] * 3 + ["response"] * 2 + ["__ignore__"] * 3
    # A real prompt token keeps its sample owner while its label is ignored.
    assert samples[0, 0] == "sample-a" and labels[0, 0] == "__ignore__"
    assert (
        batch.token_ownership()[2].tolist() == ["prompt", "response", "response"] + ["__pad__"] * 5
    )
    # PAD is a control slot: marked special, never a target.
    assert batch.special_tokens_mask[2, 3:].all()
    assert not batch.loss_mask[batch.attention_mask == 0].any()


def test_first_response_target_sits_on_the_prediction_position(
    records: list[SequenceRecord],
) -> None:
    batch = collate_padded(records, pad_id=PAD, multiple=4)
    # Source position 3 (token 259) is prompt-owned, but it predicts the response token 65.
    assert batch.token_ownership()[0, 3] == "prompt"
    assert batch.labels[0, 3] == 65
    assert batch.label_ownership()[0, 3] == "response"
    # The source-axis bug would have ignored it: the supervision mask copied unshifted.
    source_axis = np.where(np.asarray(records[0].target_supervision), batch.labels[0, :6], I)
    assert source_axis[3] == I


def test_padding_and_attention_counts(records: list[SequenceRecord]) -> None:
    report = collate_padded(records, pad_id=PAD, multiple=4).report
    assert report.real_tokens == 13
    assert report.longest == 6 and report.width == 8
    assert report.records * report.longest == 18  # dynamic-longest slots
    assert report.variation_pad == 5
    assert report.alignment_pad == 6
    assert report.slots == 24
    assert report.pad_tokens == 11
    assert f"{report.utilization:.2%}" == "54.17%"
    assert report.attention_dense == 192
    assert report.attention_useful == 61
    assert report.supervised_targets == 6


def test_packed_batch_arrays(records: list[SequenceRecord]) -> None:
    packed = collate_packed(records)
    assert packed.input_ids.tolist() == [
        256,
        258,
        117,
        259,
        65,
        260,
        256,
        258,
        66,
        260,
        256,
        67,
        260,
    ]
    assert packed.cu_seqlens.tolist() == [0, 6, 10, 13]
    assert packed.cu_seqlens.dtype == np.int32
    assert packed.max_seqlen == 6
    assert packed.total_tokens == 13
    assert packed.position_ids.tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 1, 2]
    assert (
        packed.sample_ownership().tolist() == ["sample-a"] * 6 + ["sample-b"] * 4 + ["sample-c"] * 3
    )
    assert packed.labels.tolist() == [I, I, I, 65, 260, I] + [I, 66, 260, I] + [67, 260, I]
    assert packed.loss_mask.astype(int).tolist() == [0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0]
    assert packed.report.supervised_targets == 6


def test_packed_offsets_invariants(records: list[SequenceRecord]) -> None:
    packed = collate_packed(records)
    cu = packed.cu_seqlens
    assert cu[0] == 0
    assert np.all(np.diff(cu) > 0)
    assert cu[-1] == packed.total_tokens
    assert np.diff(cu).tolist() == [len(r) for r in records]
    for end in cu[1:]:
        assert packed.labels[end - 1] == I and not packed.loss_mask[end - 1]
    # Every source record is recovered from the offsets.
    assert [r.tolist() for r in packed.records()] == [r.input_ids.tolist() for r in records]


def test_global_shift_would_cross_boundaries(records: list[SequenceRecord]) -> None:
    packed = collate_packed(records)
    flat = packed.input_ids
    # Flatten-then-shift makes EOT(a) predict BOS(b) and EOT(b) predict BOS(c).
    bad = np.append(flat[1:], I)
    assert (bad[5], bad[9]) == (256, 256)
    assert (packed.labels[5], packed.labels[9]) == (I, I)


def test_padded_and_packed_expose_the_same_targets(records: list[SequenceRecord]) -> None:
    padded = collate_padded(records, pad_id=PAD, multiple=4)
    packed = collate_packed(records)
    assert padded.labels[padded.loss_mask].tolist() == packed.labels[packed.loss_mask].tolist()
    assert padded.labels[padded.loss_mask].tolist() == [65, 260, 66, 260, 67, 260]


# --- seed 004 -------------------------------------------------------------------------


def test_first_window_targets_are_inputs_shifted_by_one() -> None:
    inputs, targets = make_windows(range(7), context_length=4, stride=2)[0]
    assert inputs.tolist() == [0, 1, 2, 3]
    assert targets.tolist() == [1, 2, 3, 4]
    assert make_windows([], 3, 1) == []


def test_pad_batch_and_causal_mask_shapes() -> None:
    batch, valid = pad_batch([[4, 5, 6], [7]], pad_id=0)
    assert batch.tolist() == [[4, 5, 6], [7, 0, 0]]
    assert valid.tolist() == [[True, True, True], [True, False, False]]
    mask = causal_attention_mask(valid)
    assert mask.shape == (2, 3, 3)
    assert not mask[0, 1, 2]
    assert not mask[1, 1].any()
    assert pack_documents([[1, 2], [3]], eos_id=9).tolist() == [1, 2, 9, 3, 9]
    assert pad_batch([], pad_id=0)[0].shape == (0, 0)


def test_special_token_registry_padding() -> None:
    # Four roles reserved above a 38-symbol base vocabulary, before any encoding.
    base = 38
    ids = {name: base + i for i, name in enumerate(("<pad>", "<bos>", "<eos>", "<unk>"))}
    assert ids == {"<pad>": 38, "<bos>": 39, "<eos>": 40, "<unk>": 41}

    def wrap(token_ids: list[int]) -> list[int]:
        return [ids["<bos>"], *token_ids, ids["<eos>"]]

    assert wrap([]) == [39, 40]
    batch, valid = pad_batch([wrap([14, 15, 20, 36]), wrap([])], pad_id=ids["<pad>"])
    assert batch.tolist() == [[39, 14, 15, 20, 36, 40], [39, 40, 38, 38, 38, 38]]
    assert batch[1, 1] == ids["<eos>"]
    assert not valid[1, 2]
    truncated, truncated_valid = pad_batch([[1, 2, 3]], pad_id=ids["<pad>"], max_length=2)
    assert truncated.tolist() == [[1, 2]]
    assert truncated_valid.tolist() == [[True, True]]


def _smoke_sequences() -> list[list[int]]:
    # 40 documents shaped like the seed's mixed smoke corpus: 1,829 tokens (mean 45.7),
    # a 13-token formula and a 56-token proof as the longest document.
    lengths = [13] + [47] * 12 + [46] * 26 + [56]
    rng = np.random.default_rng(17)
    return [rng.integers(0, 415, size=n).tolist() for n in lengths]


def test_frozen_artifact_packing_counts() -> None:
    sequences = _smoke_sequences()
    pad_id, eos_id = 417, 416
    lengths = np.asarray([len(s) for s in sequences])
    assert len(sequences) == 40 and round(float(lengths.mean()), 1) == 45.7
    padded, valid = pad_batch(sequences, pad_id=pad_id)
    assert round(float(valid.mean()), 3) == 0.817
    assert padded.shape == valid.shape == (40, 56)

    examples = pack_causal_examples(
        sequences, eos_id=eos_id, pad_id=pad_id, context_length=32, stride=32
    )
    batches = batch_packed_examples(examples, batch_size=4)
    assert (len(examples), len(batches)) == (59, 15)
    assert all(len(e.input_ids) == 32 for e in examples)
    valid_tokens = sum(int(e.valid_mask.sum()) for e in examples)
    loss_tokens = sum(int(e.loss_mask.sum()) for e in examples)
    assert valid_tokens - loss_tokens == 39  # one masked cross-document target per boundary
    assert 0 < loss_tokens < valid_tokens


def test_long_sequence_truncated_to_max_length() -> None:
    long_ids = list(range(2100))
    batch, valid = pad_batch([long_ids], pad_id=5000, max_length=512)
    assert len(long_ids) > batch.shape[1] == 512
    assert valid.all()
