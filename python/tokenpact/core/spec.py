"""``TokenizerSpec``: a frozen, typed description of one tokenizer's whole pipeline.

Everything encoding depends on is here: the model (:mod:`.models`), the pre-tokenizer
(one regex, or a typed chain), the normalizer, model options and decoder a pipeline
engine runs, special and added tokens with their matching flags, the post-processor and
the offset options. Every stage is a typed :mod:`tokenpact.components` node: a file's
nodes are read into them (remembering the node's shape), a trainer builds them, and the
engine document and ``to_config()`` are their ``to_config()``. ``to_config()`` is the
canonical config, so the semantic hash is a function of the spec alone. Where a file
came from and its exact bytes are not here: they are the
:class:`~tokenpact.core.Provenance`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

from ..components import pre_tokenizers as cp
from ..components.decoders import Decoder
from ..components.models import Model as ModelNode
from ..components.normalizers import Normalizer
from ..components.processors import PostProcessor, template_node
from ..components.sentencepiece import SentencePieceModel
from ..errors import ConfigError
from ..patterns import resolve_pattern
from ..special import AddedTokenFlags, SpecialToken
from ..truncation import (
    Padding,
    Truncation,
    padding_config,
    padding_from_config,
    truncation_config,
    truncation_from_config,
)
from .literal_text import (
    DEFAULT_LITERAL_TEXT,
    LiteralTextPolicy,
    literal_text_config,
    literal_text_from_config,
)
from .models import HfModel, Model, ModelKind, RankedMerges, SentencePiece, model_from_config_node
from .pickling import Reduced, reduce_frozen
from .split_steps import chain_steps

# Split steps that rewrite the text (ByteLevel's add_prefix_space, Metaspace): pieces of
# a chain that starts with one do not spell the input.
REWRITE_STEPS = ("hf:prefix_space", "hf:metaspace")


@dataclass(frozen=True, eq=False)
class HfStages:
    """The Hugging Face stages a native pipeline engine runs, as typed
    :mod:`tokenpact.components` nodes: the normalizer, the model's options (its node
    without the tables, which are the spec's model) and the decoder, and whether the
    chain ends in ByteLevel. A spec carries them when its engine is the pipeline engine."""

    normalizer: Normalizer | None
    model: ModelNode
    decoder: Decoder | None
    byte_level: bool

    def engine_document(self, tables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the pipeline engine parses: the nodes' ``to_config()``; ``tables`` are
        the model's table fields the engine reads from its node (a Unigram's scores:
        :meth:`TokenizerSpec.engine_document` adds them)."""
        return {
            "normalizer": None if self.normalizer is None else self.normalizer.to_config(),
            "model": {**self.model.to_config(), **(tables or {})},
            "decoder": None if self.decoder is None else self.decoder.to_config(),
            "byte_level": self.byte_level,
        }


# How decode renders control token IDs (TokenizerSpec.special_decode).
SPECIAL_DECODE = ("keep", "ignore", "raise")


@dataclass(frozen=True, eq=False)
class TokenizerSpec:
    """A tokenizer's behaviour, typed and immutable (``Tokenizer(spec, ...)`` runs it).

    ``pattern`` is the regex of a single split (``pattern_name`` when it is a built-in);
    ``pre_tokenizer`` is a typed chain (:mod:`tokenpact.components.pre_tokenizers`; a
    file without one has an empty ``Sequence``), or None for the one regex; the engine
    runs its split steps (:meth:`engine_steps`, derived once). ``stages`` are the typed
    Hugging Face nodes of a pipeline engine; ``post_processor`` is a typed template
    (:class:`~tokenpact.components.processors.Template` or ``PrependBos``).
    ``trim_offsets``/``trim_prefix_space`` are Hugging Face's offset trimming
    (ByteLevel / RobertaProcessing). ``padding``/``truncation`` are the artifact's own
    policy (None: none), the default of ``encode_structured``; they are behaviour, so
    the config and the semantic hash carry them when set. ``literal_text`` is the
    contract's literal-text policy; the config lists it only when it is not the default
    (``ordinary``), so default artifacts keep their hash. ``special_decode`` is how
    ``decode`` renders control (special) token IDs by default: ``"keep"`` writes their
    spellings, ``"ignore"`` drops them (Tekken's rule), ``"raise"`` refuses them; the
    config carries it when it is not ``"keep"``.
    """

    model: Model
    pattern: str = ""
    pattern_name: str | None = None
    pre_tokenizer: cp.PreTokenizer | None = None
    special_tokens: Sequence[tuple[SpecialToken, int]] = ()
    added_tokens: Mapping[str, int] = field(default_factory=dict)
    added_token_flags: Mapping[str, AddedTokenFlags] = field(default_factory=dict)
    post_processor: PostProcessor | None = None
    stages: HfStages | None = None
    trim_offsets: bool = False
    trim_prefix_space: bool = False
    padding: Padding | None = None
    truncation: Truncation | None = None
    literal_text: LiteralTextPolicy = DEFAULT_LITERAL_TEXT
    special_decode: str = "keep"

    def __post_init__(self) -> None:
        if self.special_decode not in SPECIAL_DECODE:
            raise ConfigError(
                f"special_decode must be one of {SPECIAL_DECODE}, got {self.special_decode!r}"
            )
        # Read-only views: a spec is shared by every tokenizer built from it.
        freeze = object.__setattr__
        # A post-processor given as its config dict (the old form) becomes its node.
        freeze(self, "post_processor", template_node(self.post_processor))
        freeze(self, "special_tokens", tuple(self.special_tokens))
        freeze(self, "added_tokens", MappingProxyType(dict(self.added_tokens)))
        freeze(self, "added_token_flags", MappingProxyType(dict(self.added_token_flags)))

    def __reduce__(self) -> Reduced:
        """Pickle as the constructor's arguments (:func:`.pickling.reduce_frozen`): how
        the spec reaches worker processes (the Ray engine, a pickled Tokenizer), ~100x
        cheaper than a ``tokenpact.json`` round trip."""
        return reduce_frozen(self)

    @classmethod
    def with_pattern(cls, model: Model, pattern: str, **fields: Any) -> TokenizerSpec:
        """A spec whose pre-tokenizer is one regex: a built-in name or a user regex."""
        name, source = resolve_pattern(pattern)
        return cls(model, pattern=source, pattern_name=name, **fields)

    def replace(self, **changes: Any) -> TokenizerSpec:
        return replace(self, **changes)

    # ------------------------------------------------------------------ questions
    @property
    def kind(self) -> ModelKind:
        return self.model.kind

    @property
    def normalizer(self) -> Normalizer | None:
        """The normalizer the engine applies (a typed node; None: none)."""
        return None if self.stages is None else self.stages.normalizer

    @property
    def hf_model(self) -> dict[str, Any] | None:
        """The Hugging Face model node of a pipeline spec (its ``tokenizer.json`` model
        without the vocabulary: ``type``, ``unk_token``, ``continuing_subword_prefix``,
        ...; a character BPE's merge records and a Unigram's scores included), None for
        other specs. Derived from the typed ``stages.model`` and the model's tables."""
        if self.stages is None:
            return None
        return {**self.stages.model.to_config(), **self._model_tables()}

    @cached_property
    def normalizer_json(self) -> str | None:
        """The normalizer's node as the JSON text the native normalizer parses (built
        once per spec; None: no normalizer)."""
        node = self.normalizer
        return None if node is None else json.dumps(node.to_config())

    def _model_tables(self) -> dict[str, Any]:
        if isinstance(self.model, HfModel) and self.stages is not None:
            return self.model.table_fields({"type": self.stages.model.TYPE})
        return {}

    def engine_document(self) -> dict[str, Any] | None:
        """What the pipeline engine parses (None without stages): the typed nodes'
        ``to_config()`` and the model tables its node carries (a Unigram's scores)."""
        if self.stages is None:
            return None
        tables = self._model_tables()
        tables.pop("records", None)  # the engine takes merge records as a table
        return self.stages.engine_document(tables)

    @property
    def pretokenizes_on_engine(self) -> bool:
        """Whether pre-tokenization is a chain only the engine can run (a pipeline or
        explicit split steps) rather than one regex."""
        return self.stages is not None or self.pre_tokenizer is not None

    @property
    def sentencepiece_model(self) -> SentencePieceModel | None:
        """The SentencePiece model of a SentencePiece spec, else None."""
        return self.model.model if isinstance(self.model, SentencePiece) else None

    @property
    def merge_ranks(self) -> Sequence[tuple[int, int]] | None:
        """The ranked merges of a ``merge_ranks`` model, else None."""
        return self.model.merges if isinstance(self.model, RankedMerges) else None

    def rewrites_text(self) -> bool:
        """Whether the pre-tokenizer chain holds a text rewrite (the loader only accepts
        one first in the chain): its pieces then do not spell the input."""
        steps = self._split_steps or ()
        return any(str(step[1] or "").startswith(REWRITE_STEPS) for step in steps)

    @property
    def pieces_spell_input(self) -> bool:
        """Whether the byte pieces of the IDs concatenate to the input text (byte-level
        BPE without normalizer or text rewrite); otherwise offsets come from the engine."""
        return self.kind.byte_level and self.stages is None and not self.rewrites_text()

    def engine_specials(self) -> list[tuple[str, int]]:
        """Every added token the engine's matcher knows: specials, then the others."""
        return [(t.content, i) for t, i in self.special_tokens] + sorted(self.added_tokens.items())

    def control_ids(self) -> list[int]:
        """IDs of the control (special) tokens: the engine keeps them out of segmentation,
        so only a trusted insertion or an allowed spelling ever produces one."""
        return [i for _, i in self.special_tokens]

    @cached_property
    def _split_steps(self) -> tuple[tuple[Any, ...], ...] | None:
        # Derived once per spec from the typed chain (the reader validated it).
        if self.pre_tokenizer is None:
            return None
        steps, _ = chain_steps(self.pre_tokenizer)
        return tuple(tuple(step) for step in steps)

    def engine_steps(self) -> list[tuple[Any, ...]] | None:
        """The split steps ``(source, name, behaviour, invert)`` the engine runs for the
        typed pre-tokenizer chain (None: the one regex)."""
        steps = self._split_steps
        return None if steps is None else list(steps)

    def engine_pattern(self) -> tuple[str, str | None, list[tuple[Any, ...]] | None]:
        """``(pattern, name, steps)`` as the byte-level engines take them: the first
        split step of an explicit chain, else the one regex."""
        steps = self.engine_steps()
        if steps is None:
            return self.pattern, self.pattern_name, None
        return (steps[0][0], steps[0][1], steps) if steps else ("", None, steps)

    def vocab(self) -> list[bytes]:
        """Byte piece of every model ID (special tokens excluded)."""
        return self.model.vocab(self)

    # ------------------------------------------------------------------ canonical form
    def to_config(self) -> dict[str, Any]:
        """Canonical description of the behaviour (what the semantic hash covers)."""
        config = self._model_config()
        # The padding/truncation policy is listed only when one is set, so artifacts
        # without one keep their hash; two that pad differently never share one.
        if self.padding is not None:
            config["padding"] = padding_config(self.padding)
        if self.truncation is not None:
            config["truncation"] = truncation_config(self.truncation)
        if self.literal_text != DEFAULT_LITERAL_TEXT:
            config["literal_text"] = literal_text_config(self.literal_text)
        # Listed only when not the default, so every other tokenizer keeps its hash.
        if self.special_decode != "keep":
            config["special_decode"] = self.special_decode
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TokenizerSpec:
        """The spec whose :meth:`to_config` is ``config``, for the models a config
        describes completely (ranked merges, tiktoken ranks: ``models.describes_completely``)
        with one regex split. ``config`` must be well formed: ``tokenpact.json``'s reader
        checks a file field by field first. Special tokens are taken in ID order."""
        pre = config["pre_tokenizer"]
        if pre is None or pre.get("type") != "regex_split":
            raise ConfigError(
                "only a config whose pre-tokenizer is one regex split can be rebuilt; load "
                "this tokenizer from its source file"
            )
        specials = sorted(
            ((SpecialToken(t["content"], t["role"]), t["id"]) for t in config["special_tokens"]),
            key=lambda pair: pair[1],
        )
        flags = {
            f["content"]: AddedTokenFlags(**{k: f[k] for k in AddedTokenFlags._fields})
            for f in config.get("added_token_flags", ())
        }
        padding, truncation = config.get("padding"), config.get("truncation")
        literal = config.get("literal_text")
        literal_text = literal_text_from_config(literal) if literal else DEFAULT_LITERAL_TEXT
        return cls(
            model_from_config_node(config["model"]),
            pattern=pre["pattern"],
            pattern_name=pre["name"],
            special_tokens=specials,
            added_tokens={t["content"]: t["id"] for t in config.get("added_tokens", ())},
            added_token_flags=flags,
            post_processor=config["post_processor"],
            padding=None if padding is None else padding_from_config(padding),
            truncation=None if truncation is None else truncation_from_config(truncation),
            literal_text=literal_text,
            special_decode=config.get("special_decode", "keep"),
        )

    def _model_config(self) -> dict[str, Any]:
        if isinstance(self.model, SentencePiece):
            return self.model.config(self)
        stages = self.stages
        extra: dict[str, Any] = {}
        if stages is not None and stages.normalizer is not None:
            extra["normalizer"] = stages.normalizer.to_config()
        if self.added_tokens:
            # Non-special added tokens are behaviour too (matched in every call's text);
            # listed only when present, so tokenizers without them keep their hash.
            extra["added_tokens"] = [
                {"id": i, "content": c}
                for c, i in sorted(self.added_tokens.items(), key=lambda x: x[1])
            ]
        if self.added_token_flags:
            # Only flagged tokens are listed, so tokenizers without flags keep their hash.
            ids = {**self.added_tokens, **{t.content: i for t, i in self.special_tokens}}
            extra["added_token_flags"] = [
                {"id": ids[content], "content": content, **flags._asdict()}
                for content, flags in self.added_token_flags.items()
            ]
        regex_split = self.pre_tokenizer is None or not (stages or self.rewrites_text())
        # A chain is listed as its split steps (what the hash has always covered).
        steps = [list(step) for step in self._split_steps or ()]
        return {
            "format": "tokenpact.tokenizer",
            "format_version": 1,
            **extra,
            "pre_tokenizer": {
                "type": "regex_split",
                "name": self.pattern_name,
                "pattern": self.pattern,
            }
            if regex_split
            else {"type": "sequence", "steps": steps},
            "model": self.model.config_node(self),
            "special_tokens": [
                {"id": i, "content": t.content, "role": t.role} for t, i in self.special_tokens
            ],
            "post_processor": self.post_processor.to_config() if self.post_processor else None,
            "decoder": stages.decoder.to_config()
            if stages is not None and stages.decoder is not None
            else {"type": "byte_level"},
        }


__all__ = ["HfModel", "HfStages", "ModelKind", "TokenizerSpec"]
