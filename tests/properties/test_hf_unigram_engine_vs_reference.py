"""Hypothesis: the HF Unigram engine equals the reference on any word and vocabulary.

Scores come from a small grid so that equally good segmentations (ties) are common:
the engine must break them exactly as ``tokenizers`` does (first candidate wins).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

from tokenpact.reference import hf_unigram_reference

try:
    import tokenizers
except ImportError:  # the peer is optional here; the engine-vs-reference check still runs
    tokenizers = None

ALPHABET = "abé中🙂"
pieces = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
scores = st.sampled_from([-0.5, -1.0, -1.5, -2.0, -3.0, -0.25])


@given(
    vocab=st.dictionaries(pieces, scores, max_size=14),
    word=st.text(alphabet=ALPHABET + "x", max_size=16),
    byte_fallback=st.booleans(),
    bytes_known=st.sets(st.sampled_from([0xC3, 0xA9, 0x78, 0xF0, 0x9F]), max_size=5),
)
def test_engine_equals_reference(
    tp: ModuleType,
    tmp_path_factory,
    vocab: dict[str, float],
    word: str,
    byte_fallback: bool,
    bytes_known: set[int],
) -> None:
    entries = [("<unk>", 0.0), *sorted(vocab.items())]
    entries += [(f"<0x{b:02X}>", -4.0) for b in sorted(bytes_known)]
    data = {
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "Unigram",
            "unk_id": 0,
            "byte_fallback": byte_fallback,
            "vocab": [list(e) for e in entries],
        },
    }
    path = Path(tmp_path_factory.mktemp("ug")) / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = tp.Tokenizer.load(path)
    enc = tok.encode_structured(word)
    want = hf_unigram_reference(word, entries, unk_id=0, byte_fallback=byte_fallback)
    assert list(zip(enc.ids, enc.offsets, strict=True)) == [(i, (s, e)) for i, s, e in want]
    if tokenizers is not None:  # the reference itself follows the peer
        ref = tokenizers.Tokenizer.from_file(str(path)).encode(word)
        assert [(i, tuple(o)) for i, o in zip(ref.ids, ref.offsets, strict=True)] == [
            (i, (s, e)) for i, s, e in want
        ]
