"""Serving runtime (seed 000 0x0D): exact streaming encode, incremental decode, stop
handling and prefix-cache keys, on a :class:`tokenpact.Tokenizer`."""

from __future__ import annotations

from .decode import IncrementalDecoder

__all__ = ["IncrementalDecoder"]
