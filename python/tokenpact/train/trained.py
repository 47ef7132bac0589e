"""Tokenizers produced by the Unigram and character BPE trainers.

``UnigramTokenizer`` is a full :class:`~tokenpact.Tokenizer` on the SentencePiece engine
(its spec is the typed model the trainer builds, which its ``.model`` bytes parse back
to, so it equals ``from_sentencepiece`` on the saved file); n-best lists, sampling and
likelihoods are the engine's, as for every Unigram model. ``CharBpeTokenizer`` is a
Hugging Face pipeline ``Tokenizer`` (BPE over characters) that also spells its pieces as
trained (``w</w>``). WordPiece tokenizers are plain pipeline Tokenizers (see
``train/wordpiece.py``). No trainer keeps an encoder of its own.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ..core import Engine, Provenance, Tokenizer, TokenizerSpec, TrainedSpellings
from ..errors import ConfigError, InvalidInputError, UnknownTokenError


class UnigramTokenizer(Tokenizer):
    """A SentencePiece Unigram :class:`~tokenpact.Tokenizer` with its pieces and scores
    at hand (``pieces``, ``scores``, ``unk_id``, ``id_to_piece``).

    ``nbest``, ``sample``, ``samples``, ``log_likelihood`` and ``sampling_record`` are
    the Tokenizer's own: capabilities of the engine of every Unigram model, loaded or
    trained. Deprecated as a class: ``train_unigram`` keeps returning it for one release;
    use :class:`~tokenpact.Tokenizer` and ``tok.spec.sentencepiece_model`` instead.
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
        from ..components.sentencepiece import NORMAL, UNKNOWN

        self._sp_model = model
        self._pieces = [p.piece for p in model.pieces]
        self._scores = [p.score if p.type == NORMAL else -math.inf for p in model.pieces]
        self._unk = next(i for i, p in enumerate(model.pieces) if p.type == UNKNOWN)

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

    def _lattice_text(self, text: str) -> str:
        """``text`` normalized by the model's own normalizer and written back with spaces
        (no dummy prefix): what a metaspace lattice over raw text (the trainer's
        ``_native.UnigramCore``) needs to see what ``encode`` sees. The engine's own
        lattice normalizes by itself; tests that pin the trainer's lattice use this."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be str, got {type(text).__name__}")
        spec = self._sp_model.normalizer_spec
        if not spec.precompiled_charsmap and not spec.remove_extra_whitespaces:
            return text  # the metaspace split is exactly this normalizer
        normalized = str(self.engine.normalize(text))
        return normalized.removeprefix("\u2581").replace("\u2581", " ")

    def id_to_piece(self, token_id: int) -> str:
        if not 0 <= token_id < len(self._pieces):
            raise UnknownTokenError(
                f"ID {token_id} is outside the vocabulary (size {len(self._pieces)})"
            )
        return self._pieces[token_id]


class CharBpeTokenizer(Tokenizer):
    """A trained character BPE :class:`~tokenpact.Tokenizer` (a Hugging Face pipeline with
    the end-of-word marker spelled as the space that ends each word, docs/TRAINERS.md).

    Its engine is the pipeline's BPE over characters; ``id_to_piece`` and
    ``char_merges`` spell pieces as trained (``low</w>``), from the provenance's
    :class:`~tokenpact.core.provenance.TrainedSpellings`; the rest of the API is the
    Tokenizer's. The ``pieces``/``merges``/``end_of_word`` keywords are deprecated (pass
    ``provenance.with_spellings(...)``); they go in a later release.
    """

    def __init__(
        self,
        spec: TokenizerSpec,
        engine: Engine | None = None,
        provenance: Provenance | None = None,
        *,
        pieces: Sequence[str] | None = None,
        merges: Sequence[tuple[str, str]] | None = None,
        end_of_word: str | None = None,
    ) -> None:
        provenance = Provenance() if provenance is None else provenance
        if pieces is not None or merges is not None or end_of_word is not None:
            provenance = provenance.with_spellings(
                TrainedSpellings(tuple(pieces or ()), tuple(merges or ()), end_of_word or "</w>")
            )
        if provenance.spellings is None:
            raise ConfigError(
                "a CharBpeTokenizer needs the trainer's spellings "
                "(provenance.with_spellings(TrainedSpellings(...)))"
            )
        super().__init__(spec, engine, provenance)
        self._spellings: TrainedSpellings = provenance.spellings

    @property
    def char_pieces(self) -> list[str]:
        """The piece of every model ID, spelled as trained (``w</w>``)."""
        return list(self._spellings.pieces)

    @property
    def char_merges(self) -> list[tuple[str, str]]:
        """The merges in training order, spelled as trained."""
        return list(self._spellings.merges)

    @property
    def unk_id(self) -> int | None:
        """The ID of the special token with role ``unk`` (None without one)."""
        return next((i for t, i in self.spec.special_tokens if t.role == "unk"), None)

    @property
    def end_of_word(self) -> str:
        return self._spellings.end_of_word

    def id_to_piece(self, token_id: int) -> str:
        """The piece of ``token_id`` as the trainer spells it (``lo``, ``w</w>``)."""
        pieces = self._spellings.pieces
        if not 0 <= token_id < len(pieces):
            raise UnknownTokenError(f"ID {token_id} is outside the vocabulary (size {len(pieces)})")
        return pieces[token_id]
