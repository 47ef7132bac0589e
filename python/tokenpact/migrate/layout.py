"""The canonical layout of a byte-level BPE tokenizer: what extension continues from.

Training works in *canonical* IDs: bytes are 0..255 by value and merge ``r`` creates
``256 + r`` (the layout ``train_bpe`` produces). A tokenizer loaded from a
``tokenizer.json`` may number its pieces differently (GPT-2 permutes the bytes); this
module maps between its IDs and the canonical ones, so extension works on any byte-level
BPE and the tie-break (smallest canonical pair) is the one ``train_bpe`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import ModelKind, Tokenizer
from ..errors import ConfigError


@dataclass(frozen=True)
class CanonicalLayout:
    """``to_id[c]`` is the tokenizer ID of canonical ID ``c``; ``merges`` are canonical."""

    to_id: list[int]
    pieces: list[bytes]
    merges: list[tuple[int, int]]


def check_extensible(tok: Tokenizer) -> None:
    """Raise ConfigError unless ``tok`` is a byte-level BPE whose pre-tokens one regex makes."""
    # tiktoken ranks are byte-level but have no merge rules for the trainer to continue.
    if not tok.spec.kind.byte_level or tok.spec.kind is ModelKind.TIKTOKEN_RANKS:
        raise ConfigError(
            f"extend_bpe needs a byte-level BPE tokenizer; this one has {tok.semantics} "
            "semantics (use add_tokens(), or extend_vocab() for WordPiece/Unigram)"
        )
    if tok.spec.kind is ModelKind.MERGE_RANKS:
        return  # built from merges: one regex, no normalizer, by construction
    config = tok.to_config()
    if config.get("normalizer") is not None or config["pre_tokenizer"].get("type") != (
        "regex_split"
    ):
        raise ConfigError(
            "extend_bpe continues training on regex pre-tokens; this tokenizer has a "
            "normalizer or a multi-step pre-tokenizer, which the trainer cannot replay. "
            "Add pieces with add_tokens() instead"
        )


def canonical_layout(tok: Tokenizer) -> CanonicalLayout:
    """Map ``tok``'s IDs onto the canonical layout (bytes by value, merges by rank)."""
    vocab = tok.vocab()
    if tok.spec.kind is ModelKind.MERGE_RANKS:
        # train_bpe / from_merges layout: byte b is ID b, merge r creates 256 + r.
        ranked = [(int(a), int(b)) for a, b in tok.merges]
        size = 256 + len(ranked)
        return CanonicalLayout(to_id=list(range(size)), pieces=vocab[:size], merges=ranked)
    index: dict[bytes, int] = {}
    for i, piece in enumerate(vocab):
        index.setdefault(piece, i)
    to_id: list[int] = []
    pieces: list[bytes] = []
    for b in range(256):
        piece = bytes([b])
        if piece not in index:
            raise ConfigError(f"byte 0x{b:02x} has no token; extend_bpe needs all 256 bytes")
        to_id.append(index[piece])
        pieces.append(piece)
    canon_of = {tid: c for c, tid in enumerate(to_id)}
    merges: list[tuple[int, int]] = []
    for rank, (left, right) in enumerate(tok.merges):
        if left not in canon_of or right not in canon_of:
            raise ConfigError(
                f"merge rank {rank} uses a piece that a later merge creates; extend_bpe needs "
                "merges in creation order (every train_bpe/tokenizers-trained file has them)"
            )
        piece = vocab[left] + vocab[right]
        merged = index.get(piece)
        if merged is None:
            raise ConfigError(f"merge rank {rank} creates {piece!r}, which is not in the vocab")
        merges.append((canon_of[left], canon_of[right]))
        canon_of.setdefault(merged, len(to_id))
        to_id.append(merged)
        pieces.append(piece)
    return CanonicalLayout(to_id=to_id, pieces=pieces, merges=merges)
