"""Serving runtime (seed 000 0x0D): exact streaming encode, incremental decode, stop
handling and prefix-cache keys, on a :class:`tokenpact.Tokenizer`."""

from __future__ import annotations

from .decode import IncrementalDecoder
from .output import OutputDelta, OutputStream
from .stops import StopPolicy

__all__ = ["IncrementalDecoder", "OutputDelta", "OutputStream", "StopPolicy"]
