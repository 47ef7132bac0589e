"""Detectors that compare a checkpoint (safetensors header or declaration) with a tokenizer,
and dataset manifests or cache-key declarations with the identity they should carry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .findings import detector
from .subject import Subject

Found = Iterator[tuple[str, str]]


def _short(value: Any) -> str:
    return f"{value[:19]}..." if isinstance(value, str) and len(value) > 22 else repr(value)


@detector(
    "embedding-rows-short",
    failure="embedding rows < vocabulary",
    needs=("checkpoint", "tokenizer"),
)
def embedding_rows_short(subject: Subject) -> Found:
    ckpt, size = subject.checkpoint, subject.vocab_size
    if ckpt is None or size is None:
        return
    rows = ckpt["input_embedding_rows"]
    if rows < size:
        yield (
            f"the input embedding has {rows} rows, the tokenizer emits IDs up to {size - 1}",
            f"resize the embedding to at least {size} rows and train the new rows before use",
        )


@detector(
    "output-head-not-resized",
    failure="untied head not resized",
    needs=("checkpoint",),
)
def output_head_not_resized(subject: Subject) -> Found:
    ckpt = subject.checkpoint
    if ckpt is None or ckpt["output_vocab_rows"] is None:
        return
    rows_in, rows_out = ckpt["input_embedding_rows"], ckpt["output_vocab_rows"]
    size = subject.vocab_size
    if not ckpt["tied_output_head"] and rows_out != rows_in:
        yield (
            f"untied output head has {rows_out} rows, the input embedding {rows_in}: one of "
            "them was resized without the other",
            "resize the output head (and its optimizer state) together with the embedding",
        )
    elif size is not None and rows_out < size:
        yield (
            f"output head has {rows_out} rows for a {size}-ID tokenizer",
            "resize the output head; logits must cover every ID the tokenizer emits",
        )


@detector(
    "checkpoint-tokenizer-mismatch",
    failure="different tokenizer with same model weights",
    needs=("checkpoint", "tokenizer"),
)
def checkpoint_tokenizer_mismatch(subject: Subject) -> Found:
    ckpt, tok = subject.checkpoint, subject.tokenizer
    if ckpt is None or tok is None or not ckpt.get("tokenizer_hash"):
        return
    if ckpt["tokenizer_hash"] != tok.semantic_hash:
        yield (
            f"checkpoint declares tokenizer {_short(ckpt['tokenizer_hash'])}, the tokenizer "
            f"here is {_short(tok.semantic_hash)}",
            "use the tokenizer the checkpoint was trained with, or migrate the checkpoint",
        )


@detector(
    "special-id-config-mismatch",
    failure="PAD ID mismatch",
    needs=("checkpoint", "tokenizer"),
)
def special_id_config_mismatch(subject: Subject) -> Found:
    ckpt, tok = subject.checkpoint, subject.tokenizer
    if ckpt is None or tok is None:
        return
    ids = ckpt.get("special_ids") or {}
    wrong = [
        f"{name}: model config {ids.get(name)!r}, tokenizer {mine!r}"
        for name, mine in (("bos", tok.bos_id), ("eos", tok.eos_id), ("pad", tok.pad_id))
        if ids.get(name) is not None and mine is not None and ids.get(name) != mine
    ]
    if wrong:
        yield (
            "special IDs disagree: " + "; ".join(wrong),
            "make the model config (bos/eos/pad_token_id) and the tokenizer agree, so "
            "generation starts, stops and pads on the same IDs",
        )


@detector(
    "pad-id-negative",
    failure="pad_id -1 reaching embeddings",
    needs=("checkpoint",),
)
def pad_id_negative(subject: Subject) -> Found:
    ckpt = subject.checkpoint
    pad = (ckpt.get("special_ids") or {}).get("pad") if ckpt else None
    if isinstance(pad, int) and pad < 0:
        yield (
            f"the model config declares pad_token_id = {pad}: a collator that pads with it "
            "sends a negative ID into the embedding lookup",
            "set pad_token_id to a real row (a dedicated PAD or EOS) and mask it",
        )


def _has_identity(doc: dict[str, Any], key: str) -> bool:
    value = doc.get(key)
    return isinstance(value, str) and bool(value)


def _key_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The cache key inside a cache-key document, or the document itself."""
    key = doc.get("cache_key")
    return key if isinstance(key, dict) else doc


@detector(
    "cache-key-without-identity",
    failure="cache keys without tokenizer identity",
    needs=("manifest",),
)
def cache_key_without_identity(subject: Subject) -> Found:
    doc = subject.manifest
    if not isinstance(doc, dict) or doc.get("kind") == "tokenpact.corpus":
        return
    key = _key_of(doc)
    missing = [k for k in ("tokenizer_hash", "template_hash") if not _has_identity(key, k)]
    if missing:
        yield (
            f"{'cache key' if key is not doc else 'dataset manifest'} lacks {missing}: equal "
            "prompts or records made under another tokenizer or template would be reused",
            "include the tokenizer semantic hash and the template hash (and model and "
            "position contract for caches) in every key",
        )


@detector(
    "manifest-tokenizer-mismatch",
    failure="different tokenizer with same model weights",
    needs=("manifest", "tokenizer"),
)
def manifest_tokenizer_mismatch(subject: Subject) -> Found:
    doc, tok = subject.manifest, subject.tokenizer
    if not isinstance(doc, dict) or tok is None:
        return
    key = _key_of(doc)
    declared = key.get("tokenizer_hash")
    if isinstance(declared, str) and declared and declared != tok.semantic_hash:
        yield (
            f"declared tokenizer {_short(declared)} is not this tokenizer "
            f"({_short(tok.semantic_hash)})",
            "re-encode the dataset with this tokenizer or load the declared one",
        )
    top = doc.get("max_token_id")
    if isinstance(top, int) and top >= tok.vocab_size:
        yield (
            f"records use IDs up to {top}, this tokenizer has {tok.vocab_size} IDs",
            "the dataset was encoded with a larger vocabulary; use its tokenizer",
        )
