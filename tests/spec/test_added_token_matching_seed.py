"""The seed's added-token probe: ordinary added tokens are content and match in untrusted
text with their flags; a control spelling in the same text stays text.

The constructed tokenizer: byte-level pieces, a lowercasing normalizer, control tokens
(``<|pad|>`` among them) and two ordinary added tokens, ``<DOC>`` (ID 300, lstrip,
not normalized) and ``yesterday`` (ID 301, single_word, normalized). In
``... <|pad|> <DOC> Yesterday`` the left space belongs to ``<DOC>`` and ``Yesterday``
matches after lowercasing; ``<|pad|>`` is content. Changing either flag changes IDs and
offsets; marking a token special is a separate decision that takes it out of content.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.formats.hf_json import byte_encoder

PROBE = "... <|pad|> <DOC> Yesterday"
CONTROLS = ["<|bos|>", "<|eos|>", "<|pad|>", "<|eot|>"]


def _document(**overrides: dict[str, Any]) -> dict[str, Any]:
    chars = byte_encoder()
    vocab = {chars[b]: b for b in range(256)}
    merges = [(x, y) for x in "etaoin" for y in "shrdlu"] + [("t", "t"), ("e", "e"), ("o", "o")]
    merges.append(("s", "s"))
    for left, right in merges:  # pieces 256..295: IDs 296.. go to the added tokens
        vocab[left + right] = len(vocab)
    added = [
        {"id": 296 + k, "content": c, "special": True, "normalized": False}
        for k, c in enumerate(CONTROLS)
    ]
    added += [
        {"id": 300, "content": "<DOC>", "special": False, "lstrip": True, "normalized": False},
        {
            "id": 301,
            "content": "yesterday",
            "special": False,
            "single_word": True,
            "normalized": True,
        },
    ]
    for token in added:
        for flag in ("single_word", "lstrip", "rstrip"):
            token.setdefault(flag, False)
        token.update(overrides.get(token["content"], {}))
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in merges],
            "ignore_merges": False,
        },
    }


def _load(tmp_path: Any, **overrides: dict[str, Any]) -> tp.Tokenizer:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_document(**overrides)), encoding="utf-8")
    return tp.Tokenizer.load(path)


def _spans(enc: Any) -> dict[int, str]:
    return {i: PROBE[a:b] for i, (a, b) in zip(enc.ids, enc.offsets, strict=True)}


def test_the_probe_records_both_ordinary_added_tokens(tmp_path: Any) -> None:
    tok = _load(tmp_path)
    enc = tok.encode_structured(PROBE)
    spans = _spans(enc)
    assert spans[300] == " <DOC>"  # lstrip: the left space is part of the match
    assert spans[301] == "Yesterday"  # normalized: matched after lowercasing
    assert tok.special_tokens["<|pad|>"] not in enc.ids  # the control spelling is content
    for i, origin, mask in zip(enc.ids, enc.origins, enc.special_tokens_mask, strict=True):
        if i in (300, 301):
            assert (origin, mask) == ("added", 0)
        else:
            assert (origin, mask) == ("content", 0)
    # The absorbed space is part of the match, not of the token: HF decodes it away too.
    assert tok.decode(enc.ids) == "... <|pad|><DOC> yesterday"


def test_the_probe_equals_hugging_face(tmp_path: Any) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = _load(tmp_path)
    peer = tokenizers.Tokenizer.from_str(json.dumps(_document()))
    peer.encode_special_tokens = True  # HF's own mode for "specials are text"
    ref = peer.encode(PROBE, add_special_tokens=False)
    enc = tok.encode_structured(PROBE)
    assert enc.ids == ref.ids and list(enc.offsets) == [tuple(o) for o in ref.offsets]
    peer.encode_special_tokens = False
    allowed = tok.encode_structured(PROBE, allowed_special="all")
    assert allowed.ids == peer.encode(PROBE, add_special_tokens=False).ids
    assert 298 in allowed.ids


def test_changing_either_flag_changes_ids_and_offsets(tmp_path: Any) -> None:
    base = _spans(_load(tmp_path).encode_structured(PROBE))
    no_strip = _load(tmp_path, **{"<DOC>": {"lstrip": False}}).encode_structured(PROBE)
    assert _spans(no_strip)[300] == "<DOC>" and no_strip.ids != list(base)
    raw = _load(tmp_path, yesterday={"normalized": False}).encode_structured(PROBE)
    assert 301 not in raw.ids  # matched in the raw text, "Yesterday" is not the spelling
    inside = _load(tmp_path).encode_structured("... <DOC> myyesterday")
    assert 301 not in inside.ids  # single_word: not inside a word


def test_marking_an_added_token_special_is_a_separate_decision(tmp_path: Any) -> None:
    tok = _load(tmp_path, **{"<DOC>": {"special": True}})
    assert 300 not in tok.encode(PROBE)  # a control now: its spelling in text is content
    assert 300 in tok.encode(PROBE, allowed_special={"<DOC>"})
    assert tok.semantic_hash != _load(tmp_path).semantic_hash
