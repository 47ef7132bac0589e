"""Compatibility re-export: :class:`Tokenizer` lives in :mod:`tokenpact.core.tokenizer`.

Kept so ``from tokenpact.tokenizer import Tokenizer`` (its former home) keeps
working; new code imports ``tokenpact.Tokenizer`` or ``tokenpact.core.Tokenizer``.
"""

from __future__ import annotations

from .core.tokenizer import KNOWN_ROLES, NATIVE_FILE, SpecialSpec, Tokenizer

__all__ = ["KNOWN_ROLES", "NATIVE_FILE", "SpecialSpec", "Tokenizer"]
