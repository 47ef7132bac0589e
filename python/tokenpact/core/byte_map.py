"""GPT-2's reversible byte-to-unicode map: how byte-level BPE spells a byte piece as a
Hugging Face token string (``b" the"`` is ``"Ġthe"``).

The table has one owner, the Rust one that decodes byte-level vocabularies
(``src/bpe/hf.rs``, exposed as ``_native.gpt2_byte_alphabet``); Python reads it once."""

from __future__ import annotations

from functools import lru_cache

from .. import _native


@lru_cache(maxsize=1)
def byte_encoder() -> dict[int, str]:
    """GPT-2's ``bytes_to_unicode``: the character that spells each byte."""
    return dict(enumerate(_native.gpt2_byte_alphabet()))


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's reversible map from printable unicode characters back to bytes."""
    return {c: b for b, c in byte_encoder().items()}
