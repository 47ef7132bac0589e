"""The transformers adapter against transformers' own tokenizer, on the conformance corpus.

``TransformersTokenizer`` and ``AutoTokenizer`` load the same directory; every call a
training pipeline makes (``__call__`` with padding, truncation, tensors, offsets and
special-token masks; ``apply_chat_template`` with and without tokenizing, batched and
padded; ``pad`` of collator features; ``decode`` and ``batch_decode``; the special-token
attributes) must give identical results. The one documented difference is the trust
rule: a text holding a control spelling (``<|im_end|>``) is encoded as plain text by
tokenpact and as the control by transformers; such texts are counted and left out of
the comparison, and checked to be exactly the texts holding such spellings.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from . import peer_data

transformers = pytest.importorskip("transformers")

MODELS = ["llama-3.2", "qwen-2.5", "deepseek-v3", "glm-4"]
CALLS: list[dict[str, Any]] = [
    {},
    {"add_special_tokens": False},
    {"padding": True},
    {"padding": True, "padding_side": "left", "return_special_tokens_mask": True},
    {"padding": "max_length", "truncation": True, "max_length": 48, "return_tensors": "np"},
    {"truncation": True, "max_length": 7},
    {"padding": True, "pad_to_multiple_of": 8, "return_tensors": "np"},
    {"return_offsets_mapping": True},
    {"return_length": True, "return_token_type_ids": True},
]
CONVERSATIONS = [
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4."},
    ],
    [
        {"role": "user", "content": "Translate 'chat' to French, then English."},
        {"role": "assistant", "content": "chat -> chat"},
        {"role": "user", "content": "And Ünïcode? ✓ 🎉"},
    ],
]


def _folder(name: str) -> Path:
    if name == "llama-3.2":
        return peer_data.llama3_hf_json().parent
    if name == "deepseek-v3":
        return peer_data.deepseek_v3_files().tokenizer_json.parent
    return peer_data.offline_counter_files(name).tokenizer_json.parent


@pytest.fixture(scope="module", params=MODELS)
def pair(request: pytest.FixtureRequest, tp: ModuleType) -> tuple[Any, Any]:
    folder = _folder(request.param)
    ours = tp.TransformersTokenizer.from_pretrained(folder)
    peer = transformers.AutoTokenizer.from_pretrained(str(folder))
    if peer.pad_token is None:
        ours.pad_token = peer.eos_token
        peer.pad_token = peer.eos_token
    return ours, peer


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return peer_data.harvest_texts()[:1200] + peer_data.edge_case_texts(mixtures=100)


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b)


def _split_by_trust(peer: Any, texts: list[str]) -> tuple[list[str], list[str]]:
    spellings = [str(s) for s in peer.added_tokens_decoder.values() if s.special]
    held = [t for t in texts if any(s in t for s in spellings)]
    return [t for t in texts if t not in held], held


def test_call_matches_transformers_on_the_corpus(pair: tuple[Any, Any], corpus: list[str]):
    ours, peer = pair
    plain, held = _split_by_trust(peer, corpus)
    assert len(plain) > 1000
    differences = []
    for options in CALLS:
        for start in range(0, len(plain), 64):
            batch = plain[start : start + 64]
            got, want = ours(batch, **options), peer(batch, **options)
            if sorted(got) != sorted(want):
                differences.append((options, "keys", sorted(got), sorted(want)))
                continue
            for key in want:
                if not _same(got[key], want[key]):
                    differences.append((options, key, start))
    for text in plain[:200]:  # one text at a time: flat lists, as transformers returns
        if dict(ours(text)) != dict(peer(text)):
            differences.append(({"single": True}, text[:60]))
    assert differences == [], differences[:5]
    # The trust rule is the only difference: texts holding control spellings differ
    # exactly where tokenpact keeps the spelling as text.
    for text in held[:50]:
        assert ours(text)["input_ids"] == ours.tokenizer.encode(text, add_special_tokens=True)


def test_chat_template_matches_transformers(pair: tuple[Any, Any]):
    ours, peer = pair
    if peer.chat_template is None:
        pytest.skip("this model ships no chat template")
    assert ours.chat_template == peer.chat_template
    for conversation in CONVERSATIONS:
        for generation in (False, True):
            kw = {"add_generation_prompt": generation}
            assert ours.apply_chat_template(conversation, tokenize=False, **kw) == (
                peer.apply_chat_template(conversation, tokenize=False, **kw)
            )
            assert dict(ours.apply_chat_template(conversation, **kw)) == dict(
                peer.apply_chat_template(conversation, **kw)
            )
            assert ours.apply_chat_template(conversation, return_dict=False, **kw) == (
                peer.apply_chat_template(conversation, return_dict=False, **kw)
            )
    batched = {"padding": True, "return_tensors": "np"}
    got = ours.apply_chat_template(CONVERSATIONS, **batched)
    want = peer.apply_chat_template(CONVERSATIONS, **batched)
    for key in want:
        assert _same(got[key], want[key]), key
    cut = {"truncation": True, "max_length": 9}
    assert dict(ours.apply_chat_template(CONVERSATIONS[0], **cut)) == dict(
        peer.apply_chat_template(CONVERSATIONS[0], **cut)
    )
    assert got.tokenizer_hash == ours.tokenizer.semantic_hash
    assert got.template_hash == ours.template_hash is not None


def test_assistant_mask_marks_the_assistant_tokens(pair: tuple[Any, Any]):
    ours, peer = pair
    if peer.chat_template is None:
        pytest.skip("this model ships no chat template")
    out = ours.apply_chat_template(CONVERSATIONS[0], return_assistant_tokens_mask=True)
    masked = [i for i, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert "4." in ours.decode(masked)
    assert "You are terse" not in ours.decode(masked)


def test_pad_decode_and_attributes_match_transformers(pair: tuple[Any, Any], corpus: list[str]):
    ours, peer = pair
    plain, _ = _split_by_trust(peer, corpus)
    features = [{"input_ids": peer(t)["input_ids"]} for t in plain[:16]]
    for kw in ({}, {"return_tensors": "np"}, {"padding": "max_length", "max_length": 600}):
        got, want = ours.pad(features, **kw), peer.pad(features, **kw)
        assert sorted(got) == sorted(want)
        assert all(_same(got[k], want[k]) for k in want)
    ids = [peer(t)["input_ids"] for t in plain[:300]]
    assert ours.batch_decode(ids) == peer.batch_decode(ids)
    assert ours.batch_decode(ids, skip_special_tokens=True) == peer.batch_decode(
        ids, skip_special_tokens=True
    )
    assert ours.decode(np.array(ids[0])) == peer.decode(ids[0])
    for name in ("bos_token", "eos_token", "pad_token", "unk_token", "bos_token_id"):
        assert getattr(ours, name) == getattr(peer, name), name
    for name in ("eos_token_id", "pad_token_id", "model_max_length", "padding_side"):
        assert getattr(ours, name) == getattr(peer, name), name
    assert len(ours) == len(peer) and ours.vocab_size == peer.vocab_size
    assert ours.tokenize(plain[0]) == peer.tokenize(plain[0])


def test_adapter_errors_name_the_fix(tp: ModuleType):
    texts = ["the cat sleeps on the mat"] * 30
    bare = tp.TransformersTokenizer(tp.train_bpe(texts, vocab_size=280, special_tokens=[]))
    with pytest.raises(tp.ConfigError, match="pad_token = tok.eos_token"):
        bare(["a", "a b c"], padding=True)
    with pytest.raises(tp.InvalidInputError, match="padding=True"):
        bare(["a", "a b c"], return_tensors="np")
    with pytest.raises(tp.chat.ChatTemplateError, match="chat_template"):
        bare.apply_chat_template([{"role": "user", "content": "hi"}])
    with pytest.raises(tp.ConfigError, match="encode_structured"):
        bare("a", "b")


def test_datasets_map_and_collators_as_with_transformers(tp: ModuleType):
    datasets = pytest.importorskip("datasets")
    from transformers import DataCollatorForLanguageModeling, DataCollatorWithPadding

    folder = _folder("qwen-2.5")
    ours = tp.TransformersTokenizer.from_pretrained(folder)
    peer = transformers.AutoTokenizer.from_pretrained(str(folder))
    texts, _ = _split_by_trust(peer, peer_data.harvest_texts()[:300])
    table = datasets.Dataset.from_dict({"text": texts})
    mapped = {}
    for name, tok in (("ours", ours), ("peer", peer)):
        mapped[name] = table.map(
            lambda batch, tok=tok: tok(batch["text"], truncation=True, max_length=64),
            batched=True,
            remove_columns=["text"],
        )
    assert mapped["ours"].to_dict() == mapped["peer"].to_dict()
    features = [mapped["ours"][i] for i in range(16)]
    for collator in (DataCollatorWithPadding, DataCollatorForLanguageModeling):
        kw: dict[str, Any] = {"return_tensors": "np"}
        if collator is DataCollatorForLanguageModeling:
            kw["mlm"] = False
        got = collator(tokenizer=ours, **kw)(features)
        want = collator(tokenizer=peer, **kw)(features)
        assert sorted(got) == sorted(want)
        assert all(_same(got[k], want[k]) for k in want), collator.__name__
