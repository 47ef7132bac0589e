"""Truncation, overflow, pairs and padding: identical to HF where HF has the same policy.

Peer: Llama 3.2's tokenizer.json in `tokenizers` with truncation/padding enabled. Our
``truncate_then_add`` policy is HF's (the budget excludes the template's BOS); the other
policy, ``add_then_truncate``, is checked against its definition.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")

TEXTS = [
    "The cat sleeps on the warm windowsill while the rain keeps falling outside.",
    "Short.",
    "def f(x):\n    return x * 2  # doubles the input\n",
    "Ünïcödé façade — naïve café, 東京タワー, and 12345678 digits.",
]


@pytest.fixture(scope="module")
def toks(tp: ModuleType):
    path = peer_data.llama3_hf_json()
    return tp.Tokenizer.load(path), path


def _peer(path, **truncation):
    peer = tokenizers.Tokenizer.from_file(str(path))
    if truncation:
        peer.enable_truncation(**truncation)
    return peer


@pytest.mark.parametrize("max_length,stride", [(8, 0), (8, 2), (5, 1), (20, 3)])
def test_single_truncation_and_overflow_match_hf(tp, toks, max_length, stride) -> None:
    ours, path = toks
    peer = _peer(path, max_length=max_length, stride=stride)
    for text in TEXTS:
        ref = peer.encode(text)
        enc = ours.encode_structured(
            text,
            add_special_tokens=True,
            truncation=tp.Truncation(max_length=max_length, stride=stride),
        )
        assert enc.ids == ref.ids
        assert enc.offsets == [tuple(o) for o in ref.offsets]
        assert enc.truncated == bool(ref.overflowing)
        assert [o.ids for o in enc.overflowing] == [o.ids for o in ref.overflowing]


@pytest.mark.parametrize("strategy", ["only_first", "only_second"])
def test_pair_truncation_matches_hf(tp, toks, strategy) -> None:
    ours, path = toks
    peer = _peer(path, max_length=12, strategy=strategy)
    # The cut sequence is the long one; the other must fit on its own.
    a, b = (TEXTS[3], TEXTS[1]) if strategy == "only_first" else (TEXTS[1], TEXTS[3])
    ref = peer.encode(a, b)
    enc = ours.encode_structured(
        a, b, add_special_tokens=True, truncation=tp.Truncation(max_length=12, strategy=strategy)
    )
    assert enc.ids == ref.ids
    assert enc.type_ids == ref.type_ids
    assert enc.sequence_ids == ref.sequence_ids


def test_only_second_refuses_when_the_first_cannot_fit(tp, toks) -> None:
    ours, path = toks
    with pytest.raises(Exception, match="too short"):
        _peer(path, max_length=12, strategy="only_second").encode(TEXTS[0], TEXTS[3])
    with pytest.raises(tp.ConfigError, match="only_second cannot fit"):
        ours.encode_structured(
            TEXTS[0],
            TEXTS[3],
            add_special_tokens=True,
            truncation=tp.Truncation(max_length=12, strategy="only_second"),
        )


def test_padding_matches_hf(tp, toks) -> None:
    ours, path = toks
    for side in ("right", "left"):
        peer = tokenizers.Tokenizer.from_file(str(path))
        peer.enable_padding(direction=side, pad_id=128004, pad_to_multiple_of=8)
        refs = peer.encode_batch(TEXTS)
        encs = ours.encode_structured_batch(
            TEXTS, add_special_tokens=True, padding=tp.Padding(multiple=8, side=side, pad_id=128004)
        )
        for enc, ref in zip(encs, refs, strict=True):
            assert enc.ids == ref.ids
            assert enc.attention_mask == ref.attention_mask
            assert enc.special_tokens_mask == ref.special_tokens_mask
            assert enc.offsets == [tuple(o) for o in ref.offsets]


def test_control_policies_differ_as_the_seed_says(tp, toks) -> None:
    """Seed 0x04B: truncate-then-add keeps the required control token; add-then-truncate
    cuts the right edge of the finished sequence."""
    ours, _ = toks
    post = {
        "type": "template",
        "single": [["sequence", "A", 0], ["special", "<|end_of_text|>", 0]],
        "pair": [],
    }
    # The same engine and provenance under a spec with another post-processor.
    tok = tp.Tokenizer(ours.spec.replace(post_processor=post), ours.engine, ours.provenance)
    text = TEXTS[0]
    keep = tok.encode_structured(
        text, add_special_tokens=True, truncation=tp.Truncation(max_length=6)
    )
    cut = tok.encode_structured(
        text,
        add_special_tokens=True,
        truncation=tp.Truncation(max_length=6, control_policy="add_then_truncate"),
    )
    eos = tok.special_tokens["<|end_of_text|>"]
    assert keep.ids[-1] == eos and len(keep.ids) == 6
    assert eos not in cut.ids and cut.ids == tok.encode(text)[:6] and cut.truncated


def test_bad_policies_raise(tp) -> None:
    with pytest.raises(tp.ConfigError, match="stride"):
        tp.Truncation(max_length=4, stride=4)
    with pytest.raises(tp.ConfigError, match="control_policy"):
        tp.Truncation(max_length=4, control_policy="maybe")  # type: ignore[arg-type]
    with pytest.raises(tp.ConfigError, match="side"):
        tp.Padding(side="middle")  # type: ignore[arg-type]
