"""Hypothesis: the WordPiece engine equals the reference on any word and vocabulary."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

from tokenpact.reference import wordpiece_reference

ALPHABET = "abcé中"
pieces = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


@given(
    initial=st.sets(pieces, max_size=12),
    continuation=st.sets(pieces, max_size=12),
    word=st.text(alphabet=ALPHABET, max_size=14),
    max_chars=st.integers(min_value=1, max_value=16),
)
def test_engine_equals_reference(
    tp: ModuleType,
    tmp_path_factory,
    initial: set[str],
    continuation: set[str],
    word: str,
    max_chars: int,
) -> None:
    tokens = ["[UNK]", *sorted(initial), *sorted("##" + c for c in continuation)]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    data = {
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": max_chars,
            "vocab": vocab,
        },
    }
    path = Path(tmp_path_factory.mktemp("wp")) / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = tp.Tokenizer.load(path)
    enc = tok.encode_structured(word)
    want = wordpiece_reference(word, vocab, unk="[UNK]", max_chars=max_chars)
    assert list(zip(enc.ids, enc.offsets, strict=True)) == [(i, (s, e)) for i, s, e in want]
