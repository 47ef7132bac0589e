"""The ``Engine`` protocol, its declared capabilities, and ``build_engine(spec)``.

An engine is the native object that encodes and decodes (``tokenpact._native``). Every
engine offers the methods of :class:`Engine`; what only some offer is declared as an
:class:`Capability` by the spec's model kind, so the Tokenizer asks the spec, never
``hasattr`` on the engine. ``build_engine`` is the one place a spec becomes an engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from .. import _native
from ..errors import ArtifactError
from .models import ModelKind
from .spec import TokenizerSpec

if TYPE_CHECKING:
    import numpy as np


class Capability(Enum):
    """What an engine offers beyond :class:`Engine`."""

    #: ``encode_offsets_lists``: IDs and offsets as Python lists (no numpy round trip).
    OFFSET_LISTS = "offset_lists"
    #: ``piece_strs``: the piece text of many IDs in one call.
    PIECE_STRINGS = "piece_strings"
    #: ``merge_result``: the ID a merge of two IDs creates.
    MERGE_TABLE = "merge_table"
    #: ``core_pretokenize``: the engine's own pre-tokenizer chain can be traced.
    PRETOKENIZE = "pretokenize"
    #: the engine's normalizer serves added tokens with ``normalized=True``.
    ADDED_TOKEN_NORMALIZER = "added_token_normalizer"
    #: ``decode_text``: the model's own rule for ill-formed bytes (one U+FFFD per byte).
    TEXT_DECODE = "text_decode"
    #: ``normalize``: the model's own normalizer as a method of the engine.
    NORMALIZE = "normalize"


_BPE_ENGINE = frozenset(
    {
        Capability.OFFSET_LISTS,
        Capability.PIECE_STRINGS,
        Capability.MERGE_TABLE,
        Capability.PRETOKENIZE,
        Capability.ADDED_TOKEN_NORMALIZER,
    }
)
_SENTENCEPIECE_ENGINE = frozenset({Capability.TEXT_DECODE, Capability.NORMALIZE})

CAPABILITIES: dict[ModelKind, frozenset[Capability]] = {
    ModelKind.MERGE_RANKS: _BPE_ENGINE,
    ModelKind.MERGE_RECORDS: _BPE_ENGINE,
    ModelKind.TIKTOKEN_RANKS: _BPE_ENGINE,
    ModelKind.HF_PIPELINE: _BPE_ENGINE,
    ModelKind.SENTENCEPIECE: _SENTENCEPIECE_ENGINE,
}


def capabilities(spec: TokenizerSpec) -> frozenset[Capability]:
    """The capabilities of the engine ``build_engine(spec)`` returns."""
    return CAPABILITIES[spec.kind]


class Engine(Protocol):
    """What every native engine offers (``BpeCore``, ``SentencePieceCore``)."""

    def encode(self, text: str, allowed: Any = None) -> list[int]: ...
    def encode_batch(
        self, texts: list[str], allowed: Any = None, threads: int | None = None
    ) -> list[list[int]]: ...
    def encode_batch_flat(
        self, texts: list[str], allowed: Any = None, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def encode_batch_flat_digests(
        self, texts: list[str], allowed: Any = None, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def encode_with_offsets(
        self, text: str, allowed: Any = None, untrusted: list[tuple[int, int]] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def decode_bytes(self, ids: np.ndarray) -> bytes: ...
    def token_bytes(self, id: int) -> bytes | None: ...
    def model_size(self) -> int: ...
    def merges(self) -> list[tuple[int, int]]: ...
    def vocab(self) -> list[bytes]: ...


def build_engine(spec: TokenizerSpec, *, label: str | None = None) -> Any:
    """The native engine that runs ``spec``; ``label`` names the origin in errors."""
    model = spec.model
    try:
        if spec.stages is not None:
            # The pipeline engine: normalizer, any pre-tokenizer chain, any HF model.
            records: Sequence[tuple[int, int, int]] = getattr(model, "records", ())
            pieces = getattr(model, "pieces", None)
            return _native.pipeline_core(
                json.dumps(spec.stages.engine_document()),
                list(pieces) if pieces is not None else model.vocab(spec),
                list(records),
                spec.engine_specials(),
                spec.engine_steps() or [],
                controls=spec.control_ids(),
            )
        return model.engine(spec)
    except ArtifactError as exc:
        if label is None:
            raise
        raise ArtifactError(f"{label}: {exc}") from None
