"""Where a stream may be cut under a Unicode normalizer (NFC, NFKC, NFD, NFKD): the
``normalized`` commit rule of :class:`~tokenpact.runtime.StreamingEncoder`.

A normalizer reads context: NFC composes ``e`` with a following U+0301 into ``é``,
Hangul jamo ``ᄀ`` + ``ᅡ`` into ``가``, and every form reorders a run of combining marks.
So the text before a cut is final only when nothing that may still arrive can change its
normalization. Unicode's rule (UAX #15, "stable code points"): a character with
canonical combining class 0 whose quick-check value is Yes for the form starts a new
normalization segment, whatever precedes or follows it: it never composes with what
comes before it (only characters with quick-check Maybe are second parts of a
composition) and combining marks never reorder across it. Cutting right before such a
character, ``N(a + b) == N(a) + N(b)`` for every continuation of ``b``.

Here the property is derived from :mod:`unicodedata` (this Python's Unicode version):
class 0, ``normalize(form, c) == c`` (quick-check not No), not the second character of a
canonical composition (not Maybe; Hangul vowel and trailing jamo included), and
assigned in this Unicode version (an unassigned character may be a combining mark in the
engine's newer tables; combining classes never change once assigned). The engine's own
normalizer (Hugging Face's, gated to its older Unicode data) composes and decomposes a
subset of what this Unicode version does, so every cut found here is a cut for it too.

The cut combines that with the pre-token rule (``Builtin.final_prefix``): the text up to
the last stable character before the held-back limit is normalized (it is the prefix of
the normalized text for every continuation), the final pre-tokens of that are found, and
the raw position where they end is committed when a stable character starts there and
the raw prefix normalizes exactly to those pre-tokens (checked, not assumed).
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Callable
from typing import Literal

from .. import _native
from ..patterns import LLAMA3

__all__ = ["FORMS", "normalized_cut", "proof_pattern", "stable_starter"]

Form = Literal["NFC", "NFKC", "NFD", "NFKD"]
FORMS: frozenset[str] = frozenset({"NFC", "NFKC", "NFD", "NFKD"})

# Split steps ``(pattern, built-in name, behavior, invert)`` whose pre-tokens are every
# match of the pattern, in order (nothing between matches: these patterns match every
# character).
_FINDALL_STEPS = {("Isolated", False), ("Removed", True)}
# Qwen 2/2.5/3's pattern: Llama 3's with single digits (``\p{N}`` for ``\p{N}{1,3}``).
# Llama 3's scanner proves its cuts: the two patterns find the same pre-tokens except
# that Llama 3 groups a digit run by three where Qwen takes each digit (no other
# alternative reads a digit), so every end Llama 3 proves final is a Qwen pre-token end
# that no continuation changes, and the prefix before it splits the same alone.
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
_PROVEN_BY = {QWEN2: "llama3"}
BUILTIN_PROOFS = frozenset({"gpt2", "gpt4", "o200k", "llama3"})


def proof_pattern(steps: list[list[object]] | None) -> str | None:
    """The built-in scanner that proves pre-token cuts for a chain of one split step
    that keeps every match (None: no proof)."""
    if not steps or len(steps) != 1:
        return None
    pattern, name, behavior, invert = (list(steps[0]) + [None, None, None, None])[:4]
    if (behavior, bool(invert)) not in _FINDALL_STEPS:
        return None
    if isinstance(name, str) and name in BUILTIN_PROOFS:
        return name
    return _PROVEN_BY.get(str(pattern))


# Hangul jamo that compose with what precedes them (L + V -> LV, LV + T -> LVT).
_HANGUL_V = range(0x1161, 0x1176)
_HANGUL_T = range(0x11A8, 0x11C3)


@functools.cache
def _composition_seconds() -> frozenset[str]:
    """Characters that are the second part of a canonical composition (quick-check
    Maybe for NFC and NFKC): the last character of every two-character canonical
    decomposition whose composite is not excluded, and the Hangul V and T jamo."""
    seconds = {chr(c) for c in (*_HANGUL_V, *_HANGUL_T)}
    for code in range(sys.maxunicode + 1):
        spec = unicodedata.decomposition(chr(code))
        if not spec or spec.startswith("<"):
            continue
        parts = spec.split()
        composite = chr(code)
        # A composite that NFC does not produce again is excluded (or a singleton).
        if len(parts) == 2 and unicodedata.normalize("NFC", composite) == composite:
            seconds.add(chr(int(parts[1], 16)))
    return frozenset(seconds)


def stable_starter(ch: str, form: Form) -> bool:
    """Whether a normalization segment starts at ``ch`` under ``form`` whatever
    surrounds it (class 0, quick-check Yes, assigned in this Unicode version)."""
    if ch.isascii():
        return True
    if unicodedata.combining(ch) or unicodedata.category(ch) == "Cn":
        return False
    if unicodedata.normalize(form, ch) != ch:
        return False
    return form in ("NFD", "NFKD") or ch not in _composition_seconds()


def normalized_cut(
    buf: str,
    limit: int,
    form: Form,
    normalize: Callable[[str], str],
    proof_pattern: str,
) -> int:
    """Length of the longest prefix of ``buf[:limit]`` whose IDs no continuation can
    change under ``normalize`` (the engine's normalizer for ``form``) followed by a
    byte-level pre-tokenizer that the built-in ``proof_pattern`` proves final; 0 when
    none is proven now."""
    # The last stable character at or before the limit (one that has arrived: the
    # character after the buffer may be a combining mark): the normalized text before
    # it is a prefix of the normalized text for every continuation.
    end = min(limit, len(buf) - 1)
    while end > 0 and not stable_starter(buf[end], form):
        end -= 1
    if end <= 0:
        return 0
    settled = normalize(buf[:end])
    cut = _native.final_pretoken_prefix(settled, proof_pattern)
    if not cut:
        return 0
    if cut == len(settled):
        return end
    # Walk back over the segments (each starts at a stable character, the buffer's
    # start too: the previous commit ended at one) until the normalized length before a
    # segment start is the cut; every segment normalizes alone.
    length, after = len(settled), end
    for at in range(end - 1, -1, -1):
        if at and not stable_starter(buf[at], form):
            continue
        length -= len(normalize(buf[at:after]))
        after = at
        if length == cut:
            # Checked, not assumed: the raw prefix normalizes to the final pre-tokens.
            return at if normalize(buf[:at]) == settled[:cut] else 0
        if length < cut:
            return 0  # the final pre-tokens end inside a segment: wait for more text
    return 0
