"""A complete, valid bundle: the compatibility checker's small example.

The toy tokenizer has IDs 0..11 (nine byte-BPE pieces, then BOS, EOS and EOT); the
checkpoint has 12 input rows, 12 output rows and a tied output head whose shared storage
was verified. Tests derive every negative fixture from this bundle, and users can read it
as a worked example of each document.
"""

from __future__ import annotations

from typing import Any

from .canonical import pretty_text
from .declarations import (
    CheckpointDeclaration,
    CorpusDocument,
    CorpusManifest,
    DatasetDeclaration,
    EncodedDocument,
    template_declaration,
)
from .hashing import bytes_sha256, semantic_hash, template_hash
from .manifest import build_manifest
from .reconcile import seal_bundle

TOKENIZER_FILE = "tokenpact.json"
BOS, EOS, EOT = 9, 10, 11
CORPUS_TEXTS = ("abcd ab", "cd dc", "ab ab abcd")


def example_config() -> dict[str, Any]:
    """Return the toy tokenizer config: pieces a b c d ' ' ab cd abcd ' ab' + 3 specials."""
    return {
        "format": "tokenpact.tokenizer",
        "format_version": 1,
        "pre_tokenizer": {
            "type": "regex_split",
            "name": None,
            "pattern": r" ?[a-d]+|\s+|[^a-d\s]+",
        },
        "model": {
            "type": "byte_bpe",
            "semantics": "merge_ranks",
            # rank 0: a+b -> 5, rank 1: c+d -> 6, rank 2: ab+cd -> 7, rank 3: ' '+ab -> 8
            "merges": [[0, 1], [2, 3], [5, 6], [4, 5]],
            "vocab": ["61", "62", "63", "64", "20", "6162", "6364", "61626364", "206162"],
        },
        "special_tokens": [
            {"id": BOS, "content": "<|bos|>", "role": "bos"},
            {"id": EOS, "content": "<|eos|>", "role": "eos"},
            {"id": EOT, "content": "<|eot|>", "role": "eot"},
        ],
        "post_processor": {"type": "prepend_bos", "token": "<|bos|>"},
        "decoder": {"type": "byte_level"},
    }


def example_files() -> dict[str, bytes]:
    """Return the released tokenizer file of the example (path -> bytes)."""
    return {TOKENIZER_FILE: pretty_text(example_config()).encode("utf-8")}


def _case(name: str, text: str, ids: list[int], pieces: list[bytes], add: bool = False) -> Any:
    offsets: list[list[int]] = []
    cursor = 0
    for tid, piece in zip(ids, pieces, strict=True):
        width = 0 if tid >= BOS and add and not offsets else len(piece)
        offsets.append([cursor, cursor + width])
        cursor += width
    return {
        "name": name,
        "class": "post_processor" if add else "ascii",
        "text": text,
        "codepoints": None,
        "policy": {"allowed_special": [], "add_special_tokens": add},
        "error": None,
        "normalized": text,
        "pieces": [p.hex() for p in pieces],
        "ids": ids,
        "offsets": offsets,
        "special_mask": [1 if i >= BOS else 0 for i in ids],
        "decoded": b"".join(pieces).decode("utf-8"),
    }


def example_golden() -> dict[str, Any]:
    """Return hand-computed golden cases for the toy tokenizer."""
    return {
        "kind": "tokenpact.golden",
        "version": 1,
        "semantic_hash": semantic_hash(example_config()),
        "coordinate": "raw_utf8_bytes",
        "cases": [
            _case("abcd", "abcd", [7], [b"abcd"]),
            _case("two_words", "ab ab", [5, 8], [b"ab", b" ab"]),
            _case("unmerged", "dc", [3, 2], [b"d", b"c"]),
            _case("with_bos", "ab", [BOS, 5], [b"<|bos|>", b"ab"], add=True),
        ],
    }


def example_bundle() -> dict[str, Any]:
    """Return the sealed example bundle; ``reconcile(example_bundle()).ok`` is True."""
    config = example_config()
    files = example_files()
    semantic = semantic_hash(config)
    golden = example_golden()
    template = template_declaration(
        "{{ bos }}{% for m in messages %}{{ m.content }}{{ eot }}{% endfor %}",
        name="toy-chat",
    )
    corpus = CorpusManifest(
        revision="toy-2026-01",
        documents=tuple(
            CorpusDocument.from_text(
                text, source_id="toy", document_id=f"doc-{i}", license_class="public-domain"
            )
            for i, text in enumerate(CORPUS_TEXTS)
        ),
        order_policy="as_listed",
        seed=17,
        pipeline={"extraction": "1", "filtering": "1", "deduplication": "exact-sha256-1"},
        decontamination={"method": "exact-13gram", "eval_sets": {"toy-eval": "1"}},
    )
    common: dict[str, Any] = {
        "tokenizer_hash": semantic,
        "template_hash": template_hash(template),
        "boundary_policy": "eos_after_document",
        "license_class": "public-domain",
    }
    documents = [
        # "abcd ab" -> abcd, ' ab', EOS ; "cd dc" -> cd, ' ', d, c, EOS
        EncodedDocument(ids=(7, 8, EOS), source_id="toy", document_id="doc-0", **common),
        EncodedDocument(ids=(6, 4, 3, 2, EOS), source_id="toy", document_id="doc-1", **common),
    ]
    dataset = DatasetDeclaration.from_documents(documents, corpus_hash=corpus.hash)
    checkpoint = CheckpointDeclaration(
        tokenizer_hash=semantic,
        template_hash=template_hash(template),
        input_embedding_rows=12,
        output_vocab_rows=12,
        special_ids={"bos": BOS, "eos": EOS, "pad": None, "stop": [EOS, EOT]},
        tied_output_head=True,
        tied_storage_verified=True,
        evidence="output head and embedding share storage",
    )
    bundle = {
        "kind": "tokenpact.bundle",
        "version": 1,
        "corpus": corpus.to_json(),
        "tokenizer": {
            "config": config,
            "files": [{"path": p, "sha256": bytes_sha256(b)} for p, b in sorted(files.items())],
            "manifest": build_manifest(config, files=files, golden=golden),
        },
        "template": template,
        "golden": golden,
        "dataset": dataset.to_json(),
        "checkpoint": checkpoint.to_json(),
        "hashes": {},
    }
    return seal_bundle(bundle)
