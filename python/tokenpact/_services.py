"""The core's services (:class:`tokenpact.core.services.Services`), implemented with the
formats, the contract and the trainers' tokenizer classes, and bound when imported.

This module sits at the top of the package, beside the command line, because it is the
one place that joins layers the core may not import: ``tokenpact.core.services`` names
it and imports it on the first call that needs a file or a hash.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import contract
from .contract import golden
from .contract.hashing import bytes_sha256
from .core import Provenance, Tokenizer, TokenizerSpec
from .core.services import bind
from .formats import (
    artifact_dir,
    hf_export,
    hf_json,
    pretrained,
    registry,
    sentencepiece_model,
    sentencepiece_write,
    tiktoken_file,
)
from .train.trained import UnigramTokenizer


class FormatServices:
    """Every service is one call into the module that owns it, looked up on the module
    at call time (so a patched ``tokenpact.contract.semantic_hash`` is the one used)."""

    def load(
        self, cls: type[Tokenizer], path: Path, *, pattern: str | None, verify: bool
    ) -> Tokenizer:
        return registry.load(cls, path, pattern=pattern, verify=verify)

    def read_hf(self, path: Path) -> tuple[TokenizerSpec, Provenance]:
        return hf_json.read_hf_json(path)

    def read_sentencepiece(self, path: str | os.PathLike[str]) -> tuple[TokenizerSpec, Provenance]:
        return sentencepiece_model.read_sentencepiece(path)

    def read_tiktoken(
        self,
        path: str | os.PathLike[str],
        *,
        pattern: str | None,
        special_tokens: dict[str, int] | None,
        roles: dict[str, str] | None,
    ) -> tuple[TokenizerSpec, Provenance]:
        return tiktoken_file.read_tiktoken_spec(
            path, pattern=pattern, special_tokens=special_tokens, roles=roles
        )

    def document_spec(
        self, document: dict[str, Any], *, label: str, config: dict[str, Any] | None
    ) -> tuple[TokenizerSpec, Provenance]:
        return hf_json.hf_document_spec(document, label=label, config=config)

    def document(self, tok: Tokenizer) -> dict[str, Any]:
        return hf_export.hf_tokenizer_json(tok)

    def save(self, tok: Tokenizer, directory: Path) -> Path:
        return artifact_dir.save_tokenizer(tok, directory)

    def export_hf(self, tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
        return hf_export.export_hf(tok, path)

    def pretrained_path(self, name_or_path: str | os.PathLike[str]) -> Path:
        return pretrained.pretrained_path(name_or_path)

    def save_pretrained(self, tok: Tokenizer, directory: Path) -> Path:
        return pretrained.save_pretrained(tok, directory)

    def export_sentencepiece(self, tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
        return sentencepiece_write.export_sentencepiece(tok, path)

    def export_tiktoken(self, tok: Tokenizer, path: str | os.PathLike[str]) -> None:
        tiktoken_file.check_exact_tiktoken(tok)
        tiktoken_file.write_tiktoken(path, tok.vocab())

    def semantic_hash(self, tok: Tokenizer) -> str:
        return contract.semantic_hash(tok)

    def release_hash(self, tok: Tokenizer) -> str:
        files = artifact_dir.release_files(tok)
        digests = {name: bytes_sha256(data) for name, data in files.items()}
        return contract.release_hash(tok.semantic_hash, digests)

    def manifest(self, tok: Tokenizer) -> dict[str, Any]:
        files = artifact_dir.release_files(tok)
        return contract.build_manifest(tok, files=files, golden=golden.generate(tok))


# A model trained by train_unigram loads with its lattice methods back (nbest, sample,
# log_likelihood): the trainers' class is known here, not in the formats layer below.
registry.register_trained_class("unigram", UnigramTokenizer)
bind(FormatServices())
