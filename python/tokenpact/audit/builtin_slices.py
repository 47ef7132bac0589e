"""Slices computed from the text itself: no record field needed.

A tokenizer audit should report code, numbers, URLs, emoji, mixed scripts, length
bands and quality-score bands as slices of their own, even when the corpus carries no
field that names them. Each built-in slice is a partition of the records (every record
gets exactly one value), so its totals add up to the overall totals like any field's:

``@code``
    ``code`` when at least 30% of the non-empty lines (and at least one) look like source
    code (a line ending in ``{``, ``}``, ``;`` or ``):``, starting with a keyword such as
    ``def``, ``import``, ``#include``, ``return``, ``fn``, a block header such as
    ``if ...:``, an assignment ``name = ...``, a lone call ``name(...)``, or an operator
    such as ``==``, ``=>``, ``->``, ``::``, ``&&``), else ``prose``.
``@numbers`` / ``@urls`` / ``@emoji``
    ``with_numbers`` when the text holds a digit (any ``\\p{Nd}``), ``with_urls`` when it
    holds ``http(s)://`` or ``www.``, ``with_emoji`` when it holds an emoji-presentation
    character (or a pictograph with U+FE0F); ``without_...`` otherwise.
``@scripts``
    ``mixed`` when letters of two or more writing systems each make at least 10% of the
    letters (Han, Hiragana and Katakana are one writing system, as are Hangul and Han),
    ``single`` when one does, ``no_letters`` without letters. A letter's script is the
    first word of its Unicode name (``CYRILLIC SMALL LETTER A``).
``@length``
    UTF-8 byte bands: ``1: <64 B``, ``2: 64-511 B``, ``3: 512 B-4 KiB``,
    ``4: 4-32 KiB``, ``5: >=32 KiB``.
``@quality``
    Bands of a text-quality score, the share of four Gopher-style checks a text passes
    (Rae et al. 2021): at least 80% of words hold a letter, mean word length 3 to 10,
    at most 0.1 symbols (``#``, ``...``, ``…``) per word, at most 30% duplicate lines.
    Bands: ``low (<0.5)``, ``mid (0.5-0.75)``, ``high (1.0)``; ``no_words`` without
    words.

>>> slice_values("@urls", ["see https://example.org", "plain"])
['with_urls', 'without_urls']
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import regex

from ..errors import ConfigError

_CODE_LINE = regex.compile(
    r"""(?x)
    [{};]\s*$ | \):\s*$
    | ^\s*(?:def|class|import|from\s+\S+\s+import|\#include|\#define|function|return|fn|let
          |const|var|public|private|package|func|raise|yield|self\.)\b
    | ^\s*(?:if|elif|else|for|while|try|except|finally|with)\b.*:\s*$
    | ^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*[-+*/%|&]?=[^=]
    | ^\s*[A-Za-z_][\w.]*\(.*\)\s*$
    | ==|!=|=>|->|::|&&|\|\|
    """
)
_DIGIT = regex.compile(r"\p{Nd}")
_URL = regex.compile(r"(?i)\bhttps?://\S|\bwww\.\S")
_EMOJI = regex.compile(r"\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F")
_WORD = regex.compile(r"\S+")
_LETTER = regex.compile(r"\p{L}")
_SYMBOL = regex.compile(r"#|\.\.\.|…")

_JOINED = {"HIRAGANA": "HAN", "KATAKANA": "HAN", "HANGUL": "HAN"}
_NAME_PREFIXES = ("FULLWIDTH ", "HALFWIDTH ", "MATHEMATICAL ", "CIRCLED ")
MIXED_SHARE = 0.1
CODE_LINE_SHARE = 0.3
LENGTH_BANDS: tuple[tuple[int, str], ...] = (
    (64, "1: <64 B"),
    (512, "2: 64-511 B"),
    (4096, "3: 512 B-4 KiB"),
    (32768, "4: 4-32 KiB"),
)
LENGTH_TOP = "5: >=32 KiB"


def is_code(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    hits = sum(1 for line in lines if _CODE_LINE.search(line))
    return hits >= 1 and hits >= CODE_LINE_SHARE * len(lines)


@lru_cache(maxsize=65536)
def _writing_system(ch: str) -> str:
    name = unicodedata.name(ch, "UNKNOWN")
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    word = name.split(" ", 1)[0]
    if word == "CJK":
        word = "HAN"
    return _JOINED.get(word, word)


def script_mix(text: str) -> str:
    counts: Counter[str] = Counter()
    # Count letters first (in C), then give each distinct letter its script.
    for ch, n in Counter(_LETTER.findall(text)).items():
        counts[_writing_system(ch)] += n
    total = sum(counts.values())
    if total == 0:
        return "no_letters"
    major = [s for s, n in counts.items() if n >= MIXED_SHARE * total]
    return "mixed" if len(major) >= 2 else "single"


def length_band(text: str) -> str:
    n = len(text.encode("utf-8", "surrogatepass"))
    for limit, name in LENGTH_BANDS:
        if n < limit:
            return name
    return LENGTH_TOP


def quality_score(text: str) -> float | None:
    """The share of the four checks ``text`` passes; None for a text without words."""
    words = _WORD.findall(text)
    if not words:
        return None
    alpha = sum(1 for w in words if _LETTER.search(w)) / len(words)
    mean_len = sum(len(w) for w in words) / len(words)
    symbols = len(_SYMBOL.findall(text)) / len(words)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    dup = 1 - len(set(lines)) / len(lines) if lines else 0.0
    checks = (alpha >= 0.8, 3 <= mean_len <= 10, symbols <= 0.1, dup <= 0.3)
    return sum(checks) / len(checks)


def quality_band(text: str) -> str:
    score = quality_score(text)
    if score is None:
        return "no_words"
    if score < 0.5:
        return "low (<0.5)"
    return "high (1.0)" if score == 1.0 else "mid (0.5-0.75)"


def _flag(pattern: regex.Pattern[str], name: str) -> Callable[[str], str]:
    return lambda text: f"with_{name}" if pattern.search(text) else f"without_{name}"


BUILTIN_SLICES: dict[str, Callable[[str], str]] = {
    "@code": lambda text: "code" if is_code(text) else "prose",
    "@numbers": _flag(_DIGIT, "numbers"),
    "@urls": _flag(_URL, "urls"),
    "@emoji": _flag(_EMOJI, "emoji"),
    "@scripts": script_mix,
    "@length": length_band,
    "@quality": quality_band,
}


def slice_values(name: str, texts: Sequence[str]) -> list[str]:
    """Each text's value of the built-in slice ``name`` (``@code``, ``@length``, ...)."""
    classify = BUILTIN_SLICES.get(name)
    if classify is None:
        raise ConfigError(
            f"unknown built-in slice {name!r}; use one of {', '.join(BUILTIN_SLICES)}"
        )
    return [classify(t) for t in texts]
