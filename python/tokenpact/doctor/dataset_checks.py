"""Detectors for encoded datasets (``encode-dataset`` output): shards that changed after
encoding, and a boundary policy the shards do not hold."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..contract.dataset_files import (
    DATASET_MANIFEST,
    ENCODED_DATASET_KIND,
    shard_digest_problems,
)
from ..contract.declarations import DatasetDeclaration
from ..contract.loader_state import STATE_KIND, state_file_problems
from ..errors import ContractError, TokenpactError
from .findings import detector
from .subject import Subject

Found = Iterator[tuple[str, str]]


def _encoded(subject: Subject) -> bool:
    doc = subject.manifest
    return isinstance(doc, dict) and doc.get("kind") == ENCODED_DATASET_KIND


@detector(
    "dataset-shards-changed",
    failure="dataset files changed after encoding",
    needs=("manifest",),
)
def dataset_shards_changed(subject: Subject) -> Found:
    if not _encoded(subject) or not subject.manifest_path:
        return
    doc = subject.manifest
    assert doc is not None
    root = Path(subject.manifest_path).parent
    # open_dataset's offline pass hashes every shard file and checks the whole dataset
    # (the manifest against itself, counts, ID range, document order, corpus.json). When
    # it passes on this manifest, every digest holds and the declaration is sound:
    # nothing to report, and no second hashing pass. When it fails, the digest pass
    # lists every changed file.
    from ..data.dataset import open_dataset

    opened: TokenpactError | None = None
    try:
        open_dataset(root, verify="open")
    except TokenpactError as exc:
        opened = exc
    if opened is None and Path(subject.manifest_path).name == DATASET_MANIFEST:
        return
    problems = shard_digest_problems(root, doc)
    for problem in problems:
        yield problem, "re-encode the dataset, or restore the shard files it was encoded to"
    try:
        declared = DatasetDeclaration.from_json(doc.get("declaration"))
    except (ContractError, TypeError, KeyError) as exc:
        yield f"the dataset declaration is malformed: {exc}", "re-encode the dataset"
        return
    if doc.get("declaration_hash") != declared.hash:
        yield (
            "declaration_hash is not the hash of the declaration: the manifest was edited",
            "re-encode the dataset (never edit dataset.json by hand)",
        )
        return
    if not problems and opened is not None:  # the digests hold: what the offline pass found
        yield str(opened), "re-encode the dataset (never edit dataset.json by hand)"


@detector(
    "dataset-boundary-policy",
    failure="documents run together: no EOS between them",
    needs=("manifest",),
    severity="warning",
)
def dataset_boundary_policy(subject: Subject) -> Found:
    if not _encoded(subject):
        return
    doc = subject.manifest
    assert doc is not None
    policy = doc.get("boundary_policy")
    added = bool(doc.get("append_eod")) or bool(doc.get("add_special_tokens"))
    if policy == "eos_separate_documents" and not added:
        yield (
            "dataset.json declares boundary_policy eos_separate_documents, but the shards "
            "were encoded without --append-eod or --add-special-tokens: no record ends "
            "with EOS",
            "re-encode with --append-eod",
        )
    elif policy == "none" and doc.get("format") == "megatron":
        yield (
            "Megatron shards without an end-of-document token: GPTDataset concatenates "
            "the documents with nothing between them",
            "re-encode with --append-eod (as Megatron's preprocess_data.py --append-eod)",
        )
    eod = doc.get("eod_id")
    tok = subject.tokenizer
    if doc.get("append_eod") and tok is not None and eod != tok.eos_id:
        yield (
            f"the shards end documents with ID {eod}, this tokenizer's EOS is {tok.eos_id}",
            "use the tokenizer the dataset was encoded with, or re-encode",
        )


@detector(
    "loader-state-mismatch",
    failure="a saved loader state does not resume its datasets",
    needs=("manifest",),
)
def loader_state_mismatch(subject: Subject) -> Found:
    doc = subject.manifest
    if not isinstance(doc, dict) or doc.get("kind") != STATE_KIND:
        return
    base = Path(subject.manifest_path).parent if subject.manifest_path else None
    tok = subject.tokenizer
    yield from state_file_problems(
        doc, base=base, tokenizer_hash=tok.semantic_hash if tok is not None else None
    )
