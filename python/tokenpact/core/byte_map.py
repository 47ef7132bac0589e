"""GPT-2's reversible byte-to-unicode map: how byte-level BPE spells a byte piece as a
Hugging Face token string (``b" the"`` is ``"Ġthe"``)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's reversible map from printable unicode characters back to bytes."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


@lru_cache(maxsize=1)
def byte_encoder() -> dict[int, str]:
    """GPT-2's map from each byte to its printable unicode character."""
    return {b: c for c, b in byte_decoder().items()}
