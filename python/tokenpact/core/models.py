"""The model of a tokenizer as a typed description: which native engine runs it, what
tables it needs, and the ``model`` node of its canonical config.

One class per model family replaces the old ``semantics`` string tag; :class:`ModelKind`
keeps the tag's spelling (``Tokenizer.semantics``, the canonical config) and answers the
questions code used to ask by comparing strings.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .. import _native
from ..components.sentencepiece import CONTROL, NormalizerSpec, SentencePieceModel
from ..errors import ConfigError

if TYPE_CHECKING:
    from .spec import TokenizerSpec


class ModelKind(str, Enum):
    """The merge or segmentation semantics of a model (the value is the canonical tag)."""

    MERGE_RANKS = "merge_ranks"
    MERGE_RECORDS = "merge_records"
    TIKTOKEN_RANKS = "tiktoken_ranks"
    SENTENCEPIECE = "sentencepiece"
    HF_PIPELINE = "hf_pipeline"

    def __str__(self) -> str:
        return self.value

    @property
    def byte_level(self) -> bool:
        """Pieces are raw bytes (GPT-2's byte-level alphabet when spelled as strings)."""
        return self in (ModelKind.MERGE_RANKS, ModelKind.MERGE_RECORDS, ModelKind.TIKTOKEN_RANKS)

    @property
    def pipeline_engine(self) -> bool:
        """Runs on the native pipeline engine (normalizer, pre-tokenizer chain, any
        byte-level or Hugging Face model) rather than SentencePiece's own engine: the
        engine whose streaming encoder runs every cut rule but ``sentencepiece``."""
        return self is not ModelKind.SENTENCEPIECE

    @property
    def trims_byte_level_spaces(self) -> bool:
        """Offset trimming counts a piece's spaces in its bytes (HF byte-level BPE)."""
        return self is ModelKind.MERGE_RECORDS


# The model kinds whose pieces are the exact bytes a token decodes to, by canonical tag
# (``tok.semantics``), for callers that hold a tag; with a tokenizer, ask
# ``tok.spec.kind.byte_level``.
BYTE_LEVEL_SEMANTICS = frozenset(k.value for k in ModelKind if k.byte_level)


def vocab_from_merges(merges: Sequence[tuple[int, int]]) -> list[bytes]:
    """Bytes of every ID of a ranked-merge model, as a list by ID: the reference's rule
    (:func:`tokenpact.reference.vocab_from_merges`: 256 single bytes, then one
    concatenation per merge; a merge may only use base bytes or earlier merges,
    ConfigError otherwise)."""
    # Imported on use: the reference package (and its regex pre-tokenizer) is not needed
    # to import the core.
    from ..reference.bpe import vocab_from_merges as reference_vocab

    return list(reference_vocab(merges).values())


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def hold_as_tuples(model: Any, *fields: str) -> None:
    """Store the vocabulary-sized sequences of a (frozen) model as tuples. A loaded
    tokenizer lives as long as the process, and Python's cyclic GC walks every item of a
    list on each full collection (Llama 3's 280,000 merge records and 128,000 pieces made
    one take about 18 ms, during every long batch); a tuple of ints or bytes leaves the
    GC's tracking after one collection and is never walked again."""
    for name in fields:
        value = getattr(model, name)
        if type(value) is not tuple:
            object.__setattr__(model, name, tuple(value))


@dataclass(frozen=True, eq=False)
class RankedMerges:
    """Byte-level BPE from ranked merges: merge ``r`` creates ID ``256 + r`` (ours)."""

    merges: Sequence[tuple[int, int]]
    kind: ClassVar[ModelKind] = ModelKind.MERGE_RANKS

    def __post_init__(self) -> None:
        hold_as_tuples(self, "merges")

    def vocab(self, spec: TokenizerSpec) -> list[bytes]:
        return vocab_from_merges(self.merges)

    def engine(self, spec: TokenizerSpec) -> Any:
        pattern, name, steps = spec.engine_pattern()
        return _native.BpeCore.from_merges(
            list(self.merges),
            pattern,
            name,
            spec.engine_specials(),
            steps,
            controls=spec.control_ids(),
        )

    @classmethod
    def from_config_node(cls, node: Mapping[str, Any]) -> RankedMerges:
        """The model whose config node is ``node`` (the vocabulary is derived)."""
        return cls([(int(left), int(right)) for left, right in node["merges"]])

    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]:
        return {
            "type": "byte_bpe",
            "semantics": "merge_ranks",
            "merges": [list(m) for m in self.merges],
            "vocab": [p.hex() for p in self.vocab(spec)],
        }


@dataclass(frozen=True, eq=False)
class MergeRecords:
    """Byte-level BPE from explicit merge records ``(left, right, new_id)`` in rank
    order (Hugging Face's BPE over GPT-2's byte alphabet); ``vocab[i]`` is ID ``i``'s bytes."""

    vocab_pieces: Sequence[bytes]
    records: Sequence[tuple[int, int, int]]
    ignore_merges: bool = False
    kind: ClassVar[ModelKind] = ModelKind.MERGE_RECORDS

    def __post_init__(self) -> None:
        hold_as_tuples(self, "vocab_pieces", "records")

    def vocab(self, spec: TokenizerSpec) -> list[bytes]:
        return list(self.vocab_pieces)

    def engine(self, spec: TokenizerSpec) -> Any:
        pattern, name, steps = spec.engine_pattern()
        return _native.BpeCore.from_records(
            list(self.vocab_pieces),
            list(self.records),
            pattern,
            name,
            spec.engine_specials(),
            steps,
            self.ignore_merges,
            controls=spec.control_ids(),
        )

    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]:
        return {
            "type": "byte_bpe",
            "semantics": "merge_records",
            "records": [list(r) for r in self.records],
            "vocab": [p.hex() for p in self.vocab_pieces],
        }


@dataclass(frozen=True, eq=False)
class TiktokenRanks:
    """tiktoken's rank BPE: ``ranks[r]`` is the bytes of rank ``r``, which is ID
    ``id_offset + r`` (Tekken files put their special tokens below the ranks)."""

    ranks: Sequence[bytes]
    id_offset: int = 0
    kind: ClassVar[ModelKind] = ModelKind.TIKTOKEN_RANKS

    def __post_init__(self) -> None:
        hold_as_tuples(self, "ranks")

    def vocab(self, spec: TokenizerSpec) -> list[bytes]:
        if not self.id_offset:
            return list(self.ranks)
        # IDs below the offset are the special tokens' own rows (their spellings).
        reserved = [b""] * self.id_offset
        for token, i in spec.special_tokens:
            if i < self.id_offset:
                reserved[i] = token.content.encode("utf-8")
        return reserved + list(self.ranks)

    def engine(self, spec: TokenizerSpec) -> Any:
        pattern, name, steps = spec.engine_pattern()
        return _native.BpeCore.from_ranks(
            list(self.ranks),
            pattern,
            name,
            spec.engine_specials(),
            steps,
            id_offset=self.id_offset,
            controls=spec.control_ids(),
        )

    @classmethod
    def from_config_node(cls, node: Mapping[str, Any]) -> TiktokenRanks:
        """The model whose config node is ``node`` (no ID offset: with one, the config's
        ranks would begin with the special tokens' rows)."""
        ranks = node["ranks"]
        try:
            return cls([base64.b64decode(piece, validate=True) for piece in ranks])
        except ValueError:  # binascii.Error
            bad = next(i for i, p in enumerate(ranks) if not _is_base64(p))
            raise ConfigError(f"model.ranks[{bad}]: {ranks[bad]!r} is not valid base64") from None

    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]:
        return {
            "type": "byte_bpe",
            "semantics": "tiktoken_ranks",
            "ranks": [base64.b64encode(p).decode("ascii") for p in self.vocab(spec)],
        }


@dataclass(frozen=True, eq=False)
class HfModel:
    """A Hugging Face model over strings (WordPiece, WordLevel, Unigram, BPE over
    characters), run by the native pipeline engine.

    These are the model's tables: ``pieces`` are the UTF-8 pieces by ID, ``records`` the
    merge records of a character BPE and ``scores`` the log probabilities of a Unigram
    (empty otherwise). The model's options (``type``, ``unk_token``,
    ``continuing_subword_prefix``, ...) are the typed node ``HfStages.model`` of the spec.
    """

    pieces: Sequence[bytes]
    records: Sequence[tuple[int, int, int]] = ()
    scores: Sequence[float] = ()
    kind: ClassVar[ModelKind] = ModelKind.HF_PIPELINE

    def __post_init__(self) -> None:
        hold_as_tuples(self, "pieces", "records", "scores")

    def vocab(self, spec: TokenizerSpec) -> list[bytes]:
        return list(self.pieces)

    def engine(self, spec: TokenizerSpec) -> Any:
        # Only the pipeline engine runs these: a spec carries them with its stages.
        raise ConfigError(
            "a model over strings runs on the pipeline engine; give the spec its Hugging "
            "Face stages (HfStages)"
        )

    def table_fields(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """What the tables add to the model node ``options``: a Unigram's scores as
        shortest decimal strings (exact f64s; canonical JSON has no floats), the merge
        records of a character BPE (behaviour, so the config keeps them)."""
        if options.get("type") == "Unigram":
            return {"scores": [repr(score) for score in self.scores]}
        if options.get("type") == "BPE":
            return {"records": [list(r) for r in self.records]}
        return {}

    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]:
        return {
            **(spec.hf_model or {}),
            "vocab": [bytes(p).decode("utf-8", "replace") for p in self.pieces],
        }


@dataclass(frozen=True, eq=False)
class SentencePiece:
    """A SentencePiece Unigram or BPE model with its normalizer (the whole ``.model``)."""

    model: SentencePieceModel
    kind: ClassVar[ModelKind] = ModelKind.SENTENCEPIECE

    def vocab(self, spec: TokenizerSpec) -> list[bytes]:
        return [p.piece.encode("utf-8") for p in self.model.pieces]

    @property
    def model_type(self) -> str:
        return self.model.trainer_spec.model_type

    def control_pieces(self) -> list[tuple[int, str]]:
        return [(i, p.piece) for i, p in enumerate(self.model.pieces) if p.type == CONTROL]

    def roles(self) -> dict[int, str]:
        """Roles of CONTROL pieces, the way SentencePiece resolves ``bos_id()`` and friends."""
        ts = self.model.trainer_spec
        by_piece = {p.piece: i for i, p in enumerate(self.model.pieces)}
        roles: dict[int, str] = {}
        for role, piece in (("bos", ts.bos_piece), ("eos", ts.eos_piece), ("pad", ts.pad_piece)):
            i = by_piece.get(piece)
            if i is not None and self.model.pieces[i].type == CONTROL:
                roles.setdefault(i, role)
        return roles

    def engine(self, spec: TokenizerSpec) -> Any:
        """The native SentencePiece engine (normalizer, trie, Viterbi or BPE, decoder)."""
        m, ts = self.model, self.model.trainer_spec
        denorm = m.denormalizer_spec
        return _native.SentencePieceCore(
            [x.piece.encode("utf-8") for x in m.pieces],
            [x.score for x in m.pieces],
            [x.type for x in m.pieces],
            ts.model_type,
            ts.byte_fallback,
            _norm_args(m.normalizer_spec, ts.treat_whitespace_as_suffix),
            _norm_args(denorm, False) if denorm.precompiled_charsmap else None,
            ts.unk_surface.encode("utf-8"),
        )

    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]:
        model, ts = self.model, self.model.trainer_spec
        return {
            "type": f"sentencepiece_{ts.model_type}",
            "semantics": "sentencepiece",
            "pieces": [x.piece for x in model.pieces],
            "scores": [struct.unpack("<I", struct.pack("<f", x.score))[0] for x in model.pieces],
            "types": [x.type_name for x in model.pieces],
            "byte_fallback": ts.byte_fallback,
        }

    def config(self, spec: TokenizerSpec) -> dict[str, Any]:
        """The whole canonical config (a SentencePiece model owns its normalizer and
        decoder). Scores are the IEEE-754 bit patterns of the file's float32 values
        (canonical JSON has no floats, and these bits are what Viterbi and BPE compare)."""
        model, ts = self.model, self.model.trainer_spec
        denorm = model.denormalizer_spec
        return {
            "format": "tokenpact.tokenizer",
            "format_version": 1,
            "normalizer": _norm_config(model.normalizer_spec, ts.treat_whitespace_as_suffix),
            "pre_tokenizer": None,
            "model": self.config_node(spec),
            "special_tokens": [
                {"id": i, "content": t.content, "role": t.role} for t, i in spec.special_tokens
            ],
            "post_processor": spec.post_processor.to_config() if spec.post_processor else None,
            "decoder": {
                "type": "sentencepiece",
                "unk_surface": ts.unk_surface,
                "denormalizer": _norm_config(denorm, False)
                if denorm.precompiled_charsmap
                else None,
            },
        }


def _norm_args(spec: NormalizerSpec, suffix: bool) -> tuple[bytes, bool, bool, bool, bool]:
    return (
        spec.precompiled_charsmap,
        spec.add_dummy_prefix,
        spec.remove_extra_whitespaces,
        spec.escape_whitespaces,
        suffix,
    )


def _norm_config(spec: NormalizerSpec, suffix: bool) -> dict[str, Any]:
    return {
        "type": "sentencepiece",
        "name": spec.name,
        "precompiled_charsmap": base64.b64encode(spec.precompiled_charsmap).decode("ascii"),
        "add_dummy_prefix": spec.add_dummy_prefix,
        "remove_extra_whitespaces": spec.remove_extra_whitespaces,
        "escape_whitespaces": spec.escape_whitespaces,
        "treat_whitespace_as_suffix": suffix,
    }


class Model(Protocol):
    """What a model description offers: its kind, its pieces, the ``model`` node of the
    canonical config and the native engine that runs it (a new model family is one
    class with these four members; see docs/ARCHITECTURE.md)."""

    @property
    def kind(self) -> ModelKind: ...
    def vocab(self, spec: TokenizerSpec) -> list[bytes]: ...
    def config_node(self, spec: TokenizerSpec) -> dict[str, Any]: ...
    def engine(self, spec: TokenizerSpec) -> Any: ...


BUILT_IN_MODELS = (RankedMerges, MergeRecords, TiktokenRanks, HfModel, SentencePiece)


def describes_completely(model: Model) -> bool:
    """Whether the ``model`` node of the canonical config holds the whole model, so
    :func:`model_from_config_node` rebuilds it: ranked merges, and tiktoken ranks without
    an ID offset. Merge records, SentencePiece and Hugging Face models need their
    source file (their nodes leave out flags that are read from it)."""
    if isinstance(model, TiktokenRanks):
        return not model.id_offset
    return isinstance(model, RankedMerges)


def model_from_config_node(node: Mapping[str, Any]) -> RankedMerges | TiktokenRanks:
    """The model whose canonical ``model`` node is ``node`` (:func:`describes_completely`)."""
    semantics = node.get("semantics")
    if node.get("type") == "byte_bpe" and semantics == ModelKind.MERGE_RANKS:
        return RankedMerges.from_config_node(node)
    if node.get("type") == "byte_bpe" and semantics == ModelKind.TIKTOKEN_RANKS:
        return TiktokenRanks.from_config_node(node)
    raise ConfigError(
        f"a {node.get('type')!r} model with semantics {semantics!r} cannot be rebuilt from "
        "its config; load it from its source file"
    )
