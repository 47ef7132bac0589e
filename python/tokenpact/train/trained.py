"""Tokenizers produced by the Unigram and character BPE trainers.

``UnigramTokenizer`` is a full :class:`~tokenpact.Tokenizer` on the SentencePiece engine
(its spec is the typed model the trainer builds, which its ``.model`` bytes parse back
to, so it equals ``from_sentencepiece`` on the saved file), plus the trainer's lattice
(``src/unigram``) for n-best lists, sampling and likelihoods. ``CharBpeTokenizer`` is a
Hugging Face pipeline ``Tokenizer`` (BPE over characters) that also spells its pieces as
trained (``w</w>``). WordPiece tokenizers are plain pipeline Tokenizers (see
``train/wordpiece.py``). No trainer keeps an encoder of its own.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from .. import _native
from ..core import Engine, Provenance, Tokenizer, TokenizerSpec
from ..errors import ConfigError, InvalidInputError, UnknownTokenError
from ..stochastic import SampleKey


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
        """The stochastic segmentation manifest of ``sample(text, alpha, key)``;
        :func:`tokenpact.contract.replay_segmentation` recomputes the sample from it."""
        from ..contract.segmentation import segmentation_manifest

        manifest = segmentation_manifest(self, method="unigram_sample", parameter=alpha, key=key)
        return manifest.to_json()


METASPACE = "\u2581"


def _check(text: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be str, got {type(text).__name__}")
    return text


class CharBpeTokenizer(Tokenizer):
    """A trained character BPE :class:`~tokenpact.Tokenizer` (a Hugging Face pipeline with
    the end-of-word marker spelled as the space that ends each word, docs/TRAINERS.md).

    Its engine is the pipeline's BPE over characters; ``id_to_piece`` and
    ``char_merges`` spell pieces as trained (``low</w>``), the rest of the API is the
    Tokenizer's.
    """

    def __init__(
        self,
        spec: TokenizerSpec,
        engine: Engine | None = None,
        provenance: Provenance | None = None,
        *,
        pieces: Sequence[str],
        merges: Sequence[tuple[str, str]],
        end_of_word: str,
    ) -> None:
        super().__init__(spec, engine, provenance)
        self._char_pieces = tuple(pieces)
        self._char_merges = tuple((a, b) for a, b in merges)
        self._end_of_word = end_of_word

    def _pickle_kwargs(self) -> dict[str, Any]:
        return {
            "pieces": self._char_pieces,
            "merges": self._char_merges,
            "end_of_word": self._end_of_word,
        }

    @property
    def char_pieces(self) -> list[str]:
        """The piece of every model ID, spelled as trained (``w</w>``)."""
        return list(self._char_pieces)

    @property
    def char_merges(self) -> list[tuple[str, str]]:
        """The merges in training order, spelled as trained."""
        return list(self._char_merges)

    @property
    def unk_id(self) -> int | None:
        return self._role_id("unk")

    @property
    def end_of_word(self) -> str:
        return self._end_of_word

    def id_to_piece(self, token_id: int) -> str:
        """The piece of ``token_id`` as the trainer spells it (``lo``, ``w</w>``)."""
        if not 0 <= token_id < len(self._char_pieces):
            raise UnknownTokenError(
                f"ID {token_id} is outside the vocabulary (size {len(self._char_pieces)})"
            )
        return self._char_pieces[token_id]
