"""Batch encoding: many texts on the native engine's threads, the GIL released.

``encode_batch`` and ``encode_batch_flat`` are bound as methods of
:class:`~tokenpact.core.Tokenizer`; each checks the special-token policy of every text
first, and a lone surrogate in any text is one typed error. :func:`batch_call` runs any
batch method of the engine that way (the data layer's digesting encode,
``tokenpact.data.chunk_encoding.encode_flat_digests``, calls it).
``encode_batch_flat_digests`` is a deprecated alias of that function.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._text import _texts_arg, _threads_arg
from ..errors import InvalidInputError
from .special_policy import check_disallowed

if TYPE_CHECKING:
    from .special_policy import SpecialSpec
    from .tokenizer import Tokenizer


def batch_args(
    tok: Tokenizer,
    texts: Iterable[str],
    allowed_special: SpecialSpec,
    disallowed_special: SpecialSpec,
) -> tuple[list[str], Any]:
    items = _texts_arg(texts, "encode_batch")
    allowed, disallowed = tok._policy(allowed_special, disallowed_special)
    try:
        if disallowed is not None:
            for t in items:
                check_disallowed(t, disallowed)
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"a text contains a lone surrogate: {exc}") from None
    return items, allowed


def encode_batch(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    allowed_special: SpecialSpec = (),
    disallowed_special: SpecialSpec = (),
    add_special_tokens: bool = False,
    threads: int | None = None,
    bos: bool | None = None,
    eos: bool | None = None,
) -> list[list[int]]:
    """Encode many texts in parallel (GIL released); same result as ``encode`` each
    (``bos``/``eos``: its explicit boundary flags)."""
    out: list[list[int]] = batch_call(
        tok, tok._core.encode_batch, texts, allowed_special, disallowed_special, threads
    )
    if bos is not None or eos is not None:
        bounded = []
        for ids in out:
            before, after = tok.boundary_ids(
                ids, add_special_tokens=add_special_tokens, bos=bos, eos=eos
            )
            bounded.append([*before, *ids, *after])
        return bounded
    return [tok._post(ids) for ids in out] if add_special_tokens else out


def encode_batch_flat(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    allowed_special: SpecialSpec = (),
    disallowed_special: SpecialSpec = (),
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Encode many texts into flat numpy arrays ``(ids, offsets)``.

    ``ids[offsets[i]:offsets[i + 1]]`` are the IDs of text ``i``; no per-token objects.
    """
    return batch_call(
        tok,
        tok._core.encode_batch_flat,
        texts,
        allowed_special,
        disallowed_special,
        threads,
    )


def encode_batch_flat_digests(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    allowed_special: SpecialSpec = (),
    disallowed_special: SpecialSpec = (),
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Deprecated: ``tokenpact.data.chunk_encoding.encode_flat_digests(tok, texts)``.

    :meth:`encode_batch_flat` plus ``(sha256, sizes)``: the SHA-256 of each text's
    UTF-8 (an ``(n, 32)`` uint8 array) and its UTF-8 size (int64).
    """
    warnings.warn(
        "Tokenizer.encode_batch_flat_digests is deprecated and goes in a later release; "
        "use tokenpact.data.chunk_encoding.encode_flat_digests(tok, texts) (the per-text "
        "digests are a dataset encoder's option)",
        DeprecationWarning,
        stacklevel=2,
    )
    return batch_call(
        tok,
        tok._core.encode_batch_flat_digests,
        texts,
        allowed_special,
        disallowed_special,
        threads,
    )


def batch_call(
    tok: Tokenizer,
    method: Any,
    texts: Iterable[str],
    allowed_special: SpecialSpec,
    disallowed_special: SpecialSpec,
    threads: int | None,
) -> Any:
    """One batch method of the engine on ``texts``; a lone surrogate is a typed error."""
    items, allowed = batch_args(tok, texts, allowed_special, disallowed_special)
    try:
        return method(items, allowed, _threads_arg(threads))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"a text contains a lone surrogate: {exc}") from None
