"""Typed components lowered to a :class:`~tokenpact.core.TokenizerSpec`.

A pipeline of :mod:`tokenpact.components` nodes (a model over strings: WordPiece,
WordLevel, Unigram, BPE over characters) becomes the parts the native pipeline engine
runs: split steps, the model's pieces and merge records, its Hugging Face stages. The
step vocabulary (``hf:whitespace_split``, ``hf:metaspace_always``, ...) is written here
once: the ``tokenizer.json`` reader (``formats/hf_json.py``) validates a file's nodes and
then builds its steps with these same functions, so a trainer's spec (built from
components, no file in between) and the spec of the file it saves are the same.

Byte-level BPE is not lowered here: its models are :class:`~tokenpact.core.MergeRecords`
or :class:`~tokenpact.core.RankedMerges` (``core/byte_bpe.py``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from ..components import Pipeline, Regex
from ..components import models as cm
from ..components import pre_tokenizers as cp
from ..errors import ConfigError
from ..patterns import resolve_pattern
from ..special import SHARED_ROLES, SpecialToken
from .models import HfModel
from .spec import HfStages, TokenizerSpec

# HF pre-tokenizer type -> (engine scanner, split behaviour) of the character-class
# scanners without options.
SCANNERS = {
    "Whitespace": ("hf:whitespace", "matches_only"),
    "WhitespaceSplit": ("hf:whitespace_split", "matches_only"),
    "BertPreTokenizer": ("hf:bert", "matches_only"),
}


def scanner_step(
    kind: str, *, behavior: str = "Isolated", individual_digits: bool = False, delimiter: str = ""
) -> list[Any] | None:
    """Engine step ``[source, name, behaviour, invert]`` of a character-class
    pre-tokenizer (None when ``kind`` is not one). ``delimiter`` is one character."""
    if kind in SCANNERS:
        name, how = SCANNERS[kind]
        return ["", name, how, False]
    if kind == "Punctuation":
        return ["", "hf:punct", behavior, False]
    if kind == "Digits":
        return ["", "hf:numeric", "Isolated" if individual_digits else "Contiguous", False]
    if kind == "CharDelimiterSplit":
        return [delimiter, "hf:delim", "Removed", False]
    return None


def split_step(regex: str, behavior: str, invert: bool) -> list[Any]:
    """Engine step of a ``Split`` on the regex source ``regex`` (a literal ``String``
    pattern arrives escaped); a built-in pattern's source runs its hand-written scanner."""
    name, source = resolve_pattern(regex)
    return [source, name, behavior, invert]


def metaspace_steps(replacement: str, scheme: str, split: bool) -> list[list[Any]]:
    """Engine steps of ``Metaspace``: the rewrite, then (``split``) the split on its char."""
    steps = [[replacement, f"hf:metaspace_{scheme}", "Isolated", False]]
    if split:
        steps.append([replacement, "hf:delim", "MergedWithNext", False])
    return steps


def pre_tokenizer_steps(node: cp.PreTokenizer | None) -> list[list[Any]]:
    """Engine steps of a typed pre-tokenizer over strings (no ByteLevel)."""
    if node is None:
        return []
    items = list(node.pretokenizers) if isinstance(node, cp.Sequence) else [node]
    steps: list[list[Any]] = []
    for i, item in enumerate(items):
        if isinstance(item, cp.Split):
            pattern = item.pattern
            regex = pattern.pattern if isinstance(pattern, Regex) else re.escape(pattern)
            steps.append(split_step(regex, item.behavior, item.invert))
        elif isinstance(item, cp.Metaspace):
            if i > 0:
                raise ConfigError("Metaspace rewrites the text: put it first in the sequence")
            steps += metaspace_steps(item.replacement, item.prepend_scheme, item.split)
        else:
            step = scanner_step(
                item.TYPE,
                behavior=str(getattr(item, "behavior", "Isolated")),
                individual_digits=bool(getattr(item, "individual_digits", False)),
                delimiter=str(getattr(item, "delimiter", "")),
            )
            if step is None:
                raise ConfigError(
                    f"pre-tokenizer {item.TYPE} is not lowered to a spec over strings "
                    "(byte-level BPE: build it with Tokenizer.from_components)"
                )
            steps.append(step)
    return steps


def model_parts(
    model: cm.Model, added: Mapping[str, int]
) -> tuple[dict[str, Any], list[bytes], list[tuple[int, int, int]]]:
    """The model node the engine reads (no vocabulary or merges), the UTF-8 piece of
    every ID and the merge records (BPE over characters; empty otherwise). IDs without a
    vocabulary entry take the added token with that ID."""
    # The node's options, in the file's key order; the tables travel apart (not copied).
    node: dict[str, Any] = {"type": model.TYPE}
    for f in dataclasses.fields(model):
        if f.name not in ("vocab", "merges"):
            node[f.name] = getattr(model, f.name)
    records: list[tuple[int, int, int]] = []
    if isinstance(model, cm.BPE):
        from .. import _native

        pieces, records = _native.hf_byte_level_tables(
            model.vocab,
            model.merges,
            sorted(added.items()),
            model.continuing_subword_prefix or "",
        )
        return node, pieces, records
    if isinstance(model, cm.Unigram):
        # Scores as shortest decimal strings (exact f64s; canonical JSON has no floats).
        node["scores"] = [repr(score) for _, score in model.vocab]
        return node, [piece.encode("utf-8") for piece, _ in model.vocab], records
    if not isinstance(model, cm.WordPiece | cm.WordLevel):
        raise ConfigError(f"model {model.TYPE} is not lowered to a spec over strings")
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
    return node, [str(p).encode("utf-8") for p in by_id], records


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
    node, pieces, records = model_parts(pipeline.model, added_ids)
    normalizer = None if pipeline.normalizer is None else pipeline.normalizer.to_config()
    if (
        normalizer is not None
        and normalizer["type"] == "Sequence"
        and not normalizer["normalizers"]
    ):
        normalizer = None
    decoder = None if pipeline.decoder is None else pipeline.decoder.to_config()
    if pipeline.post_processor is not None:
        raise ConfigError("a post-processor: use Tokenizer.from_components")
    steps = pre_tokenizer_steps(pipeline.pre_tokenizer)
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
        HfModel(node, pieces, records),
        steps[0][0] if steps and not str(steps[0][1]).startswith("hf:") else "",
        pre_tokenizer={"type": "sequence", "steps": steps},
        special_tokens=specials,
        stages=HfStages(normalizer, node, decoder, False),
    )
