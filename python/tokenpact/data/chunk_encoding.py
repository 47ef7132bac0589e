"""Encoding one chunk of a shard's documents: the unit of work of every chunk source.

:func:`encode_chunk` turns consecutive documents of one shard into an
:class:`~tokenpact.data.shard_writer.EncodedChunk` in the dataset's dtype (truncated,
with the boundary tokens the options ask for). The local source runs it on a thread
pool, the Ray source in Ray's worker processes, so both give the same bytes.

With ``digests`` (and no special tokens added) each text is also hashed (SHA-256 of
its UTF-8, and its UTF-8 size) by the engine worker that encodes it, while it is in
cache: the corpus manifest is then built from the digests without reading the texts
again. That is a call of the native engine's ``encode_batch_flat_digests`` under the
tokenizer's special-token policy (:func:`encode_flat_digests`).

This module is what a Ray worker imports: numpy, the tokenizer's batch encoding and
nothing else of the data package.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ContractError, InvalidInputError
from .shard_writer import CHUNK_CHARS, EncodedChunk

if TYPE_CHECKING:
    from ..core import SpecialSpec, Tokenizer

FlatDigests = tuple[NDArray[Any], NDArray[np.int64], NDArray[np.uint8], NDArray[np.int64]]


@dataclass(frozen=True)
class EncodeOptions:
    """What every worker needs to encode a shard identically."""

    format: str
    dtype: str
    tokenizer_hash: str
    template_hash: str
    add_special_tokens: bool = False
    max_length: int | None = None
    threads: int | None = None
    compression: str = "none"
    chunk_chars: int = CHUNK_CHARS
    bos_id: int | None = None
    eod_id: int | None = None
    allowed_special: tuple[str, ...] = ()

    def metadata(self) -> dict[str, str]:
        return {
            "tokenpact.tokenizer_hash": self.tokenizer_hash,
            "tokenpact.template_hash": self.template_hash,
        }

    @property
    def digests_possible(self) -> bool:
        """Whether the encoder can hash the texts while encoding them: the engine's
        digest call encodes without the post-processor's special tokens."""
        return not self.add_special_tokens


def encode_flat_digests(
    tok: Tokenizer,
    texts: list[str],
    *,
    allowed_special: SpecialSpec = (),
    threads: int | None = None,
) -> FlatDigests:
    """``tok.encode_batch_flat(texts)`` plus, per text, the SHA-256 of its UTF-8 (an
    ``(n, 32)`` uint8 array) and its UTF-8 size (int64), hashed by the engine worker
    that encodes the text right after encoding it."""
    out: FlatDigests = tok.batch_call(
        tok.engine.encode_batch_flat_digests,
        texts,
        allowed_special=allowed_special,
        threads=threads,
    )
    return out


def _encode_flat(
    tok: Tokenizer, texts: list[str], opts: EncodeOptions, digests: bool
) -> tuple[Any, Any, Any, Any]:
    allowed = opts.allowed_special
    if digests and opts.digests_possible:
        return encode_flat_digests(tok, texts, allowed_special=allowed, threads=opts.threads)
    if opts.add_special_tokens:
        lists = tok.encode_batch(
            texts, allowed_special=allowed, add_special_tokens=True, threads=opts.threads
        )
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=offsets[1:])
        ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(offsets[-1]))
        return ids, offsets, None, None
    ids, offsets = tok.encode_batch_flat(texts, allowed_special=allowed, threads=opts.threads)
    return ids, np.asarray(offsets, dtype=np.int64), None, None


def _add_boundaries(ids: Any, offsets: Any, bos: int | None, eod: int | None) -> tuple[Any, Any]:
    """Each record with ``bos`` before it and ``eod`` after it (either may be ``None``),
    as Megatron's preprocessing appends EOD: one flat gather, no per-record Python."""
    lengths = np.diff(offsets)
    extra = (bos is not None) + (eod is not None)
    if not extra or not lengths.size:
        return ids, offsets
    new_lengths = lengths + extra
    new_offsets = np.zeros_like(offsets)
    np.cumsum(new_lengths, out=new_offsets[1:])
    out = np.empty(int(new_offsets[-1]), dtype=ids.dtype)
    body = np.ones(out.shape[0], dtype=bool)
    if bos is not None:
        out[new_offsets[:-1]] = bos
        body[new_offsets[:-1]] = False
    if eod is not None:
        out[new_offsets[1:] - 1] = eod
        body[new_offsets[1:] - 1] = False
    out[body] = ids
    return out, new_offsets


def _truncate(ids: Any, offsets: Any, max_length: int | None) -> tuple[Any, Any, Any]:
    lengths = np.diff(offsets)
    if max_length is None or not lengths.size or int(lengths.max()) <= max_length:
        return ids, offsets, np.zeros(lengths.shape[0], dtype=bool)
    kept = np.minimum(lengths, max_length)
    starts = offsets[:-1]
    new_offsets = np.zeros_like(offsets)
    np.cumsum(kept, out=new_offsets[1:])
    gather = np.repeat(starts - new_offsets[:-1], kept) + np.arange(int(new_offsets[-1]))
    return ids[gather], new_offsets, lengths > max_length


def encode_chunk(
    tok: Tokenizer, texts: list[str], opts: EncodeOptions, *, shard: int, digests: bool = False
) -> EncodedChunk:
    """Encode consecutive documents of shard ``shard`` into the dataset's dtype; with
    ``digests`` (and no special tokens added), also hash each text for the corpus
    manifest while the encoder has it in cache."""
    try:
        ids, offsets, text_digests, text_sizes = _encode_flat(tok, texts, opts, digests)
    except (UnicodeEncodeError, InvalidInputError) as exc:
        raise InvalidInputError(
            f"a document in shard {shard} is not valid Unicode: {exc}"
        ) from None
    extra = (opts.bos_id is not None) + (opts.eod_id is not None)
    # The boundary tokens survive truncation: the text is cut to leave room for them.
    limit = None if opts.max_length is None else max(opts.max_length - extra, 0)
    ids, offsets, truncated = _truncate(ids, offsets, limit)
    ids, offsets = _add_boundaries(ids, offsets, opts.bos_id, opts.eod_id)
    dtype = np.dtype(opts.dtype)
    top = int(ids.max()) if ids.size else None
    if top is not None and top > np.iinfo(dtype).max:
        raise ContractError(f"token ID {top} does not fit the dataset's {dtype} IDs")
    return EncodedChunk(
        ids.astype(dtype, copy=False), offsets, truncated, top, text_digests, text_sizes
    )
