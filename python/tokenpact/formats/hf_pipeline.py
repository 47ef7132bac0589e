"""Hugging Face ``tokenizer.json`` components beyond byte-level BPE.

Normalizers (NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Replace, Prepend, Strip,
BertNormalizer, Nmt, Precompiled, Sequence), the character-class pre-tokenizers (Whitespace,
WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit), WordPiece
and WordLevel models, the WordPiece decoder and the BERT / RoBERTa post-processors.
Every node is validated here (an unsupported type raises ArtifactError naming it) and
handed to the Rust engine unchanged, so the engine implements exactly the file's
semantics; see docs/PIPELINE.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import _native
from ..components.processors import Template
from ..errors import ArtifactError

NORMALIZERS = frozenset(
    {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Replace", "Prepend", "Strip"}
    | {"BertNormalizer", "Nmt", "Precompiled", "Sequence"}
)
WORD_MODELS = frozenset({"WordPiece", "WordLevel"})


def check_id_space(path: Path | str, where: str, entries: int, max_id: int) -> None:
    """Raise ArtifactError unless ``max_id`` is within the bounded ID space of
    ``entries`` IDs (dense up to a bounded number of holes; docs/SECURITY.md), before any
    table sized by ``max_id`` is allocated."""
    limit = int(_native.id_space_limit(entries))
    if max_id + 1 > limit:
        raise fail(
            Path(path),
            where,
            f"ID {max_id} is far beyond the {entries} entries (at most {limit} IDs are "
            "allowed: IDs must be dense up to a bounded number of unused IDs)",
            "renumber the tokens from 0 without large gaps",
        )


def fail(path: Path, where: str, problem: str, fix: str) -> ArtifactError:
    return ArtifactError(f"{path}: {where}: {problem}; {fix}")


def unsupported(path: Path, where: str, kind: object) -> ArtifactError:
    return fail(
        path,
        where,
        f"component type {kind!r} is not supported by tokenpact yet",
        "convert the tokenizer to a supported form or file an issue naming this type",
    )


def check_normalizer(path: Path, node: dict[str, Any] | None, where: str = "normalizer") -> None:
    """Raise ArtifactError for any normalizer type (at any depth) the engine lacks."""
    if node is None:
        return
    kind = node.get("type")
    if kind not in NORMALIZERS:
        raise unsupported(path, where, kind)
    if kind == "Sequence":
        for i, item in enumerate(node.get("normalizers") or []):
            check_normalizer(path, item, f"{where}.normalizers[{i}]")
    if kind == "Replace" and not ({"String", "Regex"} & set(node.get("pattern") or {})):
        raise fail(path, where, "Replace has no pattern", 'give it {"String": ...}')
    if kind == "Precompiled":
        charsmap = node.get("precompiled_charsmap")
        if not isinstance(charsmap, str) or not charsmap:
            raise fail(
                path,
                f"{where}.precompiled_charsmap",
                f"{type(charsmap).__name__} instead of a base64 charsmap",
                "convert the tokenizer again",
            )


def word_vocab(path: Path, model: dict[str, Any], added: dict[str, int]) -> list[bytes]:
    """Token strings by ID (UTF-8) of a WordPiece / WordLevel model."""
    vocab: dict[str, int] = model.get("vocab") or {}
    size = max([*vocab.values(), -1]) + 1
    check_id_space(path, "model.vocab", len(vocab) + len(added), size - 1)
    pieces: list[bytes | None] = [None] * size
    for token, i in vocab.items():
        if pieces[i] is not None:
            raise fail(path, "model.vocab", f"ID {i} is used twice", "give each piece one ID")
        pieces[i] = token.encode("utf-8")
    for content, i in added.items():
        if i < size and pieces[i] is None:
            pieces[i] = content.encode("utf-8")
    holes = [i for i, v in enumerate(pieces) if v is None]
    if holes:
        raise fail(path, "model.vocab", f"IDs {holes[:5]} have no piece", "fill the vocabulary")
    unk = model.get("unk_token")
    if unk is not None and unk not in vocab:
        raise fail(path, "model.unk_token", f"{unk!r} is not in the vocabulary", "add it")
    return [p for p in pieces if p is not None]


# Decoders over token strings (every model but byte-level BPE, whose pieces are bytes).
STRING_DECODERS = frozenset(
    {"WordPiece", "ByteFallback", "Fuse", "Strip", "Replace", "Metaspace", "BPEDecoder", "CTC"}
)


def check_decoder(
    path: Path,
    node: dict[str, Any] | None,
    model_type: str,
    *,
    byte_level: bool = False,
    where: str = "decoder",
) -> None:
    """Raise ArtifactError for a decoder (at any depth) the engine lacks.

    Byte-level BPE takes only ``ByteLevel`` (its pieces are raw bytes); other models take
    :data:`STRING_DECODERS` and ``Sequence`` of them.
    """
    if node is None:
        return
    kind = node.get("type")
    if model_type == "BPE" and byte_level:
        if kind != "ByteLevel":
            raise fail(
                path,
                where,
                f"component type {kind!r} is not supported with a byte-level BPE model "
                "(its pieces are bytes)",
                "use the ByteLevel decoder",
            )
        return
    if kind == "Sequence":
        for i, item in enumerate(node.get("decoders") or []):
            check_decoder(path, item, model_type, where=f"{where}.decoders[{i}]")
        return
    if kind not in STRING_DECODERS:
        raise unsupported(path, where, kind)
    if kind == "Replace" and not ({"String", "Regex"} & set(node.get("pattern") or {})):
        raise fail(path, where, "Replace has no pattern", 'give it {"String": ...}')
    for key in ("content", "replacement"):
        value = node.get(key)
        if kind in ("Strip", "Metaspace") and value is not None and len(str(value)) != 1:
            raise fail(path, f"{where}.{key}", f"{value!r}", "give exactly one character")


def _pair_processor(cls: list[Any], sep: list[Any], roberta: bool) -> Template:
    first = [("special", cls[0], 0), ("sequence", "A", 0), ("special", sep[0], 0)]
    if roberta:
        # RoBERTa: <s> A </s></s> B </s>; HF gives every token type ID 0.
        pair = first + [("special", sep[0], 0), ("sequence", "B", 0), ("special", sep[0], 0)]
    else:
        pair = first + [("sequence", "B", 1), ("special", sep[0], 1)]
    return Template(tuple(first), tuple(pair))


def post_processor(path: Path, node: dict[str, Any]) -> Template | None:
    """Template form of BertProcessing / RobertaProcessing (None if neither)."""
    kind = node.get("type")
    if kind not in ("BertProcessing", "RobertaProcessing"):
        return None
    cls, sep = node.get("cls"), node.get("sep")
    if not (isinstance(cls, list) and isinstance(sep, list) and len(cls) == len(sep) == 2):
        raise fail(path, "post_processor", f"{kind} needs cls and sep", "give [token, id] pairs")
    return _pair_processor(cls, sep, kind == "RobertaProcessing")
