"""Encoder-decoder collation (seed 000, 0x04 / 0x0B): sources [B, S] and targets [B, T]
padded and stacked, the explicit shift tgt[:, :-1] / tgt[:, 1:] applied exactly once, and
pair ``sequence_ids`` with a sentinel for inserted and padded rows (0x04A)."""

from __future__ import annotations

import numpy as np
import pytest

from tokenpact import Padding, SpecialToken, Tokenizer
from tokenpact.batch import SEQUENCE_SENTINEL, collate_encodings, collate_seq2seq
from tokenpact.errors import BatchError

BOS, EOS, PAD = 1, 2, 0


def _pairs() -> list[tuple[list[int], list[int]]]:
    # [BOS, ..., EOS] on both sides, as the seed's processed_src / processed_tgt.
    return [
        ([BOS, 10, 11, 12, EOS], [BOS, 20, 21, EOS]),
        ([BOS, 13, EOS], [BOS, 22, 23, 24, 25, EOS]),
        ([BOS, 14, 15, EOS], [BOS, EOS]),
    ]


def test_shapes_and_the_single_shift() -> None:
    batch = collate_seq2seq(_pairs(), pad_id=PAD)
    assert batch.source_ids.shape == (3, 5)  # [B, S]
    assert batch.targets.shape == (3, 6)  # [B, T]
    assert batch.decoder_input_ids.shape == batch.labels.shape == (3, 5)  # [B, T - 1]
    assert batch.source_ids.tolist()[1] == [BOS, 13, EOS, PAD, PAD]
    assert batch.source_mask.tolist()[1] == [1, 1, 1, 0, 0]
    # decoder input = tgt[:, :-1], label = tgt[:, 1:] (PAD targets ignored).
    np.testing.assert_array_equal(batch.decoder_input_ids, batch.targets[:, :-1])
    assert batch.labels.tolist() == [
        [20, 21, EOS, -100, -100],
        [22, 23, 24, 25, EOS],
        [EOS, -100, -100, -100, -100],
    ]
    assert batch.loss_tokens == sum(len(t) - 1 for _, t in _pairs()) == 9
    # Every counted label is the token after its decoder input: shifted exactly once.
    for row, (_, target) in enumerate(_pairs()):
        n = len(target) - 1
        assert batch.decoder_input_ids[row, :n].tolist() == target[:-1]
        assert batch.labels[row, :n].tolist() == target[1:]
    assert batch.decoder_attention_mask.tolist()[2] == [1, 0, 0, 0, 0]


def test_masks_for_attention() -> None:
    batch = collate_seq2seq(_pairs(), pad_id=PAD, multiple=4)
    assert batch.source_ids.shape == (3, 8) and batch.decoder_input_ids.shape == (3, 8)
    causal = batch.decoder_causal_mask()
    assert causal.shape == (3, 8, 8)
    assert causal[0, 2].tolist() == [True, True, True] + [False] * 5
    assert not causal[0, 2, 3]  # no future position
    cross = batch.cross_attention_mask()
    assert cross.shape == (3, 8, 8)
    assert cross[1, 0].tolist() == [True, True, True] + [False] * 5
    inputs = batch.model_inputs()
    assert set(inputs) == {
        "input_ids",
        "attention_mask",
        "decoder_input_ids",
        "decoder_attention_mask",
        "labels",
    }


def test_bad_pairs_are_batch_errors() -> None:
    with pytest.raises(BatchError, match="at least two"):
        collate_seq2seq([([BOS, EOS], [EOS])], pad_id=PAD)
    with pytest.raises(BatchError, match="pad_id 0 as content"):
        collate_seq2seq([([BOS, 0, EOS], [BOS, EOS])], pad_id=PAD)
    with pytest.raises(BatchError, match="at least one"):
        collate_seq2seq([], pad_id=PAD)


def test_pair_sequence_ids_keep_inserted_rows_apart() -> None:
    tok = Tokenizer.from_merges(
        [], special_tokens=[SpecialToken("<s>", "bos"), SpecialToken("<pad>", "pad")]
    )
    template = {
        "type": "template",
        "single": [["special", "<s>", 0], ["sequence", "A", 0]],
        "pair": [["special", "<s>", 0], ["sequence", "A", 0], ["special", "<s>", 0],
                 ["sequence", "B", 1]],
    }  # fmt: skip
    tok = Tokenizer(tok.spec.replace(post_processor=template))
    pad = tok.pad_id
    assert pad is not None
    encs = [
        tok.encode_structured("ab", "c", add_special_tokens=True),
        tok.encode_structured("d", "ef", add_special_tokens=True, padding=Padding(length=6)),
        tok.encode_structured("g", add_special_tokens=True),
    ]
    batch = collate_encodings(encs, pad_id=pad)
    s = SEQUENCE_SENTINEL
    assert batch["sequence_ids"].tolist() == [
        [s, 0, 0, s, 1, s],
        [s, 0, s, 1, 1, s],
        [s, 0, s, s, s, s],
    ]
    assert batch["type_ids"].tolist()[0] == [0, 0, 0, 0, 1, 0]
    assert batch["lengths"].tolist() == [5, 5, 2]
    # The attention mask alone cannot tell a visible control from content.
    assert batch["attention_mask"].tolist()[0] == [1, 1, 1, 1, 1, 0]
    assert batch["special_tokens_mask"].tolist()[0] == [True, False, False, True, False, True]
    assert batch["input_ids"][2, 2:].tolist() == [pad] * 4
