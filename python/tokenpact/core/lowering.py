"""The spec of a pipeline built from typed components (a trainer's, no file between).

A :class:`~tokenpact.components.Pipeline` over strings (WordPiece, WordLevel, Unigram,
BPE over characters) becomes a :class:`~tokenpact.core.TokenizerSpec` whose stages are
those very components: nothing is lowered to dictionaries. What the engine needs beyond
the nodes is derived here once: the model's tables (pieces by ID, merge records, scores;
:func:`model_tables`), and by the spec its split steps (:mod:`.split_steps`). The
``tokenizer.json`` reader (``formats/hf_json.py``) reads a file's nodes into the same
components, so a trainer's spec and the spec of the file it saves are the same.

Byte-level BPE is not built here: its models are :class:`~tokenpact.core.MergeRecords`
or :class:`~tokenpact.core.RankedMerges` (``core/byte_bpe.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..components import Pipeline, normalizers
from ..components import models as cm
from ..components import pre_tokenizers as cp
from ..errors import ConfigError
from ..special import SHARED_ROLES, SpecialToken
from .models import HfModel
from .spec import HfStages, TokenizerSpec

# The step vocabulary lives in .split_steps; these names are kept for existing imports.
from .split_steps import SCANNERS as SCANNERS
from .split_steps import metaspace_steps as metaspace_steps
from .split_steps import pre_tokenizer_steps as pre_tokenizer_steps
from .split_steps import scanner_step as scanner_step
from .split_steps import split_step as split_step


def model_tables(model: cm.Model, added: Mapping[str, int]) -> HfModel:
    """The tables of a model over strings: the UTF-8 piece of every ID, the merge
    records (BPE over characters) and the scores (Unigram). IDs without a vocabulary
    entry take the added token with that ID."""
    if isinstance(model, cm.BPE):
        from .. import _native

        pieces, records = _native.hf_byte_level_tables(
            model.vocab,
            model.merges,
            sorted(added.items()),
            model.continuing_subword_prefix or "",
        )
        return HfModel(pieces, records)
    if isinstance(model, cm.Unigram):
        pieces = [piece.encode("utf-8") for piece, _ in model.vocab]
        return HfModel(pieces, scores=[score for _, score in model.vocab])
    if not isinstance(model, cm.WordPiece | cm.WordLevel):
        raise ConfigError(f"model {model.TYPE} is not a model over strings")
    size = max([*model.vocab.values(), -1]) + 1
    by_id: list[str | None] = [None] * size
    for piece, i in model.vocab.items():
        by_id[i] = piece
    for content, i in added.items():
        if i < size and by_id[i] is None:
            by_id[i] = content
    holes = [i for i, p in enumerate(by_id) if p is None]
    if holes or len(model.vocab) > size:
        raise ConfigError(f"{model.TYPE} vocabulary: IDs {holes[:5]} have no piece")
    return HfModel([str(p).encode("utf-8") for p in by_id])


def model_parts(
    model: cm.Model, added: Mapping[str, int]
) -> tuple[dict[str, Any], list[bytes], list[tuple[int, int, int]]]:
    """Deprecated: the model's options node as a dict, its pieces and merge records
    (use :func:`model_tables` and :func:`tokenpact.components.models.options`)."""
    tables = model_tables(model, added)
    node = {**cm.options(model).to_config()}
    if isinstance(model, cm.Unigram):
        node["scores"] = [repr(score) for score in tables.scores]
    return node, list(tables.pieces), list(tables.records)


def pipeline_spec(pipeline: Pipeline, *, roles: Mapping[str, str]) -> TokenizerSpec:
    """The spec of a pipeline over strings, built from its typed components.

    The added tokens are special tokens without matching flags (what the trainers
    write); each gets ``roles[content]`` (else ``reserved``; a role already taken becomes
    ``reserved``, as the ``tokenizer.json`` reader assigns them).
    """
    added_ids = {t.content: t.id for t in pipeline.added_tokens}
    for t in pipeline.added_tokens:
        if not t.special or t.single_word or t.lstrip or t.rstrip or t.normalized:
            raise ConfigError(
                f"added token {t.content!r} is not a plain special token; a pipeline with "
                "other added tokens or matching flags: use Tokenizer.from_components"
            )
    tables = model_tables(pipeline.model, added_ids)
    normalizer = pipeline.normalizer
    if isinstance(normalizer, normalizers.Sequence) and not normalizer.normalizers:
        normalizer = None
    if pipeline.post_processor is not None:
        raise ConfigError("a post-processor: use Tokenizer.from_components")
    # A pipeline without a pre-tokenizer has an empty chain (as a file without one).
    chain = pipeline.pre_tokenizer or cp.Sequence([])
    steps = pre_tokenizer_steps(chain)
    specials: list[tuple[SpecialToken, int]] = []
    seen_roles: set[str] = set()
    for t in pipeline.added_tokens:
        if any(s.content == t.content for s, _ in specials):
            continue  # the first entry of a repeated token wins, as in tokenizer.json
        role = roles.get(t.content, "reserved")
        role = "reserved" if role in seen_roles and role not in SHARED_ROLES else role
        seen_roles.add(role)
        specials.append((SpecialToken(t.content, role), t.id))
    return TokenizerSpec.with_pattern(
        tables,
        steps[0][0] if steps and not str(steps[0][1]).startswith("hf:") else "",
        pre_tokenizer=chain,
        special_tokens=specials,
        stages=HfStages(normalizer, cm.options(pipeline.model), pipeline.decoder, False),
    )
