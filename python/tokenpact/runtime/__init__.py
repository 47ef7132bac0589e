"""Serving runtime: exact streaming encode, incremental decode, stop
handling and prefix-cache keys, on a :class:`tokenpact.Tokenizer`."""

from __future__ import annotations

from .cache_keys import BlockKeys, CacheNamespace, block_keys, vllm_block_hashes, vllm_none_hash
from .decode import IncrementalDecoder
from .output import OutputDelta, OutputStream
from .request import CompiledRequest, compile_request
from .stops import StopPolicy
from .stream_encode import StreamingEncoder

__all__ = [
    "BlockKeys",
    "CacheNamespace",
    "CompiledRequest",
    "IncrementalDecoder",
    "OutputDelta",
    "OutputStream",
    "StopPolicy",
    "StreamingEncoder",
    "block_keys",
    "compile_request",
    "vllm_block_hashes",
    "vllm_none_hash",
]
