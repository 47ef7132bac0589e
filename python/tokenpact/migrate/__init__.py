"""Vocabulary migration: append-only extension, transition diffs, checkpoint resizing
and release bundles.

Example::

    new = tp.migrate.extend_bpe(tok, texts, add_merges=500)
    report = tp.migrate.diff(tok, new, corpus)
    tp.migrate.resize_checkpoint("ckpt", "ckpt-new", tok, new, init="fvt")
"""

from __future__ import annotations

from . import caches, release
from .adapters import resize_adapter
from .decompose import decompositions, id_space, prefix_problems
from .diff import TRANSITIONS, TransitionReport, diff
from .extend import add_tokens, build_extended, extend_bpe, extend_merges, extend_vocab
from .reference import extend_merges_reference
from .remap import (
    IdRemap,
    id_remap,
    remap_checkpoint,
    reshard_flat_state,
    shard_moves,
    vocab_shards,
)
from .resize import ResizePlan, plan_resize, resize_checkpoint
from .row_init import POLICIES as INIT_POLICIES

__all__ = [
    "IdRemap",
    "id_remap",
    "remap_checkpoint",
    "reshard_flat_state",
    "shard_moves",
    "vocab_shards",
    "TRANSITIONS",
    "TransitionReport",
    "diff",
    "INIT_POLICIES",
    "ResizePlan",
    "caches",
    "decompositions",
    "plan_resize",
    "prefix_problems",
    "release",
    "resize_adapter",
    "resize_checkpoint",
    "add_tokens",
    "build_extended",
    "extend_bpe",
    "extend_merges",
    "extend_merges_reference",
    "extend_vocab",
    "id_space",
]
