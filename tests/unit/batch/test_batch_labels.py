"""Label derivation: target supervision shifted onto prediction positions, exactly once."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import IGNORE_INDEX, SequenceRecord, collate_packed, shifted_targets
from tokenpact.errors import BatchError

I = IGNORE_INDEX  # noqa: E741


@pytest.fixture
def chat() -> SequenceRecord:
    # prompt header (3 tokens) then a 3-token response whose targets are supervised
    return SequenceRecord(
        "chat-1",
        [10, 11, 12, 20, 21, 22],
        token_owners=["prompt"] * 3 + ["response"] * 3,
        target_supervision=[0, 0, 0, 1, 1, 1],
    )


def test_pre_shifted_labels_predict_the_next_token(chat: SequenceRecord) -> None:
    t = shifted_targets(chat)
    assert t.convention == "pre_shifted"
    assert t.labels.tolist() == [I, I, 20, 21, 22, I]
    assert t.loss_mask.tolist() == [False, False, True, True, True, False]
    assert t.label_owners.tolist() == ["__ignore__"] * 2 + ["response"] * 3 + ["__ignore__"]


def test_unshifted_labels_stay_on_token_positions(chat: SequenceRecord) -> None:
    t = shifted_targets(chat, label_convention="unshifted")
    assert t.labels.tolist() == [I, I, I, 20, 21, 22]
    assert t.label_owners.tolist() == ["__ignore__"] * 3 + ["response"] * 3


def test_model_side_shift_of_unshifted_labels_equals_pre_shifted(chat: SequenceRecord) -> None:
    pre = shifted_targets(chat).labels
    raw = shifted_targets(chat, label_convention="unshifted").labels
    # What a HF causal LM does internally: logits[:-1] are scored against labels[1:].
    assert raw[1:].tolist() == pre[:-1].tolist()
    assert pre[-1] == I


def test_first_token_is_never_a_target() -> None:
    r = SequenceRecord("x", [1, 2], target_supervision=[1, 1])
    assert shifted_targets(r).labels.tolist() == [2, I]
    assert shifted_targets(r, label_convention="unshifted").labels.tolist() == [I, 2]


def test_single_token_record_has_no_label() -> None:
    r = SequenceRecord("x", [9])
    assert shifted_targets(r).labels.tolist() == [I]
    assert shifted_targets(r, label_convention="unshifted").labels.tolist() == [I]


def test_custom_ignore_index() -> None:
    r = SequenceRecord("x", [1, 2, 3], target_supervision=[0, 0, 1])
    assert shifted_targets(r, ignore_index=-1).labels.tolist() == [-1, 3, -1]
    with pytest.raises(BatchError, match="could be a real token ID"):
        shifted_targets(r, ignore_index=0)


def test_unknown_convention_names_both_options() -> None:
    r = SequenceRecord("x", [1, 2])
    with pytest.raises(BatchError, match="'pre_shifted'.*'unshifted'"):
        shifted_targets(r, label_convention="shifted")  # type: ignore[arg-type]


def test_packed_unshifted_labels_ignore_every_record_start() -> None:
    records = [
        SequenceRecord("a", [1, 2, 3]),
        SequenceRecord("b", [4, 5]),
    ]
    packed = collate_packed(records, label_convention="unshifted")
    assert packed.labels.tolist() == [I, 2, 3, I, 5]
    # The model's own shift pairs logits[2] (last of a) with labels[3]: ignored.
    assert packed.labels[packed.cu_seqlens[1]] == I


def test_labels_never_include_pad() -> None:
    records = [SequenceRecord("a", [1, 2, 3]), SequenceRecord("b", [4])]
    from tokenpact.batch import collate_padded

    batch = collate_padded(records, pad_id=99, multiple=8)
    assert 99 not in batch.labels
    assert np.all(batch.labels[batch.attention_mask == 0] == I)
