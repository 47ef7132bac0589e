"""Write a Hugging Face ``tokenizer.json`` that `tokenizers` loads with identical IDs.

Our ranked-merge BPE maps onto HF's model exactly: a ``Split`` pre-tokenizer with the
pattern (``Isolated``), ``ByteLevel`` without its own regex, a ``BPE`` model whose merge
list is our rank order over the GPT-2 byte alphabet, and special tokens as added tokens.
Two things cannot be expressed and raise ArtifactError: tiktoken rank semantics (HF applies
a merge list, tiktoken merges any pair whose bytes have a rank) and two IDs with the same
bytes (HF's vocabulary is keyed by string).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_text
from ..errors import ArtifactError
from . import hf_policy
from .hf_json import byte_encoder
from .sentencepiece_hf import export_unigram_hf

if TYPE_CHECKING:
    from ..core import Tokenizer


# Oniguruma (Hugging Face's regex engine, Ruby syntax) reads "{1,3}+" as "({1,3})+", a
# repeated interval, not a possessive one as Python's `regex` and tiktoken do.
_POSSESSIVE_INTERVAL = re.compile(r"(\{\d+(?:,\d*)?\})\+")


def onig_pattern(tok: Tokenizer) -> str:
    """The pre-tokenizer regex written so that Oniguruma splits exactly as we do.

    In the named patterns a possessive interval ends its alternative, so the greedy
    interval matches the same text; for a user pattern that is not guaranteed.
    """
    if not _POSSESSIVE_INTERVAL.search(tok.pattern):
        return tok.pattern
    if tok.pattern_name is None:
        raise ArtifactError(
            "the pre-tokenizer pattern uses a possessive interval like {1,3}+, which Hugging "
            "Face's regex engine reads differently; rewrite it without the possessive '+'"
        )
    return _POSSESSIVE_INTERVAL.sub(r"\1", tok.pattern)


def _mapped(piece: bytes) -> str:
    enc = byte_encoder()
    return "".join(enc[b] for b in piece)


def _template(tok: Tokenizer) -> dict[str, Any] | None:
    post = tok.post_processor
    if post is None:
        return None
    if post.get("type") == "prepend_bos":
        bos = post["token"]
        single = [
            {"SpecialToken": {"id": bos, "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ]
        pair = [*single, {"Sequence": {"id": "B", "type_id": 1}}]
        spellings = [bos]
    elif post.get("type") == "template":

        def items(seq: list[list[Any]]) -> list[dict[str, Any]]:
            return [
                {"SpecialToken": {"id": v, "type_id": t}}
                if k == "special"
                else {"Sequence": {"id": v, "type_id": t}}
                for k, v, t in seq
            ]

        single, pair = items(post["single"]), items(post["pair"])
        spellings = sorted({v for k, v, _ in [*post["single"], *post["pair"]] if k == "special"})
    else:
        raise ArtifactError(f"cannot export post-processor {post.get('type')!r} to tokenizer.json")
    ids = tok.special_tokens
    return {
        "type": "TemplateProcessing",
        "single": single,
        "pair": pair,
        "special_tokens": {s: {"id": s, "ids": [ids[s]], "tokens": [s]} for s in spellings},
    }


def hf_tokenizer_json(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document for ``tok``."""
    raw = tok.provenance.files.get("tokenizer.json")
    if raw is not None:
        # Built from a tokenizer.json: that document, as loaded, with the tokenizer's
        # padding and truncation policy (the file's own unless changed since).
        return hf_policy.with_policy(json.loads(raw.decode("utf-8")), tok)
    if tok.spec.merge_ranks is None:
        raise ArtifactError(
            f"a {tok.spec.kind} tokenizer cannot be written as tokenizer.json: Hugging Face "
            "applies an ordered merge list, which differs from tiktoken's rank rule; export "
            "it with export_tiktoken() instead"
        )
    pieces = tok.vocab()
    merges = [(pieces[a], pieces[b]) for a, b in tok.merges]
    document = byte_level_document(tok, pieces, merges, post_processor=_template(tok))
    return hf_policy.with_policy(document, tok)


_BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": False,
    "use_regex": False,
}


def byte_level_document(
    tok: Tokenizer,
    pieces: list[bytes],
    merges: list[tuple[bytes, bytes]],
    *,
    post_processor: dict[str, Any] | None,
    ignore_merges: bool = False,
) -> dict[str, Any]:
    """A byte-level BPE ``tokenizer.json``: ``pieces[i]`` is ID ``i``, merges in rank order.

    Shared by every byte-level exporter (ranked/record BPE here, Tekken in ``tekken.py``);
    specials are ``tok.special_tokens``, the Split regex is :func:`onig_pattern`.
    """
    vocab: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        key = _mapped(piece)
        if key in vocab:
            raise ArtifactError(
                f"IDs {vocab[key]} and {i} have the same bytes {piece!r}; tokenizer.json keys "
                "its vocabulary by piece, so this tokenizer cannot be exported exactly"
            )
        vocab[key] = i
    added = [
        {
            "id": i,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for content, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    ]
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": onig_pattern(tok)},
                    "behavior": "Isolated",
                    "invert": False,
                },
                dict(_BYTE_LEVEL),
            ],
        },
        "post_processor": post_processor,
        "decoder": dict(_BYTE_LEVEL),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": [[_mapped(a), _mapped(b)] for a, b in merges],
        },
    }
    pin_inner_added_tokens(document)
    return document


def pin_inner_added_tokens(document: dict[str, Any]) -> None:
    """List added tokens that sit inside the vocabulary's ID range in ``model.vocab`` too.

    ``tokenizers`` ignores an added token's written ID unless its content is in the
    vocabulary: it takes the next ID after the vocabulary's entry count, which lands on
    another piece when a special sits in a hole of the ID range (e.g. merges appended after
    the specials). Listed in the vocabulary (as GPT-2's ``<|endoftext|>`` is), the token
    keeps its ID in every reader, tokenpact's included.
    """
    vocab: dict[str, int] = document["model"]["vocab"]
    used = set(vocab.values())
    top = max(used, default=-1)
    for token in document.get("added_tokens") or []:
        if token["id"] <= top and token["id"] not in used and token["content"] not in vocab:
            vocab[token["content"]] = token["id"]


def write_tokenizer_json(document: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a ``tokenizer.json`` document atomically; a directory gets ``dir/tokenizer.json``."""
    target = Path(path)
    if target.is_dir() or target.suffix != ".json":
        target = target / "tokenizer.json"
    atomic_write_text(target, json.dumps(document, ensure_ascii=False) + "\n")
    return target


def export_hf(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write ``tokenizer.json`` atomically; a directory gets ``dir/tokenizer.json``.

    A SentencePiece tokenizer is written as the equivalent Unigram pipeline."""
    if tok.spec.sentencepiece_model is not None:
        return export_unigram_hf(tok, path)
    return write_tokenizer_json(hf_tokenizer_json(tok), path)
