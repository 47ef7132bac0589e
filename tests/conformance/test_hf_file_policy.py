"""A tokenizer.json's own ``padding`` / ``truncation`` fields are imported: tokenpact's
structured encodings equal ``tokenizers.Tokenizer.from_file(path).encode(...)`` /
``encode_batch(...)`` with the file's settings left on (IDs, attention masks, offsets,
overflowing windows), and export writes the fields back.

Files: all-MiniLM-L6-v2 (pads to a fixed 128, truncates at 128, longest first) and
Qwen2-VL-2B (pads a batch to its longest, on the left, with ``<|endoftext|>``).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from . import peer_data

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    harvested = [t for t in peer_data.harvest_texts() if t.strip()][:240]
    # Texts far over max_length (128 tokens), to exercise truncation and overflow.
    long = [" ".join(harvested[i : i + 12]) for i in range(0, 120, 12)]
    return harvested + long


def _files() -> dict[str, Path]:
    return {
        "minilm": peer_data.minilm_tokenizer_json(),
        "qwen2-vl": peer_data.offline_counter_files("qwen2-vl-2b-instruct-awq").tokenizer_json,
    }


@pytest.fixture(scope="module", params=["minilm", "qwen2-vl"])
def pair(request: pytest.FixtureRequest, tp: ModuleType):
    path = _files()[request.param]
    return request.param, tp.Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))


def _pads(enc) -> list[str]:
    """The ``tokens`` entries of the padded positions."""
    return [t for t, m in zip(enc.tokens, enc.attention_mask, strict=True) if not m]


def _same(enc, ref) -> None:
    assert enc.ids == ref.ids
    # Pads show the pad token's spelling, as HF shows its padding's pad_token.
    assert _pads(enc) == _pads(ref)
    assert [_pads(o) for o in enc.overflowing] == [_pads(o) for o in ref.overflowing]
    assert enc.attention_mask == ref.attention_mask
    assert enc.offsets == [tuple(o) for o in ref.offsets]
    assert enc.type_ids == ref.type_ids
    assert [o.ids for o in enc.overflowing] == [o.ids for o in ref.overflowing]
    assert [o.attention_mask for o in enc.overflowing] == [
        o.attention_mask for o in ref.overflowing
    ]


def test_the_files_set_the_fields(tp: ModuleType) -> None:
    files = _files()
    minilm = tp.Tokenizer.load(files["minilm"])
    assert minilm.padding == tp.Padding(length=128, side="right", pad_id=0)
    assert minilm.truncation == tp.Truncation(max_length=128)
    qwen = tp.Tokenizer.load(files["qwen2-vl"])
    assert qwen.padding == tp.Padding(side="left", pad_id=qwen.special_tokens["<|endoftext|>"])
    assert qwen.truncation is None


def test_single_encodings_match_hf(pair, texts: list[str]) -> None:
    name, ours, peer = pair
    cut = padded = 0
    for text in texts:
        ref = peer.encode(text)
        enc = ours.encode_structured(text, add_special_tokens=True, allowed_special="all")
        _same(enc, ref)
        cut += bool(ref.overflowing)
        padded += "[PAD]" in _pads(enc)
    if name == "minilm":
        assert cut >= 10  # the long texts were cut (and padded windows compared)
        assert padded >= 10  # short texts were padded to 128 (and their pads compared)


def test_batches_match_hf(pair, texts: list[str]) -> None:
    _, ours, peer = pair
    for start in range(0, len(texts), 25):  # mixed lengths: every batch needs padding
        batch = texts[start : start + 25]
        refs = peer.encode_batch(batch)
        encs = ours.encode_structured_batch(batch, add_special_tokens=True, allowed_special="all")
        assert len({len(e.ids) for e in encs}) == 1
        for enc, ref in zip(encs, refs, strict=True):
            _same(enc, ref)


def test_fixed_padding_without_truncation_matches_hf(tp: ModuleType, texts: list[str]) -> None:
    """HF's Fixed(128) pads each sequence to 128 and leaves a longer one as it is."""
    path = _files()["minilm"]
    ours = tp.Tokenizer.load(path).with_truncation(None)
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    batch = [texts[0], texts[-1], texts[1]]  # the middle one is far over 128 tokens
    refs = peer.encode_batch(batch)
    encs = ours.encode_structured_batch(batch, add_special_tokens=True, allowed_special="all")
    assert [len(e.ids) for e in encs] == [len(r.ids) for r in refs]
    assert len(encs[0].ids) == 128 < len(encs[1].ids)
    for enc, ref in zip(encs, refs, strict=True):
        _same(enc, ref)


def test_pairs_match_hf(tp: ModuleType, texts: list[str]) -> None:
    path = _files()["minilm"]
    ours, peer = tp.Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))
    firsts, seconds = texts[-10:], texts[:10]
    refs = peer.encode_batch(list(zip(firsts, seconds, strict=True)))
    encs = ours.encode_structured_batch(firsts, seconds, add_special_tokens=True)
    for enc, ref in zip(encs, refs, strict=True):
        assert enc.ids == ref.ids
        assert enc.attention_mask == ref.attention_mask
        assert enc.type_ids == ref.type_ids


def test_switching_the_policy_off_matches_hf_switched_off(pair, texts: list[str]) -> None:
    _, ours, _ = pair
    path = _files()[pair[0]]
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_padding()
    peer.no_truncation()
    off = ours.with_padding(None).with_truncation(None)
    for text in texts[-5:]:
        ref = peer.encode(text)
        assert off.encode_structured(text, add_special_tokens=True).ids == ref.ids
        assert ours.encode_structured(text, add_special_tokens=True, padding=False,
                                      truncation=False).ids == ref.ids  # fmt: skip
    # Plain encode returns the content IDs under any policy.
    assert ours.encode(texts[-1]) == off.encode(texts[-1])


def test_policy_is_identity_and_round_trips(tp: ModuleType, tmp_path: Path) -> None:
    path = _files()["minilm"]
    tok = tp.Tokenizer.load(path)
    off = tok.with_padding(None).with_truncation(None)
    assert tok.semantic_hash != off.semantic_hash
    assert tok.to_config()["truncation"]["max_length"] == 128
    for name, each in (
        ("as-loaded", tok),
        ("off", off),
        ("left", tok.with_padding(tp.Padding(side="left", pad_id=0))),
    ):
        each.save(tmp_path / name)
        back = tp.Tokenizer.load(tmp_path / name)
        assert (back.padding, back.truncation) == (each.padding, each.truncation), name
        assert back.semantic_hash == each.semantic_hash, name


def test_export_writes_the_fields_back(tp: ModuleType, tmp_path: Path) -> None:
    path = _files()["minilm"]
    tok = tp.Tokenizer.load(path)
    source = json.loads(path.read_text(encoding="utf-8"))
    tp.export(tok, "hf", tmp_path / "same.json")
    written = json.loads((tmp_path / "same.json").read_text(encoding="utf-8"))
    assert written["padding"] == source["padding"]
    assert written["truncation"] == source["truncation"]  # kept as the file wrote it
    changed = tok.with_padding(tp.Padding(multiple=8, side="left", pad_id=0))
    changed = changed.with_truncation(tp.Truncation(max_length=64, stride=4))
    changed.export_hf(tmp_path / "changed.json")
    peer = tokenizers.Tokenizer.from_file(str(tmp_path / "changed.json"))
    assert peer.padding["direction"] == "left" and peer.padding["pad_to_multiple_of"] == 8
    assert peer.truncation["max_length"] == 64 and peer.truncation["stride"] == 4
    text = "The cat sleeps on the warm windowsill. " * 30
    assert changed.encode_structured(text, add_special_tokens=True).ids == peer.encode(text).ids
    back = tp.Tokenizer.load(tmp_path / "changed.json")
    assert (back.padding, back.truncation) == (changed.padding, changed.truncation)
    tok.with_padding(None).with_truncation(None).export_hf(tmp_path / "off.json")
    written = json.loads((tmp_path / "off.json").read_text(encoding="utf-8"))
    assert written["padding"] is None and written["truncation"] is None
    with pytest.raises(tp.ArtifactError, match="add_then_truncate"):
        tok.with_truncation(
            tp.Truncation(max_length=8, control_policy="add_then_truncate")
        ).export_hf(tmp_path / "x.json")


@pytest.mark.parametrize(
    "field,value,match",
    [
        (
            "truncation",
            {"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Left"},
            "direction",
        ),  # fmt: skip
        ("truncation", {"max_length": 0, "strategy": "LongestFirst", "stride": 0}, "max_length"),
        ("truncation", {"max_length": 8, "strategy": "Sideways", "stride": 0}, "strategy"),
        ("padding", {"strategy": {"Fixed": -1}, "direction": "Right", "pad_id": 0}, "Fixed"),
        ("padding", {"strategy": "BatchLongest", "direction": "Up", "pad_id": 0}, "direction"),
        ("padding", {"strategy": "BatchLongest", "pad_id": 0, "pad_type_id": 1}, "pad_type_id"),
        ("padding", {"strategy": "BatchLongest", "pad_id": 0, "extra": 1}, "padding"),
    ],
)
def test_fields_tokenpact_cannot_follow_are_refused(
    tp: ModuleType, tmp_path: Path, field: str, value: object, match: str
) -> None:
    document = json.loads(_files()["minilm"].read_text(encoding="utf-8"))
    document[field] = value
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(tp.ArtifactError, match=match):
        tp.Tokenizer.load(path)


def test_tp_load_exposes_the_policy_and_plain_encode_ignores_it(
    tp: ModuleType, texts: list[str]
) -> None:
    """The documented decision: ``tp.load`` of a file with ``padding`` / ``truncation``
    exposes them, ``encode_structured`` follows them, and plain ``encode`` /
    ``encode_batch`` return every content ID (neither padded nor cut) with or without
    ``add_special_tokens``."""
    path = _files()["minilm"]
    tok = tp.load(path)
    assert tok.padding == tp.Padding(length=128, side="right", pad_id=0)
    assert tok.truncation == tp.Truncation(max_length=128)
    off = tok.with_padding(None).with_truncation(None)
    short, long = texts[0], texts[-1]
    for add in (False, True):
        plain = tok.encode_batch([short, long], add_special_tokens=add)
        assert plain == [tok.encode(short, add_special_tokens=add),
                         tok.encode(long, add_special_tokens=add)]  # fmt: skip
        assert plain == off.encode_batch([short, long], add_special_tokens=add)
        assert len(plain[0]) < 128 < len(plain[1])
    assert len(tok.encode_structured(long, add_special_tokens=True).ids) == 128
