"""The ``Engine`` protocol, its capabilities, and ``build_engine(spec)``.

An engine is the native object that encodes and decodes (``tokenpact._native``). Every
engine offers the methods of :class:`Engine`; what only some offer is a
:class:`Capability` the engine itself declares (``engine.capabilities``), so the
Tokenizer asks the engine's declaration, never ``hasattr``. The enum is the Rust
crate's (``src/engine.rs``): one member per native name, checked against
``_native.capability_names()`` when this module is imported. ``build_engine`` is the one
place a spec becomes an engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from .. import _native
from ..errors import ArtifactError
from .spec import TokenizerSpec

if TYPE_CHECKING:
    import numpy as np


class Capability(str, Enum):
    """What an engine offers beyond :class:`Engine` (the Rust ``engine::Capability``).

    A member equals its native name (``Capability.MERGES == "merges"``), so a set of
    members and the engine's set of names answer the same membership questions."""

    #: byte offsets of every token (``encode_with_offsets``, ``encode_offsets_lists``).
    OFFSETS = "offsets"
    #: untrusted ranges whose special spellings stay plain text.
    UNTRUSTED_SPANS = "untrusted_spans"
    #: Hugging Face's added-token flags; the engine's normalizer serves added tokens
    #: with ``normalized=True``.
    ADDED_TOKEN_FLAGS = "added_token_flags"
    #: pieces missing from the vocabulary become ``<0xXX>`` byte pieces.
    BYTE_FALLBACK = "byte_fallback"
    #: merge-ranked BPE over bytes: ``merges`` and ``merge_result`` describe the model.
    MERGES = "merges"
    #: ``core_pretokenize``: the engine's own pre-tokenizer chain can be traced.
    PRETOKENIZE = "pretokenize"
    #: ``normalize``: the model's own normalizer as a method of the engine.
    NORMALIZE = "normalize"
    #: ``decode_text``: SentencePiece's rule for ill-formed bytes (one U+FFFD per byte).
    SENTENCEPIECE_DECODE = "sentencepiece_decode"
    #: token-by-token decoding with the batch decoder's result.
    INCREMENTAL_DECODE = "incremental_decode"
    #: the native streaming encoder cuts at final pre-tokens.
    STREAMING_ENCODE_PRETOKENS = "streaming_encode_pretokens"
    #: the native streaming encoder cuts a SentencePiece sentence before a space.
    STREAMING_ENCODE_SENTENCEPIECE = "streaming_encode_sentencepiece"
    #: ``nbest``: the n most probable segmentations (every Unigram model).
    NBEST = "nbest"
    #: ``sample``: a segmentation drawn from P(z)^alpha (every Unigram model).
    SAMPLE = "sample"
    #: ``log_likelihood``: log P(text) over all segmentations (every Unigram model).
    LOG_LIKELIHOOD = "log_likelihood"

    # Deprecated names (aliases of the members above; they go in a later release).
    OFFSET_LISTS = "offsets"
    MERGE_TABLE = "merges"
    ADDED_TOKEN_NORMALIZER = "added_token_flags"
    TEXT_DECODE = "sentencepiece_decode"


def _check_native_names() -> None:
    native = list(_native.capability_names())
    ours = [c.value for c in Capability]
    if ours != native:
        raise ImportError(
            f"tokenpact's Capability enum lists {ours} but the native module declares "
            f"{native}: the native module is from another build; reinstall tokenpact"
        )


_check_native_names()


def capabilities(engine: Any) -> frozenset[Capability]:
    """The capabilities ``engine`` declares (its ``capabilities``, a set of names). A
    :class:`~tokenpact.core.TokenizerSpec` is accepted for the old signature and answers
    for the engine :func:`build_engine` makes of it."""
    if isinstance(engine, TokenizerSpec):
        engine = build_engine(engine)
    names: Iterable[str] = getattr(engine, "capabilities", ())
    return frozenset(Capability(name) for name in names)


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
        document = spec.engine_document()
        if document is not None:
            # The pipeline engine: normalizer, any pre-tokenizer chain, any HF model. Its
            # document is the typed stages' to_config(), serialized once per engine.
            records: Sequence[tuple[int, int, int]] = getattr(model, "records", ())
            pieces = getattr(model, "pieces", None)
            return _native.pipeline_core(
                json.dumps(document),
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
