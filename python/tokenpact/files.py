"""Loading, saving and exporting tokenizers: the file functions over the format registry.

Example::

    tok = tp.load("artifacts/my-tok")           # artifact dir, tokenizer.json, *.tiktoken, .model
    tp.save(tok, "artifacts/my-tok-2")          # the sealed artifact directory
    tp.export(tok, "hf", "out/tokenizer.json")  # any name in tp.files.export_formats()

A :class:`~tokenpact.core.Tokenizer` is the runtime (spec, engine, provenance; encode,
decode, vocabulary). Reading and writing its files is this module's job: every call
goes one way down the layers, here -> :mod:`tokenpact.formats` (the registry of formats
and their readers and writers) -> :mod:`tokenpact.contract` and :mod:`tokenpact.core`.
The ``Tokenizer`` methods of the same names (``Tokenizer.load``, ``tok.save``,
``tok.export_hf``, ``Tokenizer.from_hf``, ...) are deprecated aliases of these functions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .components import Pipeline
from .contract import build_manifest, golden
from .contract import release_hash as _release_hash
from .contract.hashing import bytes_sha256
from .core import Tokenizer
from .errors import ArtifactError
from .formats import (
    artifact_dir,
    hf_export,
    hf_json,
    pretrained,
    registry,
    sentencepiece_model,
    tiktoken_registry,
)
from .train.trained import UnigramTokenizer

__all__ = [
    "components",
    "export",
    "export_formats",
    "from_components",
    "from_hf",
    "from_hf_document",
    "from_pretrained",
    "from_sentencepiece",
    "from_tiktoken",
    "hf_document",
    "hf_pattern",
    "load",
    "manifest",
    "pin_added_token_ids",
    "release_hash",
    "save",
    "save_pretrained",
]

# Tokenizer classes of trained models, by the training record's algorithm: a model
# trained by train_unigram loads with its lattice methods back (nbest, sample,
# log_likelihood).
TRAINED_CLASSES: dict[str, type[Tokenizer]] = {"unigram": UnigramTokenizer}


def load(
    path: str | os.PathLike[str],
    *,
    pattern: str | None = None,
    verify: bool = True,
    cls: type[Tokenizer] = Tokenizer,
) -> Tokenizer:
    """Load an artifact directory, ``tokenpact.json``, ``tokenizer.json``, ``*.tiktoken``
    or a SentencePiece ``.model`` (the first registered format that recognizes the path).

    A ``.model`` file is told apart from a tiktoken rank file (Llama 3 ships one named
    ``tokenizer.model``) by its content: protobuf versus base64 lines. ``pattern`` is the
    pre-tokenizer of a rank file that does not name one. A directory :func:`save` wrote is
    checked against its ``manifest.json`` and ``golden.json`` (``verify=False`` skips
    that); drift raises ContractError. ``cls`` is the class to build (a subclass of
    :class:`~tokenpact.Tokenizer`)."""
    return registry.load(
        cls, Path(path), pattern=pattern, verify=verify, trained_classes=TRAINED_CLASSES
    )


def save(tok: Tokenizer, directory: str | os.PathLike[str]) -> Path:
    """Write the artifact directory: the tokenizer file (``tokenpact.json``, or the exact
    ``tokenizer.json`` / ``tokenizer.model`` it was built from, plus ``training.json``),
    ``manifest.json`` and ``golden.json``, as one atomic commit. Returns the directory."""
    return export(tok, "native", directory)


def export_formats() -> tuple[str, ...]:
    """The format names :func:`export` writes (``"native"``, ``"hf"``, ...)."""
    return registry.export_names()


def export(tok: Tokenizer, format: str, path: str | os.PathLike[str]) -> Path:
    """Write ``tok`` at ``path`` in the registered format named ``format``: ``"native"``
    (the sealed artifact directory, as :func:`save`), ``"hf"`` (``tokenizer.json``;
    a directory gets ``dir/tokenizer.json``), ``"sentencepiece"`` (the ``.model`` of a
    SentencePiece-backed tokenizer), ``"tiktoken"`` (a rank file; only exact for models
    whose IDs are tiktoken ranks, others raise ConfigError). Returns the path written."""
    return registry.write(tok, format, Path(path))


def from_tiktoken(
    path: str | os.PathLike[str],
    *,
    pattern: str | None = None,
    special_tokens: dict[str, int] | None = None,
    roles: dict[str, str] | None = None,
    cls: type[Tokenizer] = Tokenizer,
) -> Tokenizer:
    """A ``*.tiktoken`` rank file (tiktoken's merge semantics are kept exactly). A standard
    file (cl100k_base, o200k_base, ..., recognized by its SHA-256) gets tiktoken's
    pattern and special tokens for whatever is not passed; any other file gets
    ``pattern`` (default ``"gpt4"``) and the ``special_tokens`` passed."""
    spec, provenance = tiktoken_registry.read_tiktoken_spec(
        path, pattern=pattern, special_tokens=special_tokens, roles=roles
    )
    return cls(spec, provenance=provenance)


def from_sentencepiece(path: str | os.PathLike[str]) -> Tokenizer:
    """A SentencePiece ``.model`` (Unigram or BPE); IDs match ``sentencepiece``, which is
    not needed (tokenpact decodes the protobuf)."""
    spec, provenance = sentencepiece_model.read_sentencepiece(path)
    return Tokenizer(spec, provenance=provenance)


def from_hf(path: str | os.PathLike[str]) -> Tokenizer:
    """A Hugging Face ``tokenizer.json`` (file or directory); IDs match HF."""
    p = Path(path)
    spec, provenance = hf_json.read_hf_json(p / "tokenizer.json" if p.is_dir() else p)
    return Tokenizer(spec, provenance=provenance)


def from_pretrained(
    name_or_path: str | os.PathLike[str], *, cls: type[Tokenizer] = Tokenizer
) -> Tokenizer:
    """transformers' habit: a local model directory (``tokenizer.json`` with its
    ``tokenizer_config.json``: special tokens, chat template), any file :func:`load`
    reads, or a Hub model ID already in the local Hugging Face cache. Nothing is
    downloaded: a Hub ID not cached raises ArtifactError naming how to fetch it."""
    return load(pretrained.pretrained_path(name_or_path), cls=cls)


def save_pretrained(tok: Tokenizer, directory: str | os.PathLike[str]) -> Path:
    """A directory transformers' ``AutoTokenizer.from_pretrained`` loads with identical
    IDs and chat template: ``tokenizer.json`` and ``tokenizer_config.json``
    (``chat_template.jinja`` too when the source had one). Returns the directory."""
    return pretrained.save_pretrained(tok, Path(directory))


def from_components(
    model: Any,
    *,
    normalizer: Any = None,
    pre_tokenizer: Any = None,
    post_processor: Any = None,
    decoder: Any = None,
    added_tokens: Any = (),
    config: dict[str, Any] | None = None,
) -> Tokenizer:
    """A tokenizer assembled from :mod:`tokenpact.components` objects, validated and built
    exactly like the equivalent ``tokenizer.json``; ``config`` is an optional
    ``tokenizer_config.json`` dict (roles, chat template)."""
    pipeline = Pipeline(
        model=model,
        normalizer=normalizer,
        pre_tokenizer=pre_tokenizer,
        post_processor=post_processor,
        decoder=decoder,
        added_tokens=tuple(added_tokens),
    )
    spec, provenance = hf_json.hf_document_spec(
        pipeline.to_config(),
        label="<Tokenizer.from_components>",
        config=dict(config) if config is not None else None,
    )
    return Tokenizer(spec, provenance=provenance)


def hf_document(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document ``export(tok, "hf", ...)`` writes."""
    return hf_export.hf_tokenizer_json(tok)


def from_hf_document(
    document: dict[str, Any],
    *,
    config: dict[str, Any] | None = None,
    label: str = "<tokenizer.json>",
) -> Tokenizer:
    """The tokenizer of a parsed ``tokenizer.json`` document, as :func:`from_hf` reads a
    file (``config``: its parsed ``tokenizer_config.json``, for roles and the chat
    template; ``label`` names the document in errors). An edited document (an
    extended vocabulary, say) loads here without a file in between."""
    return hf_json.load_hf_data(document, label=label, config=config)


def pin_added_token_ids(document: dict[str, Any]) -> None:
    """List, in ``model.vocab``, the added tokens of a ``tokenizer.json`` document whose
    IDs sit inside the vocabulary's ID range, so that every reader (``tokenizers``
    included, which otherwise renumbers them after the vocabulary) keeps their IDs.
    Edits ``document`` in place; :func:`export` writes documents already pinned."""
    hf_export.pin_inner_added_tokens(document)


def hf_pattern(tok: Tokenizer) -> str:
    """The pre-tokenizer regex an exported ``tokenizer.json`` carries for ``tok``,
    written so that Oniguruma (the regex engine of ``tokenizers``) splits exactly as
    tokenpact does."""
    return hf_export.onig_pattern(tok)


def components(tok: Tokenizer) -> Any:
    """``tok``'s stages as a :class:`tokenpact.components.Pipeline`: its
    ``tokenizer.json`` as loaded, or the document :func:`export` writes for it."""
    raw = tok.provenance.files.get("tokenizer.json")
    if raw is not None:
        return Pipeline.from_config(json.loads(raw.decode("utf-8")))
    try:
        document = hf_document(tok)
    except ArtifactError as exc:
        raise ArtifactError(f"this tokenizer has no component form: {exc}") from None
    return Pipeline.from_config(document)


def release_hash(tok: Tokenizer) -> str:
    """The semantic hash bound to the exact bytes of the files :func:`save` writes."""
    files = artifact_dir.release_files(tok)
    digests = {name: bytes_sha256(data) for name, data in files.items()}
    return _release_hash(tok.semantic_hash, digests)


def manifest(tok: Tokenizer) -> dict[str, Any]:
    """The ``manifest.json`` :func:`save` would write."""
    files = artifact_dir.release_files(tok)
    return build_manifest(tok, files=files, golden=golden.generate(tok))
