"""Declarations of the artifacts that bind to a tokenizer: corpus, dataset, checkpoint.

Each declaration is a small frozen dataclass with ``to_json()`` (the canonical document
that gets hashed and stored) and ``from_json()`` (schema-validated). The documents are
described in ``schemas/declarations.schema.json``.

>>> doc = CorpusDocument.from_text("The cat sleeps.", source_id="web", document_id="d1",
...                                license_class="cc-by")
>>> doc.clean_sha256 == doc.raw_sha256
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import ContractError
from .hashing import (
    bytes_sha256,
    checkpoint_hash,
    corpus_hash,
    dataset_hash,
    parse_hash,
    template_hash,
    token_ids_hash,
)
from .schema import declaration_errors

if TYPE_CHECKING:
    from ..core import Tokenizer

TEMPLATE_MODES = ("generation", "training")


def _validated(document: Any, kind: str) -> Mapping[str, Any]:
    errors = declaration_errors(document, kind)
    if errors:
        raise ContractError(f"invalid {kind} declaration: " + "; ".join(errors))
    result: Mapping[str, Any] = document
    return result


def _text_hash(text: str) -> str:
    return bytes_sha256(text.encode("utf-8"))


@dataclass(frozen=True)
class CorpusDocument:
    """One fit document: where it came from, its split, licence class and text digests
    before and after cleanup."""

    source_id: str
    document_id: str
    license_class: str
    raw_sha256: str
    clean_sha256: str
    split: str = "train"

    @classmethod
    def from_text(
        cls,
        raw: str,
        clean: str | None = None,
        *,
        source_id: str,
        document_id: str,
        license_class: str,
        split: str = "train",
    ) -> CorpusDocument:
        """Digest ``raw`` and ``clean`` (defaults to ``raw``: no cleanup) text."""
        return cls(
            source_id=source_id,
            document_id=document_id,
            license_class=license_class,
            raw_sha256=_text_hash(raw),
            clean_sha256=_text_hash(raw if clean is None else clean),
            split=split,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "document_id": self.document_id,
            "split": self.split,
            "license_class": self.license_class,
            "raw_sha256": parse_hash(self.raw_sha256),
            "clean_sha256": parse_hash(self.clean_sha256),
        }


@dataclass(frozen=True)
class CorpusManifest:
    """The tokenizer's fit corpus: ordered documents (order can decide BPE ties), pipeline
    versions, decontamination record, seed and order policy."""

    revision: str
    documents: tuple[CorpusDocument, ...]
    order_policy: str = "as_listed"
    seed: int | None = None
    pipeline: Mapping[str, str] = field(default_factory=dict)
    decontamination: Mapping[str, Any] | None = None
    # Digest of the text stream the trainer saw (``tok.training["corpus"]["digest"]``).
    fit_digest: str | None = None
    # The cleaning steps' records (tokenpact.data.cleaning): name, library version,
    # configuration hash, counts, and the dropped documents. Written only when present,
    # so manifests without cleaning keep their hashes.
    cleaning: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "tokenpact.corpus",
            "version": 1,
            "revision": self.revision,
            "order_policy": self.order_policy,
            "seed": self.seed,
            "pipeline": dict(self.pipeline),
            "decontamination": None if self.decontamination is None else dict(self.decontamination),
            "fit_digest": self.fit_digest,
            "documents": [d.to_json() for d in self.documents],
        }
        if self.cleaning is not None:
            out["cleaning"] = dict(self.cleaning)
        return out

    @property
    def hash(self) -> str:
        return corpus_hash(self.to_json())

    @classmethod
    def from_json(cls, document: Any) -> CorpusManifest:
        data = _validated(document, "corpus")
        return cls(
            revision=data["revision"],
            documents=tuple(CorpusDocument(**d) for d in data["documents"]),
            order_policy=data["order_policy"],
            seed=data["seed"],
            pipeline=dict(data["pipeline"]),
            decontamination=data["decontamination"],
            fit_digest=data["fit_digest"],
            cleaning=data.get("cleaning"),
        )


def template_declaration(
    source: str, *, name: str, modes: Iterable[str] = TEMPLATE_MODES
) -> dict[str, Any]:
    """Return a template declaration: exact source plus the modes it is used in."""
    chosen = sorted(set(modes))
    unknown = [m for m in chosen if m not in TEMPLATE_MODES]
    if unknown:
        raise ContractError(f"unknown template modes {unknown}; use {TEMPLATE_MODES}")
    document = {
        "kind": "tokenpact.template",
        "version": 1,
        "name": name,
        "source": source,
        "modes": chosen,
    }
    return dict(_validated(document, "template"))


@dataclass(frozen=True)
class EncodedDocument:
    """One encoded document with what batching and auditing need to trust its IDs."""

    ids: tuple[int, ...]
    source_id: str
    document_id: str
    tokenizer_hash: str
    template_hash: str
    boundary_policy: str
    split: str = "train"
    license_class: str | None = None
    truncated: bool = False
    packed_position: int | None = None

    def to_record(self) -> dict[str, Any]:
        """Return the declaration record: counts and an ID digest instead of the IDs."""
        return {
            "source_id": self.source_id,
            "document_id": self.document_id,
            "split": self.split,
            "license_class": self.license_class,
            "tokenizer_hash": parse_hash(self.tokenizer_hash),
            "template_hash": parse_hash(self.template_hash),
            "boundary_policy": self.boundary_policy,
            "token_count": len(self.ids),
            "max_token_id": max(self.ids) if self.ids else None,
            "ids_hash": token_ids_hash(self.ids),
            "truncated": self.truncated,
            "packed_position": self.packed_position,
        }


def encode_document(
    tok: Tokenizer,
    text: str,
    *,
    source_id: str,
    document_id: str,
    boundary_policy: str,
    tokenizer_hash: str,
    template_hash: str | None = None,
    split: str = "train",
    license_class: str | None = None,
    add_special_tokens: bool = False,
    max_length: int | None = None,
    bos: bool | None = None,
    eos: bool | None = None,
) -> EncodedDocument:
    """Encode one document on its own (never joined to its neighbours) and describe it.

    ``bos``/``eos`` are the boundary flags of :meth:`Tokenizer.encode` (explicit flags
    win over the template that ``add_special_tokens`` applies). ``max_length`` cuts the
    content first and then adds the boundary tokens, so a required EOS survives
    truncation. ``template_hash`` defaults to the identity of "no template".
    """
    boundary_ids = getattr(tok, "boundary_ids", None)
    if boundary_ids is None:
        # A duck-typed tokenizer without the boundary API: its own encode inserts them.
        if bos is not None or eos is not None:
            raise ContractError(
                f"{type(tok).__name__} has no boundary_ids(); bos=/eos= need a tokenpact Tokenizer"
            )
        ids = list(tok.encode(text, add_special_tokens=add_special_tokens))
        truncated = max_length is not None and len(ids) > max_length
        if truncated:
            ids = ids[:max_length]
    else:
        content = list(tok.encode(text))
        flags = {"add_special_tokens": add_special_tokens, "bos": bos, "eos": eos}
        before, after = boundary_ids(content, **flags)
        truncated = False
        # Cut the content to the budget the boundaries leave; cutting can change them
        # (content that ended with its own EOS no longer does), so check again.
        while max_length is not None and len(before) + len(content) + len(after) > max_length:
            budget = max_length - len(before) - len(after)
            if budget < 0:
                raise ContractError(
                    f"max_length {max_length} leaves no room for the {len(before) + len(after)}"
                    " boundary tokens; raise max_length"
                )
            truncated = True
            content = content[:budget]
            before, after = boundary_ids(content, **flags)
        ids = [*before, *content, *after]
    return EncodedDocument(
        ids=tuple(int(i) for i in ids),
        source_id=source_id,
        document_id=document_id,
        tokenizer_hash=tokenizer_hash,
        template_hash=template_hash if template_hash is not None else _no_template(),
        boundary_policy=boundary_policy,
        split=split,
        license_class=license_class,
        truncated=truncated,
    )


def _no_template() -> str:
    return template_hash(None)


@dataclass(frozen=True)
class DatasetDeclaration:
    """An encoded dataset bound to its corpus, tokenizer and template identities."""

    corpus_hash: str
    tokenizer_hash: str
    template_hash: str
    record_count: int
    max_token_id: int | None
    documents: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[EncodedDocument],
        *,
        corpus_hash: str,
        list_documents: bool = True,
    ) -> DatasetDeclaration:
        """Summarize encoded documents; they must agree on tokenizer and template."""
        if not documents:
            raise ContractError("a dataset declaration needs at least one encoded document")
        tokenizers = {parse_hash(d.tokenizer_hash) for d in documents}
        templates = {parse_hash(d.template_hash) for d in documents}
        if len(tokenizers) != 1 or len(templates) != 1:
            raise ContractError(
                "documents were encoded with different tokenizers or templates; "
                "re-encode them with one tokenizer before declaring a dataset"
            )
        ids = [d.to_record()["max_token_id"] for d in documents]
        present = [i for i in ids if i is not None]
        return cls(
            corpus_hash=parse_hash(corpus_hash),
            tokenizer_hash=tokenizers.pop(),
            template_hash=templates.pop(),
            record_count=len(documents),
            max_token_id=max(present) if present else None,
            documents=tuple(d.to_record() for d in documents) if list_documents else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "tokenpact.dataset",
            "version": 1,
            "corpus_hash": parse_hash(self.corpus_hash),
            "tokenizer_hash": parse_hash(self.tokenizer_hash),
            "template_hash": parse_hash(self.template_hash),
            "record_count": self.record_count,
            "max_token_id": self.max_token_id,
            "documents": None if self.documents is None else [dict(d) for d in self.documents],
        }

    @property
    def hash(self) -> str:
        return dataset_hash(self.to_json())

    @classmethod
    def from_json(cls, document: Any) -> DatasetDeclaration:
        data = _validated(document, "dataset")
        docs = data["documents"]
        return cls(
            corpus_hash=data["corpus_hash"],
            tokenizer_hash=data["tokenizer_hash"],
            template_hash=data["template_hash"],
            record_count=data["record_count"],
            max_token_id=data["max_token_id"],
            documents=None if docs is None else tuple(docs),
        )


@dataclass(frozen=True)
class CheckpointDeclaration:
    """What a model checkpoint assumes about its tokenizer: bindings, row counts,
    special-ID config and whether a tied output head really shares storage."""

    tokenizer_hash: str | None
    template_hash: str | None
    input_embedding_rows: int
    output_vocab_rows: int | None
    special_ids: Mapping[str, Any]
    tied_output_head: bool
    tied_storage_verified: bool
    evidence: str | None = None

    def to_json(self) -> dict[str, Any]:
        ids = dict(self.special_ids)
        tokenizer = None if self.tokenizer_hash is None else parse_hash(self.tokenizer_hash)
        template = None if self.template_hash is None else parse_hash(self.template_hash)
        return {
            "kind": "tokenpact.checkpoint",
            "version": 1,
            "tokenizer_hash": tokenizer,
            "template_hash": template,
            "input_embedding_rows": self.input_embedding_rows,
            "output_vocab_rows": self.output_vocab_rows,
            "special_ids": {
                "bos": ids.get("bos"),
                "eos": ids.get("eos"),
                "pad": ids.get("pad"),
                # Stop IDs are a set: sealed in ascending order.
                "stop": sorted(set(ids.get("stop") or ())),
            },
            "tied_output_head": self.tied_output_head,
            "tied_storage_verified": self.tied_storage_verified,
            "evidence": self.evidence,
        }

    @property
    def hash(self) -> str:
        return checkpoint_hash(self.to_json())

    def bind(self, *, tokenizer_hash: str, template_hash: str) -> CheckpointDeclaration:
        """Return a copy bound to a tokenizer and template identity."""
        return replace(self, tokenizer_hash=tokenizer_hash, template_hash=template_hash)

    @classmethod
    def from_json(cls, document: Any) -> CheckpointDeclaration:
        data = _validated(document, "checkpoint")
        return cls(
            tokenizer_hash=data["tokenizer_hash"],
            template_hash=data["template_hash"],
            input_embedding_rows=data["input_embedding_rows"],
            output_vocab_rows=data["output_vocab_rows"],
            special_ids=dict(data["special_ids"]),
            tied_output_head=data["tied_output_head"],
            tied_storage_verified=data["tied_storage_verified"],
            evidence=data["evidence"],
        )
