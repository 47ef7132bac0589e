"""Padded collation: sides, width rules, positions, generation index, ownership."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import IGNORE_INDEX, SequenceRecord, collate_padded, to_torch
from tokenpact.errors import BatchError

I = IGNORE_INDEX  # noqa: E741
PAD = 0


@pytest.fixture
def records() -> list[SequenceRecord]:
    return [
        SequenceRecord("long", [5, 6, 7, 8], special_tokens_mask=[1, 0, 0, 1]),
        SequenceRecord("short", [9, 10], special_tokens_mask=[1, 1]),
    ]


def test_right_padding_longest(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD)
    assert b.shape == (2, 4)
    assert b.input_ids.tolist() == [[5, 6, 7, 8], [9, 10, 0, 0]]
    assert b.last_index.tolist() == [3, 1]
    assert b.special_tokens_mask.tolist() == [[True, False, False, True], [True, True, True, True]]
    assert b.side == "right" and b.pad_id == PAD


def test_left_padding_for_generation(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD, side="left")
    assert b.input_ids.tolist() == [[5, 6, 7, 8], [0, 0, 9, 10]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1], [0, 0, 1, 1]]
    # Positions start at 0 on the first real token, not on the first column.
    assert b.position_ids.tolist() == [[0, 1, 2, 3], [0, 0, 0, 1]]
    # Every row's last real token is in the last column.
    assert b.last_index.tolist() == [3, 3]
    rows = np.arange(2)
    assert b.input_ids[rows, b.last_index].tolist() == [8, 10]
    assert b.labels.tolist() == [[6, 7, 8, I], [I, I, 10, I]]
    assert b.sample_ownership()[1].tolist() == ["__pad__", "__pad__", "short", "short"]


def test_right_padding_last_index_reads_last_real_token(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD, multiple=8)
    rows = np.arange(2)
    assert b.input_ids[rows, b.last_index].tolist() == [8, 10]


def test_multiple_alignment(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD, multiple=3)
    assert b.shape == (2, 6)
    assert b.report.alignment_pad == 4 and b.report.variation_pad == 2


def test_fixed_width(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD, max_length=7, pad_to="max_length")
    assert b.shape == (2, 7)
    assert b.report.slots == 14
    b = collate_padded(records, pad_id=PAD, max_length=7, pad_to="max_length", multiple=4)
    assert b.shape == (2, 8)
    with pytest.raises(BatchError, match="needs max_length"):
        collate_padded(records, pad_id=PAD, pad_to="max_length")


def test_bad_side_and_width_rule(records: list[SequenceRecord]) -> None:
    with pytest.raises(BatchError, match="'right' .training. or 'left'"):
        collate_padded(records, pad_id=PAD, side="center")  # type: ignore[arg-type]
    with pytest.raises(BatchError, match="pad_to"):
        collate_padded(records, pad_id=PAD, pad_to="bucket")  # type: ignore[arg-type]


def test_causal_mask_hides_pad_and_future(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD, side="left")
    mask = b.causal_mask()
    assert mask.shape == (2, 4, 4)
    assert not mask[1, :, :2].any()  # no query sees the leading PAD keys
    assert not mask[1, :2].any()  # PAD queries see nothing
    assert mask[1, 3].tolist() == [False, False, True, True]
    assert not mask[0, 0, 1]


def test_rows_reconstruct_records(records: list[SequenceRecord]) -> None:
    for side in ("right", "left"):
        b = collate_padded(records, pad_id=PAD, side=side, multiple=4)  # type: ignore[arg-type]
        assert [r.tolist() for r in b.rows()] == [[5, 6, 7, 8], [9, 10]]


def test_dtypes_and_model_inputs(records: list[SequenceRecord]) -> None:
    b = collate_padded(records, pad_id=PAD)
    assert b.input_ids.dtype == np.int64 and b.labels.dtype == np.int64
    assert b.attention_mask.dtype == np.int64 and b.position_ids.dtype == np.int64
    assert b.loss_mask.dtype == bool
    assert set(b.model_inputs()) == {"input_ids", "attention_mask", "position_ids", "labels"}
    assert b.bundle_hashes == (None, None)


def test_to_torch(records: list[SequenceRecord]) -> None:
    torch = pytest.importorskip("torch")
    tensors = collate_padded(records, pad_id=PAD).to_torch()
    assert tensors["input_ids"].dtype == torch.int64
    assert tensors["labels"].tolist()[1] == [10, I, I, I]


def test_to_torch_without_torch_says_how_to_install() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ModuleNotFoundError, match="pip install torch"):
            to_torch({"x": np.zeros(2)})
    else:
        pytest.skip("torch is installed")
