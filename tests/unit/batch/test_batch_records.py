"""Record validation and the batch-membership checks: every bad input names its fix."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact.batch import (
    RecordTable,
    SequenceRecord,
    collate_packed,
    collate_padded,
)
from tokenpact.errors import BatchError


def rec(sample_id: str, ids: list[int], **kw: object) -> SequenceRecord:
    return SequenceRecord(sample_id, ids, **kw)  # type: ignore[arg-type]


def test_defaults_fill_aligned_fields() -> None:
    r = rec("a", [5, 6, 7])
    assert r.special_tokens_mask.tolist() == [False] * 3
    assert r.target_supervision.tolist() == [True] * 3
    assert r.token_owners.tolist() == ["content"] * 3
    assert r.sequence_bundle_hash is None
    assert len(r) == 3


def test_record_is_immutable() -> None:
    ids = np.array([1, 2, 3])
    r = rec("a", ids)
    ids[0] = 99  # the record copied its input
    assert r.input_ids[0] == 1
    with pytest.raises(ValueError):
        r.input_ids[0] = 7


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("special_tokens_mask", [0, 1]),
        ("target_supervision", [1, 1, 1, 1]),
        ("token_owners", ["prompt", "response"]),
    ],
)
def test_misaligned_masks_are_rejected(field: str, value: object) -> None:
    with pytest.raises(BatchError, match="same token list|one owner per token"):
        rec("a", [1, 2, 3], **{field: value})


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([], "no tokens"),
        ([1.5, 2.0], "must hold integers"),
        ([[1, 2], [3, 4]], "flat sequence"),
        ([3, -1], "negative ID"),
        ([True, False], "must hold integers"),
    ],
)
def test_bad_ids_are_rejected(ids: object, message: str) -> None:
    with pytest.raises(BatchError, match=message):
        rec("a", ids)  # type: ignore[arg-type]


def test_supervision_must_be_binary() -> None:
    with pytest.raises(BatchError, match="0/1"):
        rec("a", [1, 2], target_supervision=[0, 2])


@pytest.mark.parametrize("sample_id", ["", "__pad__", "__ignore__", 7])
def test_bad_sample_ids(sample_id: object) -> None:
    with pytest.raises(BatchError, match="sample_id"):
        rec(sample_id, [1])  # type: ignore[arg-type]


def test_reserved_owner_names_are_rejected() -> None:
    with pytest.raises(BatchError, match="reserved"):
        rec("a", [1, 2], token_owners=["prompt", "__pad__"])


def test_duplicate_sample_ids_in_a_batch() -> None:
    records = [rec("same", [1, 2]), rec("same", [3])]
    for collate in (collate_packed, lambda r: collate_padded(r, pad_id=0)):
        with pytest.raises(BatchError, match="'same' appears more than once"):
            collate(records)


def test_pad_inside_content_names_record_and_position() -> None:
    records = [rec("a", [1, 2]), rec("b", [3, 265, 4])]
    with pytest.raises(BatchError, match=r"'b' contains the PAD ID 265 at position 1"):
        collate_padded(records, pad_id=265)
    with pytest.raises(BatchError, match="PAD ID 265"):
        collate_packed(records, pad_id=265)


def test_overlength_record_is_rejected_by_default() -> None:
    records = [rec("a", [1, 2, 3, 4, 5]), rec("b", [1])]
    with pytest.raises(BatchError, match=r"'a' has 5 tokens, more than max_length=4.*upstream"):
        collate_padded(records, pad_id=0, max_length=4)


def test_overlength_record_cut_only_when_declared() -> None:
    records = [
        rec("a", [1, 2, 3, 4, 5], target_supervision=[0, 0, 1, 1, 1]),
        rec("b", [6], target_supervision=[1]),
    ]
    batch = collate_padded(records, pad_id=0, max_length=4, overflow="truncate_right")
    assert batch.input_ids.tolist() == [[1, 2, 3, 4], [6, 0, 0, 0]]
    # Labels are derived after the cut: the last kept token predicts nothing.
    assert batch.labels[0].tolist() == [-100, 3, 4, -100]
    assert batch.report.truncated_records == 1


def test_empty_batch() -> None:
    with pytest.raises(BatchError, match="empty batch"):
        collate_packed([])
    with pytest.raises(BatchError, match="empty batch"):
        collate_padded([], pad_id=0)


def test_unknown_overflow_policy() -> None:
    with pytest.raises(BatchError, match="overflow="):
        collate_packed([rec("a", [1])], overflow="drop")  # type: ignore[arg-type]


def test_non_records_are_rejected() -> None:
    with pytest.raises(BatchError, match="not a SequenceRecord"):
        collate_packed([[1, 2, 3]])  # type: ignore[list-item]
    with pytest.raises(BatchError, match="list of records"):
        collate_packed(rec("a", [1]))  # type: ignore[arg-type]


def test_table_round_trip_and_owner_codes() -> None:
    records = [
        rec("a", [1, 2, 3], token_owners=["prompt", "prompt", "response"]),
        rec("b", [4, 5], token_owners="response", sequence_bundle_hash="h1"),
    ]
    table = RecordTable.from_records(records)
    assert len(table) == 2
    assert table.lengths.tolist() == [3, 2]
    assert table.owner_names == ("prompt", "response")
    back = table.record(1)
    assert back.sample_id == "b"
    assert back.token_owners.tolist() == ["response", "response"]
    assert back.sequence_bundle_hash == "h1"
    assert [r.sample_id for r in table] == ["a", "b"]


def test_table_from_flat_ids_and_offsets() -> None:
    ids = np.array([7, 8, 9, 10], dtype=np.uint32)  # encode_batch_flat's dtype
    table = RecordTable(ids, offsets=np.array([0, 1, 4]), sample_ids=["x", "y"])
    assert table.record(1).input_ids.tolist() == [8, 9, 10]
    assert table.sample_ids.tolist() == ["x", "y"]
    assert RecordTable(ids, offsets=[0, 4]).sample_ids.tolist() == ["0"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"offsets": [0, 2]}, "offsets must be"),
        ({"offsets": [0, 2, 2, 4]}, "no tokens"),
        ({"starts": [0, 3], "lengths": [2, 2]}, "outside input_ids"),
        ({"offsets": [0, 2, 4], "sample_ids": ["a", "a"]}, "more than once"),
        ({"offsets": [0, 2, 4], "sample_ids": ["a"]}, "one per record"),
        ({}, "describe the records"),
        ({"offsets": [0, 4], "owner_codes": [0, 0, 1, 0]}, "must index owner_names"),
    ],
)
def test_table_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(BatchError, match=message):
        RecordTable([1, 2, 3, 4], **kwargs)  # type: ignore[arg-type]


def test_take_selects_without_copying_and_rejects_duplicates() -> None:
    table = RecordTable(np.arange(10), offsets=[0, 3, 5, 10], sample_ids=["a", "b", "c"])
    sub = table.take([2, 0])
    assert sub.sample_ids.tolist() == ["c", "a"]
    assert sub.input_ids is table.input_ids
    assert sub.record(0).input_ids.tolist() == [5, 6, 7, 8, 9]
    with pytest.raises(BatchError, match="selected twice"):
        table.take([1, 1])
    with pytest.raises(BatchError, match="lie in 0..2"):
        table.take([3])


def test_indices_select_in_sampler_order() -> None:
    table = RecordTable(np.arange(1, 11), offsets=[0, 3, 5, 10], sample_ids=["a", "b", "c"])
    batch = collate_packed(table, indices=[2, 0])
    assert batch.sample_ids == ("c", "a")
    assert batch.input_ids.tolist() == [6, 7, 8, 9, 10, 1, 2, 3]
    with pytest.raises(BatchError, match="selected twice"):
        collate_packed(table, indices=[0, 0])


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_options(bad: object) -> None:
    records = [rec("a", [1, 2])]
    with pytest.raises(BatchError, match="multiple must be a positive integer"):
        collate_padded(records, pad_id=0, multiple=bad)  # type: ignore[arg-type]
    with pytest.raises(BatchError, match="max_length must be a positive integer"):
        collate_packed(records, max_length=bad)  # type: ignore[arg-type]


def test_bad_pad_id() -> None:
    with pytest.raises(BatchError, match="pad_id must be a non-negative token ID"):
        collate_padded([rec("a", [1])], pad_id=-1)
    with pytest.raises(BatchError, match="needs pad_id"):
        collate_padded([rec("a", [1])], pad_id=None)  # type: ignore[arg-type]
