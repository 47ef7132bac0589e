"""Typed exceptions. Every message says what to do next.

All errors derive from :class:`TokenpactError`; the ones caused by a bad argument or
bad data are also ``ValueError`` so callers that catch ``ValueError`` keep working.
"""

from __future__ import annotations

import os
import sys
import warnings


class TokenpactError(Exception):
    """Base class of every tokenpact error."""


class ConfigError(TokenpactError, ValueError):
    """An option or argument is invalid (wrong value, conflicting options)."""


class CapabilityError(ConfigError):
    """The tokenizer's engine lacks the capability a call needs (``capability`` names it,
    a :class:`tokenpact.core.Capability` value): for example n-best lists, sampling and
    likelihoods, which only Unigram models offer."""

    def __init__(self, message: str, capability: str) -> None:
        super().__init__(message)
        self.capability = capability

    def __reduce__(self) -> tuple[type[CapabilityError], tuple[str, str]]:
        return (type(self), (str(self), self.capability))


class InvalidInputError(TokenpactError, ValueError):
    """Input text cannot be processed (for example a lone surrogate)."""


class SpecialTokenError(TokenpactError, ValueError):
    """Text contains a special-token spelling that the call disallowed."""


class UnknownTokenError(TokenpactError, ValueError):
    """A token ID or piece is not in the vocabulary."""


class DecodeError(TokenpactError, ValueError):
    """Decoded bytes are not valid UTF-8 under ``errors="strict"``."""


class TrainingError(TokenpactError, ValueError):
    """Training cannot start or cannot produce the requested tokenizer."""


class ArtifactError(TokenpactError, ValueError):
    """A saved tokenizer file is missing, damaged or inconsistent."""


class ContractError(TokenpactError, ValueError):
    """Hashes, manifests or bindings between artifacts do not agree."""


class ReplayError(ContractError):
    """A replay record (sampler assignment, stochastic segmentation manifest) is missing a
    field, malformed, made for other inputs, or does not reproduce what it records."""


class BatchError(TokenpactError, ValueError):
    """Records cannot be collated into a batch as requested."""


class AddedTokenIdWarning(UserWarning):
    """A ``tokenizer.json`` writes added-token IDs that Hugging Face ``tokenizers``
    reassigns on load; tokenpact uses the reassigned IDs (as ``tokenizers`` does)."""


class LossyWhitespaceWarning(UserWarning):
    """A Unigram model trained with SentencePiece's default ``remove_extra_whitespaces``
    collapses runs of spaces (and strips the ends) of texts that have them: decoding
    does not give those texts back."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Warn with the location of the first frame outside the tokenpact package.

    A fixed ``stacklevel`` points somewhere different for each public entry point that
    reaches the warning (``Tokenizer.load``, ``from_hf``, the registry); walking the stack
    names the user's line whichever path was taken.
    """
    level = 2  # 1 is this function, 2 its caller
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)
