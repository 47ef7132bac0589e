"""Tokenizers produced by the Unigram and character BPE trainers.

``UnigramTokenizer`` is a full :class:`~tokenpact.Tokenizer` on the SentencePiece engine
(built from the ``.model`` bytes the trainer writes, exactly as ``from_sentencepiece``
builds one), plus the trainer's lattice (``src/unigram``) for n-best lists, sampling and
likelihoods. ``CharBpeTokenizer`` still wraps a minimal Rust encoder
(``src/py/trainers.rs``): it becomes a Hugging Face pipeline ``Tokenizer`` once the
loader handles BPE with an end-of-word marker; until then it exports ``tokenizer.json``.
WordPiece tokenizers are plain pipeline Tokenizers (see ``train/wordpiece.py``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import _native
from .._io import atomic_write_text
from ..core import Engine, Provenance, TokenizerSpec
from ..errors import ConfigError, InvalidInputError, UnknownTokenError
from ..special import SpecialToken
from ..stochastic import SampleKey
from ..tokenizer import Tokenizer


class TrainedTokenizer:
    """Common surface: pieces, special tokens, the training record."""

    kind = "abstract"

    def __init__(
        self,
        pieces: Sequence[str],
        special_tokens: Sequence[SpecialToken],
        training: dict[str, Any] | None,
    ) -> None:
        self._pieces = list(pieces)
        self._ids = {p: i for i, p in enumerate(self._pieces)}
        self._specials = tuple(special_tokens)
        self._training = training

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)

    @property
    def pieces(self) -> list[str]:
        return list(self._pieces)

    @property
    def special_tokens(self) -> dict[str, int]:
        return {t.content: self._ids[t.content] for t in self._specials}

    @property
    def training(self) -> dict[str, Any] | None:
        return self._training

    def _role_id(self, role: str) -> int | None:
        for t in self._specials:
            if t.role == role:
                return self._ids[t.content]
        return None

    @property
    def unk_id(self) -> int | None:
        return self._role_id("unk")

    def token_id(self, piece: str) -> int:
        try:
            return self._ids[piece]
        except KeyError:
            raise UnknownTokenError(f"{piece!r} is not in the vocabulary") from None

    def id_to_piece(self, token_id: int) -> str:
        if not 0 <= token_id < len(self._pieces):
            raise UnknownTokenError(
                f"ID {token_id} is outside the vocabulary (size {len(self._pieces)})"
            )
        return self._pieces[token_id]

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def _check(self, text: str) -> str:
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be str, got {type(text).__name__}")
        return text

    def to_config(self) -> dict[str, Any]:
        return {
            "model": self.kind,
            "pieces": list(self._pieces),
            "special_tokens": [{"content": t.content, "role": t.role} for t in self._specials],
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} vocab_size={self.vocab_size}>"


class UnigramTokenizer(Tokenizer):
    """Unigram LM tokenizer: SentencePiece encoding plus n-best, sampling and likelihoods.

    Text is normalized by the model's SentencePiece normalizer (rule, whitespace cleanup,
    spaces to ``▁``, one ``▁`` prepended). ``encode`` is the SentencePiece engine on the
    trained ``.model`` (its IDs equal the trainer's Viterbi segmentation); ``nbest``,
    ``sample`` and ``log_likelihood`` run on the trainer's exact lattice over the same
    normalized text, pieces and float32 scores.
    """

    def __init__(
        self,
        spec: TokenizerSpec,
        engine: Engine | None = None,
        provenance: Provenance | None = None,
    ) -> None:
        model = spec.sentencepiece_model
        if model is None or model.trainer_spec.model_type != "unigram":
            kind = spec.kind if model is None else f"{model.trainer_spec.model_type} model"
            raise ConfigError(
                f"a UnigramTokenizer needs a SentencePiece Unigram model, not a {kind}"
            )
        super().__init__(spec, engine, provenance)
        from ..components.sentencepiece import BYTE, NORMAL, UNKNOWN

        self._sp_model = model
        self._pieces = [p.piece for p in model.pieces]
        self._scores = [p.score if p.type == NORMAL else -math.inf for p in model.pieces]
        self._unk = next(i for i, p in enumerate(model.pieces) if p.type == UNKNOWN)
        byte_base = None
        if model.trainer_spec.byte_fallback:
            byte_base = next(i for i, p in enumerate(model.pieces) if p.type == BYTE)
        self._lattice = _native.UnigramCore(self._pieces, self._scores, self._unk, byte_base)

    @classmethod
    def from_model_bytes(
        cls,
        data: bytes,
        *,
        training: dict[str, Any] | None = None,
        label: str | os.PathLike[str] = "<trained unigram model>",
    ) -> UnigramTokenizer:
        """Build from the bytes of a Unigram ``.model`` written by ``train_unigram``."""
        from ..formats.sentencepiece_model import sentencepiece_spec

        spec, provenance = sentencepiece_spec(data, label)
        return cls(spec, provenance=provenance.with_training(training))

    @property
    def pieces(self) -> list[str]:
        """Piece string of every ID (byte pieces as ``<0xNN>``)."""
        return list(self._pieces)

    @property
    def scores(self) -> list[float]:
        """Log probability (float32) per ID; ``-inf`` for specials and byte pieces."""
        return list(self._scores)

    @property
    def unk_id(self) -> int:
        return int(self._unk)

    @property
    def byte_fallback(self) -> bool:
        return bool(self._sp_model.trainer_spec.byte_fallback)

    def id_to_piece(self, token_id: int) -> str:
        if not 0 <= token_id < len(self._pieces):
            raise UnknownTokenError(
                f"ID {token_id} is outside the vocabulary (size {len(self._pieces)})"
            )
        return self._pieces[token_id]

    def _lattice_text(self, text: str) -> str:
        """``text`` as the lattice sees it: normalized by the model's own normalizer
        (rules, whitespace cleanup), then written back with spaces for the lattice's
        metaspace split, so likelihoods, n-best and samples see what ``encode`` sees."""
        _check(text)
        spec = self._sp_model.normalizer_spec
        if not spec.precompiled_charsmap and not spec.remove_extra_whitespaces:
            return text  # the metaspace split is exactly this normalizer
        normalized = str(self._core.normalize(text))
        return normalized.removeprefix(METASPACE).replace(METASPACE, " ")

    def log_likelihood(self, text: str) -> float:
        """log P(text): the exact marginal over all segmentations of every word."""
        return float(self._lattice.log_likelihood(self._lattice_text(text)))

    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]:
        """The ``n`` most probable segmentations with their log probabilities."""
        return [(list(ids), s) for ids, s in self._lattice.nbest(self._lattice_text(text), n)]

    def sample(self, text: str, *, alpha: float = 1.0, key: SampleKey) -> list[int]:
        """Draw a segmentation from P(z)^alpha (forward-filtering backward-sampling).

        The draw is a function of ``(text, key)`` only; see ``tokenpact.stochastic``.
        """
        if not (alpha > 0 and math.isfinite(alpha)):
            raise ConfigError(f"alpha must be a positive number, got {alpha}")
        return list(self._lattice.sample(self._lattice_text(text), alpha, key.fields()))

    def sampling_record(self, alpha: float, key: SampleKey) -> dict[str, Any]:
        """The stochastic segmentation manifest (seed 0x08) of ``sample(text, alpha, key)``;
        :func:`tokenpact.contract.replay_segmentation` recomputes the sample from it."""
        from ..contract.segmentation import segmentation_manifest

        manifest = segmentation_manifest(self, method="unigram_sample", parameter=alpha, key=key)
        return manifest.to_json()


METASPACE = "\u2581"


def _check(text: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be str, got {type(text).__name__}")
    return text


class CharBpeModel(TrainedTokenizer):
    """The character BPE trainer's own encoder (the marker spelled as trained, e.g.
    ``</w>``); decodes to whitespace-normalized text. :class:`CharBpeTokenizer` is the
    full tokenizer built from it, with identical IDs."""

    kind = "char_bpe"

    def __init__(
        self,
        pieces: Sequence[str],
        merges: Sequence[tuple[str, str]],
        special_tokens: Sequence[SpecialToken],
        *,
        end_of_word: str = "</w>",
        lowercase: bool = False,
        training: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(pieces, special_tokens, training)
        unk = self.unk_id
        if unk is None:
            raise ConfigError("a character BPE tokenizer needs a special token with role 'unk'")
        self.merges: list[tuple[str, str]] = [(a, b) for a, b in merges]
        self.end_of_word = end_of_word
        self.lowercase = lowercase
        triples = [(self._ids[a], self._ids[b], self._ids[a + b]) for a, b in self.merges]
        self._core = _native.CharBpeCore(self._pieces, triples, unk, end_of_word, lowercase)

    def encode(self, text: str) -> list[int]:
        return list(self._core.encode(self._check(text)))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._core.decode(list(ids)))

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        config.update(
            merges=[list(m) for m in self.merges],
            end_of_word=self.end_of_word,
            lowercase=self.lowercase,
            split="whitespace",
        )
        return config

    def pipeline(self) -> Any:
        """The components (see ``train.char_bpe.char_bpe_pipeline``)."""
        from .char_bpe import char_bpe_pipeline

        return char_bpe_pipeline(
            self._pieces,
            self.merges,
            self._specials,
            end_of_word=self.end_of_word,
            lowercase=self.lowercase,
        )

    def hf_document(self) -> dict[str, Any]:
        """The ``tokenizer.json`` document of :meth:`pipeline`."""
        return dict(self.pipeline().to_config())

    def export_hf(self, path: str | os.PathLike[str]) -> Path:
        """Write ``tokenizer.json`` atomically; a directory gets ``dir/tokenizer.json``."""
        target = Path(path)
        if target.is_dir() or target.suffix != ".json":
            target = target / "tokenizer.json"
        atomic_write_text(target, json.dumps(self.hf_document(), ensure_ascii=False) + "\n")
        return target


class CharBpeTokenizer(Tokenizer):
    """A trained character BPE :class:`~tokenpact.Tokenizer` (a Hugging Face pipeline with
    the end-of-word marker spelled as the space that ends each word, docs/TRAINERS.md).

    ``model`` is the trainer's own encoder; ``id_to_piece`` and ``char_merges`` spell
    pieces as trained (``low</w>``), the rest of the API is the Tokenizer's.
    """

    def __init__(
        self,
        spec: TokenizerSpec,
        engine: Engine | None = None,
        provenance: Provenance | None = None,
        *,
        model: CharBpeModel,
    ) -> None:
        super().__init__(spec, engine, provenance)
        self.model = model

    @property
    def char_merges(self) -> list[tuple[str, str]]:
        """The merges in training order, spelled as trained."""
        return list(self.model.merges)

    @property
    def unk_id(self) -> int | None:
        return self.model.unk_id

    @property
    def end_of_word(self) -> str:
        return self.model.end_of_word

    def id_to_piece(self, token_id: int) -> str:
        """The piece of ``token_id`` as the trainer spells it (``lo``, ``w</w>``)."""
        return self.model.id_to_piece(token_id)
