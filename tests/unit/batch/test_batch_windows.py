"""Windows, simple padding, packing with EOS, causal examples."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import (
    batch_packed_examples,
    block_causal_mask,
    causal_attention_mask,
    make_windows,
    pack_causal_examples,
    pack_documents,
    pad_batch,
    window_arrays,
)
from tokenpact.errors import BatchError


def test_windows_never_copy_inputs_into_targets() -> None:
    tokens = np.arange(100, 120)
    for inputs, targets in make_windows(tokens, context_length=5, stride=3):
        assert (targets[:-1] == inputs[1:]).all()
        assert targets[-1] == inputs[-1] + 1


def test_window_count_and_arrays() -> None:
    inputs, targets = window_arrays(range(7), context_length=4, stride=2)
    assert inputs.tolist() == [[0, 1, 2, 3], [2, 3, 4, 5]]
    assert targets.tolist() == [[1, 2, 3, 4], [3, 4, 5, 6]]
    assert make_windows(range(4), 4, 1) == []  # no token left for the last target
    assert len(make_windows(range(5), 4, 1)) == 1


@pytest.mark.parametrize(("ctx", "stride"), [(0, 1), (2, 0), (-1, 1)])
def test_window_options(ctx: int, stride: int) -> None:
    with pytest.raises(BatchError, match="positive integer"):
        make_windows(range(10), ctx, stride)


def test_pad_batch_value_equal_to_pad_is_still_valid() -> None:
    batch, valid = pad_batch([[0, 5], [0]], pad_id=0)
    assert batch.tolist() == [[0, 5], [0, 0]]
    assert valid.tolist() == [[True, True], [True, False]]


def test_pad_batch_fixed_width_pads_and_truncates() -> None:
    batch, valid = pad_batch([[1, 2, 3], [4]], pad_id=9, max_length=5)
    assert batch.tolist() == [[1, 2, 3, 9, 9], [4, 9, 9, 9, 9]]
    with pytest.raises(BatchError, match=">= 0"):
        pad_batch([[1]], pad_id=0, max_length=-1)
    with pytest.raises(BatchError, match="pad_id"):
        pad_batch([[1]], pad_id=-5)


def test_pack_documents_handles_empty_documents() -> None:
    assert pack_documents([[], [3], []], eos_id=1).tolist() == [1, 3, 1, 1]
    assert pack_documents([], eos_id=1).tolist() == []


def test_causal_mask_rejects_wrong_rank() -> None:
    with pytest.raises(BatchError, match="batch, time"):
        causal_attention_mask([True, False])


def test_block_causal_mask_validation() -> None:
    with pytest.raises(BatchError, match="start at 0"):
        block_causal_mask([1, 3])


def test_causal_examples_mask_cross_document_targets() -> None:
    ex = pack_causal_examples(
        [[5, 6, 7], [8], [9, 10]], eos_id=2, pad_id=0, context_length=4, stride=4
    )
    # stream 5 6 7 2 8 2 9 10 2 -> 8 inputs, 2 windows
    assert [e.input_ids.tolist() for e in ex] == [[5, 6, 7, 2], [8, 2, 9, 10]]
    assert [e.target_ids.tolist() for e in ex] == [[6, 7, 2, 8], [2, 9, 10, 2]]
    assert [e.loss_mask.tolist() for e in ex] == [
        [True, True, True, False],
        [True, False, True, True],
    ]
    assert ex[0].labels.tolist() == [6, 7, 2, -100]
    assert ex[1].document_index.tolist() == [1, 1, 2, 2]
    assert [e.start for e in ex] == [0, 4]


def test_causal_examples_pad_the_last_window() -> None:
    ex = pack_causal_examples([[5, 6, 7, 8]], eos_id=2, pad_id=0, context_length=3)
    assert len(ex) == 2
    assert ex[1].input_ids.tolist() == [8, 0, 0]
    assert ex[1].target_ids.tolist() == [2, 0, 0]
    assert ex[1].valid_mask.tolist() == [True, False, False]
    assert ex[1].labels.tolist() == [2, -100, -100]


def test_boundaries_come_from_lengths_not_ids() -> None:
    # A document that contains the EOS value keeps its internal target.
    ex = pack_causal_examples([[7, 2, 8], [9]], eos_id=2, pad_id=0, context_length=8)
    assert ex[0].loss_mask.tolist()[:4] == [True, True, True, False]
    assert ex[0].valid_mask.sum() == 5


def test_empty_inputs() -> None:
    assert pack_causal_examples([], eos_id=2, pad_id=0, context_length=4) == []
    assert pack_causal_examples([[]], eos_id=2, pad_id=0, context_length=4) == []
    assert batch_packed_examples([], 4) == []


def test_batching_examples() -> None:
    ex = pack_causal_examples([list(range(3, 30))], eos_id=2, pad_id=0, context_length=4)
    batches = batch_packed_examples(ex, batch_size=3)
    assert [b.input_ids.shape[0] for b in batches] == [3, 3, 1]
    assert batches[0].labels.shape == (3, 4)
    assert [b.input_ids.shape[0] for b in batch_packed_examples(ex, 3, drop_last=True)] == [3, 3]
    with pytest.raises(BatchError, match="pack_causal_examples"):
        batch_packed_examples([[1, 2]], 2)  # type: ignore[list-item]
    with pytest.raises(BatchError, match="batch_size"):
        batch_packed_examples(ex, 0)
