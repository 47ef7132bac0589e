"""A Hugging Face ``tokenizer.json`` for a SentencePiece Unigram tokenizer.

Covers the models ``train_unigram`` writes (and any Unigram ``.model`` of the same
shape): optional normalization rules (a precompiled charsmap), optional whitespace
cleanup, the dummy prefix, spaces escaped to ``▁``. Hugging Face spells that as a
normalizer (``Precompiled``, regex replacements for the whitespace cleanup, prepend
``▁``, replace spaces by ``▁``; no pre-tokenizer: SentencePiece's lattice spans the
whole text) and a
``Unigram`` model with every piece and its score; the decoder turns ``▁`` back into
spaces, byte pieces into bytes, and drops the dummy prefix. CONTROL and UNKNOWN pieces
are special added tokens (so Hugging Face's decode skips the unknown piece where
SentencePiece writes `` ⁇ ``). Other models raise ArtifactError naming the field.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_text
from ..errors import ArtifactError
from . import hf_policy
from .sentencepiece_model import BYTE, CONTROL, UNKNOWN, NormalizerSpec

if TYPE_CHECKING:
    from ..core import Tokenizer

METASPACE = "\u2581"


def unigram_tokenizer_json(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document for a SentencePiece Unigram tokenizer."""
    model = tok.spec.sentencepiece_model
    if model is None:
        raise ArtifactError("this tokenizer was not built from a SentencePiece model")
    ts, ns = model.trainer_spec, model.normalizer_spec
    problems = {
        "trainer_spec.model_type": ts.model_type != "unigram",
        "normalizer_spec.add_dummy_prefix": not ns.add_dummy_prefix,
        "normalizer_spec.escape_whitespaces": not ns.escape_whitespaces,
        "trainer_spec.treat_whitespace_as_suffix": ts.treat_whitespace_as_suffix,
    }
    bad = [name for name, failed in problems.items() if failed]
    if bad:
        raise ArtifactError(
            f"{model.path}: {bad[0]}: only Unigram models with the dummy prefix and escaped "
            "whitespace (what train_unigram writes) export to tokenizer.json; keep the "
            ".model (export_sentencepiece)"
        )
    unk = next(i for i, p in enumerate(model.pieces) if p.type == UNKNOWN)
    added = [
        {
            "id": i,
            "content": p.piece,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, p in enumerate(model.pieces)
        if p.type in (CONTROL, UNKNOWN)
    ]
    decoders: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "}
    ]
    if ts.byte_fallback:
        decoders.append({"type": "ByteFallback"})
    decoders += [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        # Not the Metaspace pre-tokenizer: it skips the prefix when the text already
        # starts with a space, where SentencePiece adds it anyway. Prepend leaves an
        # empty text empty, as SentencePiece does.
        "normalizer": {"type": "Sequence", "normalizers": _normalizers(ns)},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "Unigram",
            "unk_id": unk,
            "vocab": [
                [p.piece, 0.0 if p.type in (CONTROL, UNKNOWN, BYTE) else p.score]
                for p in model.pieces
            ],
            "byte_fallback": ts.byte_fallback,
        },
    }


def _normalizers(ns: NormalizerSpec) -> list[dict[str, Any]]:
    """SentencePiece's normalizer as Hugging Face nodes: the rules (``Precompiled``, the
    same charsmap), then the whitespace cleanup (SentencePiece strips and collapses only
    U+0020, after the rules: regex replacements on " ", anchored with ``\\A``/``\\z``
    because ``^``/``$`` match at every line in Oniguruma; ``Strip`` would remove every
    kind of whitespace), the dummy prefix and the escaped spaces."""
    nodes: list[dict[str, Any]] = []
    if ns.precompiled_charsmap:
        charsmap = base64.b64encode(ns.precompiled_charsmap).decode("ascii")
        nodes.append({"type": "Precompiled", "precompiled_charsmap": charsmap})
    if ns.remove_extra_whitespaces:
        nodes += [
            {"type": "Replace", "pattern": {"Regex": "\\A +| +\\z"}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]
    return nodes + [
        {"type": "Prepend", "prepend": METASPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE},
    ]


def export_unigram_hf(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write :func:`unigram_tokenizer_json` atomically; a directory gets ``tokenizer.json``."""
    target = Path(path)
    if target.is_dir() or target.suffix != ".json":
        target = target / "tokenizer.json"
    document = hf_policy.with_policy(unigram_tokenizer_json(tok), tok)
    atomic_write_text(target, json.dumps(document, ensure_ascii=False) + "\n")
    return target
