"""Hypothesis: the HF character-BPE engine equals the reference and ``tokenizers`` on any
small vocabulary, merge list (including two merges that build one piece) and word."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.reference import HfBpeOptions, hf_bpe_reference

ALPHABET = "abé中"
BYTES = [f"<0x{b:02X}>" for b in range(256)]


@st.composite
def models(draw: st.DrawFn) -> tuple[dict[str, int], list[tuple[str, str]], HfBpeOptions]:
    prefix = draw(st.sampled_from([None, "##"]))
    suffix = draw(st.sampled_from([None, "</w>"]))
    o = HfBpeOptions(
        prefix=prefix,
        suffix=suffix,
        unk=draw(st.sampled_from([None, "<unk>"])),
        fuse_unk=draw(st.booleans()),
        byte_fallback=draw(st.booleans()),
        ignore_merges=draw(st.booleans()),
    )
    known = draw(st.sets(st.sampled_from(ALPHABET), min_size=1))
    pieces = ["<unk>", *sorted(known)]
    pieces += [(prefix or "") + c for c in sorted(known)]
    pieces += [c + (suffix or "") for c in sorted(known)]
    pieces += [(prefix or "") + c + (suffix or "") for c in sorted(known)]
    if o.byte_fallback:
        pieces += BYTES
    pieces = list(dict.fromkeys(pieces))
    cut = len(prefix or "")
    merges: list[tuple[str, str]] = []
    candidates = [p for p in pieces if not p.startswith("<")]
    for _ in range(draw(st.integers(0, 12))):
        a = draw(st.sampled_from(candidates))
        # HF cuts the prefix's bytes off the right piece, whatever it starts with.
        b = draw(st.sampled_from([p for p in candidates if _cuttable(p, cut)]))
        joined = a + b.encode("utf-8")[cut:].decode("utf-8")
        if joined not in pieces:
            pieces.append(joined)
            candidates.append(joined)
        merges.append((a, b))
    return {p: i for i, p in enumerate(pieces)}, merges, o


def _cuttable(piece: str, cut: int) -> bool:
    data = piece.encode("utf-8")
    try:
        return len(data) > cut and bool(data[cut:].decode("utf-8"))
    except UnicodeDecodeError:
        return False


def _document(vocab: dict[str, int], merges: list[tuple[str, str]], o: HfBpeOptions) -> dict:
    model: dict[str, Any] = {
        "type": "BPE",
        "dropout": None,
        "unk_token": o.unk,
        "continuing_subword_prefix": o.prefix,
        "end_of_word_suffix": o.suffix,
        "fuse_unk": o.fuse_unk,
        "byte_fallback": o.byte_fallback,
        "ignore_merges": o.ignore_merges,
        "vocab": vocab,
        "merges": [list(m) for m in merges],
    }
    return {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
            "post_processor": None, "decoder": None, "model": model}  # fmt: skip


def _char_spans(word: str, spans: list[tuple[int, int, int]]) -> list[tuple[int, tuple[int, int]]]:
    """Byte offsets (clamped to the word) to codepoint offsets; a token holding part of a
    char covers it."""
    char_of = [i for i, c in enumerate(word) for _ in c.encode("utf-8")]
    n = len(char_of)

    def start(s: int) -> int:
        return char_of[s] if s < n else len(word)

    def end(e: int) -> int:
        return char_of[min(e, n) - 1] + 1 if e > 0 else 0

    return [(t, (start(s), end(e))) for t, s, e in spans]


@settings(max_examples=300, deadline=None)
@given(model=models(), word=st.text(alphabet=ALPHABET + "zü", max_size=10))
def test_engine_equals_reference_and_hf(tp: ModuleType, model, word: str) -> None:
    from tokenpact.formats.hf_json import load_hf_data

    vocab, merges, o = model
    doc = _document(vocab, merges, o)
    tok = load_hf_data(doc)
    enc = tok.encode_structured(word)
    want = hf_bpe_reference(word, vocab, merges, o)
    assert list(zip(enc.ids, enc.offsets, strict=True)) == _char_spans(word, want)
    tokenizers = pytest.importorskip("tokenizers")
    peer = tokenizers.Tokenizer.from_str(json.dumps(doc))
    ref = peer.encode(word)
    assert enc.ids == ref.ids
    if not (o.byte_fallback and (o.prefix or o.suffix)):  # HF's spans can pass the word
        assert enc.offsets == [tuple(x) for x in ref.offsets]
