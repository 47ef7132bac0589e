"""Tokenizers produced by the Unigram, WordPiece and character BPE trainers.

Each wraps a minimal Rust encoder (``src/py/trainers.rs``): Viterbi for Unigram,
longest match for WordPiece, rank-ordered merges for character BPE. They share the
``Tokenizer`` vocabulary of names (``encode``, ``decode``, ``vocab_size``, ``token_id``,
``training``, ``to_config``) and will be folded into ``Tokenizer`` once the pipeline's
WordPiece and Unigram models exist; saving and export come with that step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .. import _native
from ..errors import ConfigError, InvalidInputError, UnknownTokenError
from ..special import SpecialToken
from ..stochastic import RNG_NAME, SampleKey


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


class UnigramTokenizer(TrainedTokenizer):
    """Unigram LM tokenizer: Viterbi encoding, n-best, sampling, exact likelihoods.

    Text is split SentencePiece-style: spaces become ``▁`` and a ``▁`` is prepended;
    ``decode(encode(x)) == x`` whenever every character is covered (or with byte fallback).
    """

    kind = "unigram"

    def __init__(
        self,
        pieces: Sequence[str],
        scores: Sequence[float],
        special_tokens: Sequence[SpecialToken],
        *,
        byte_fallback: bool,
        training: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(pieces, special_tokens, training)
        self._scores = list(scores)
        unk = self.unk_id
        if unk is None:
            raise ConfigError("a Unigram tokenizer needs a special token with role 'unk'")
        self.byte_fallback = byte_fallback
        byte_base = self._ids["<0x00>"] if byte_fallback else None
        self._core = _native.UnigramCore(self._pieces, self._scores, unk, byte_base)

    @property
    def scores(self) -> list[float]:
        """Log probability per ID (``-inf`` for specials and byte pieces)."""
        return list(self._scores)

    def encode(self, text: str) -> list[int]:
        return list(self._core.encode(self._check(text)))

    def encode_batch(self, texts: Iterable[str], *, threads: int | None = None) -> list[list[int]]:
        return [list(x) for x in self._core.encode_batch(list(texts), threads)]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return bytes(self._core.decode_bytes(list(ids)))

    def decode(self, ids: Sequence[int], errors: str = "strict") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def log_likelihood(self, text: str) -> float:
        """log P(text): the exact marginal over all segmentations of every word."""
        return float(self._core.log_likelihood(self._check(text)))

    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]:
        """The ``n`` most probable segmentations with their log probabilities."""
        return [(list(ids), s) for ids, s in self._core.nbest(self._check(text), n)]

    def sample(self, text: str, *, alpha: float = 1.0, key: SampleKey) -> list[int]:
        """Draw a segmentation from P(z)^alpha (forward-filtering backward-sampling).

        The draw is a function of ``(text, key)`` only; see ``tokenpact.stochastic``.
        """
        if not (alpha > 0 and math.isfinite(alpha)):
            raise ConfigError(f"alpha must be a positive number, got {alpha}")
        return list(self._core.sample(self._check(text), alpha, key.fields()))

    def sampling_record(self, alpha: float, key: SampleKey) -> dict[str, Any]:
        from ..stochastic import replay_record

        return replay_record(
            "unigram_sample", alpha, key, support="full_lattice", path_order="ffbs_end_to_start"
        )

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        config.update(
            scores=[s if math.isfinite(s) else None for s in self._scores],
            byte_fallback=self.byte_fallback,
            split="metaspace",
            rng=RNG_NAME,
        )
        return config


class WordPieceTokenizer(TrainedTokenizer):
    """BERT-style WordPiece: longest match, ``##`` continuations, whole-word unknown."""

    kind = "wordpiece"

    def __init__(
        self,
        vocab: Sequence[str],
        special_tokens: Sequence[SpecialToken],
        *,
        prefix: str = "##",
        lowercase: bool = False,
        max_input_chars_per_word: int = 100,
        training: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(vocab, special_tokens, training)
        unk = self.unk_id
        if unk is None:
            raise ConfigError("a WordPiece tokenizer needs a special token with role 'unk'")
        self.prefix = prefix
        self.lowercase = lowercase
        self.max_input_chars_per_word = max_input_chars_per_word
        self._core = _native.WordPieceCore(
            self._pieces, unk, prefix, max_input_chars_per_word, lowercase
        )

    def encode(self, text: str) -> list[int]:
        return list(self._core.encode(self._check(text)))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._core.decode(list(ids)))

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        config.update(
            continuing_subword_prefix=self.prefix,
            lowercase=self.lowercase,
            max_input_chars_per_word=self.max_input_chars_per_word,
            split="bert",
        )
        return config


class CharBpeTokenizer(TrainedTokenizer):
    """Character BPE with an end-of-word marker; decodes to whitespace-normalized text."""

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
        self.merges = [tuple(m) for m in merges]
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
