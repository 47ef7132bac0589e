"""Token ID arguments and decoded bytes: validation with errors that name the fix.

:class:`~tokenpact.core.Tokenizer` binds :func:`id_array` as its ``_ids`` method; every
decode path validates its IDs here once, vectorized.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DecodeError, UnknownTokenError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


def id_array(tok: Tokenizer, ids: Iterable[int]) -> np.ndarray:
    """Validated IDs as a contiguous uint32 array (vectorized: no per-ID Python loop)."""
    if isinstance(ids, str | bytes):
        raise UnknownTokenError("token IDs must be a sequence of ints, not a string")
    try:
        arr = ids if isinstance(ids, np.ndarray) else np.asarray(list(ids))
    except (TypeError, ValueError):
        raise UnknownTokenError("token IDs must be a flat sequence of ints") from None
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if arr.ndim == 1 and arr.dtype == object:
        # Ints too large for int64 (numpy falls back to objects): out of range.
        items = arr.tolist()
        if all(isinstance(i, int) and not isinstance(i, bool) for i in items):
            far = max(items, key=abs)
            raise UnknownTokenError(
                f"{far} is not a token ID of this tokenizer (IDs are 0..{tok.vocab_size - 1})"
            )
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        bad = next((i for i in arr.ravel().tolist() if not isinstance(i, int)), arr.dtype)
        raise UnknownTokenError(f"token IDs must be a flat sequence of ints; got {bad!r}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= 2**32:
        raise UnknownTokenError(
            f"{lo if lo < 0 else hi} is not a token ID of this tokenizer "
            f"(IDs are 0..{tok.vocab_size - 1})"
        )
    return np.ascontiguousarray(arr, dtype=np.uint32)


def utf8_error(data: bytes, exc: UnicodeDecodeError) -> DecodeError:
    """The error for decoded bytes that are not valid UTF-8: which bytes, and the fix."""
    return DecodeError(
        f"the IDs decode to bytes that are not valid UTF-8 (bytes {exc.start}..{exc.end}: "
        f"{data[exc.start : exc.end]!r}); a token boundary may split a character. Decode "
        "more IDs together, use errors='replace' for display, or decode_bytes() for "
        "the raw bytes."
    )
