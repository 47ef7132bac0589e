"""A trained Hugging Face pipeline: its spec holds the typed components as its stages,
its provenance is the ``tokenizer.json`` those components write.

No document is parsed: :func:`tokenpact.core.lowering.pipeline_spec` puts the
components into the spec, and the release files are the components' serialized document, so
a save followed by a load reads back the same spec (the hash fixture and
``tests/unit/test_trained_pipeline_spec.py`` hold both to the file reader).
"""

from __future__ import annotations

from typing import Any

from ..components import Pipeline
from ..core import Provenance, TokenizerSpec
from ..core.lowering import pipeline_spec
from ..formats.hf_json import document_bytes, file_roles, hf_provenance


def trained_pipeline(
    pipeline: Pipeline, config: dict[str, Any], *, label: str
) -> tuple[TokenizerSpec, Provenance]:
    """The spec and provenance of a trained pipeline; ``config`` is its
    ``tokenizer_config.json`` (the roles of the special tokens)."""
    document = pipeline.to_config()
    model = document["model"]
    spec = pipeline_spec(pipeline, roles=file_roles(config, model))
    files = {
        "tokenizer.json": document_bytes(document),
        "tokenizer_config.json": document_bytes(config),
    }
    return spec, hf_provenance(spec, model, files=files, config=config, label=label)
