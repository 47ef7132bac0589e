"""Writing-system detection from Unicode character names (no table to keep up to date).

The script of a letter is read from the first word of its Unicode name
(``unicodedata.name``): ``LATIN SMALL LETTER A`` is Latin, ``CYRILLIC ...`` Cyrillic,
``HIRAGANA ...`` Hiragana. A few names need folding: ``CJK UNIFIED IDEOGRAPH-4E00`` and
``CJK COMPATIBILITY IDEOGRAPH`` are Han, ``FULLWIDTH LATIN ...`` is Latin,
``HALFWIDTH KATAKANA ...`` Katakana. Only letters (general category ``L*``) count;
digits, punctuation, marks and symbols belong to no script. The Unicode database is the
one Python ships (``unicodedata.unidata_version``), which the report records.

Japanese mixes Han, Hiragana and Katakana and Korean mixes Hangul and Han by design, so
those combinations form one *writing system* and do not make a text "mixed".
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache

# Scripts written without spaces between words: word-based rules do not apply to them.
NO_SPACE_SCRIPTS = frozenset(
    {"HAN", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN"}
)
# Languages whose text is written without spaces (py3langid labels and common codes).
NO_SPACE_LANGUAGES = frozenset({"ja", "zh", "th", "lo", "km", "my", "bo", "dz", "yue", "wuu"})

_WRITING_SYSTEM = {"HIRAGANA": "JAPANESE", "KATAKANA": "JAPANESE", "HANGUL": "KOREAN"}
_PREFIXES = ("FULLWIDTH ", "HALFWIDTH ", "MATHEMATICAL ", "CIRCLED ", "PARENTHESIZED ")


@lru_cache(maxsize=65536)
def char_script(ch: str) -> str | None:
    """The script of the letter ``ch`` (upper-case name such as ``"LATIN"``), else None."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return "UNKNOWN"
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if name.startswith("CJK ") or name.startswith("IDEOGRAPHIC "):
        return "HAN"
    if name.startswith("MODIFIER LETTER") or name.startswith("SMALL "):
        return None
    return name.split(" ", 1)[0]


def script_shares(text: str) -> dict[str, float]:
    """Each script's share of the letters of ``text`` (empty when there are none)."""
    counts: Counter[str] = Counter()
    # Count characters first (in C), then look up each distinct character once.
    for ch, n in Counter(text).items():
        script = char_script(ch)
        if script is not None:
            counts[script] += n
    return shares_from_counts(counts)


def shares_from_counts(counts: Mapping[str, int]) -> dict[str, float]:
    """Letters per script as shares, rounded to 4 places, largest first (ties by name)."""
    total = sum(counts.values())
    if not total:
        return {}
    return {
        s: round(n / total, 4) for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    }


def writing_systems(shares: dict[str, float]) -> dict[str, float]:
    """Fold scripts into writing systems: Han with Kana is Japanese, Han with Hangul Korean."""
    has_kana = shares.get("HIRAGANA", 0.0) + shares.get("KATAKANA", 0.0) > 0.0
    has_hangul = shares.get("HANGUL", 0.0) > 0.0
    out: dict[str, float] = {}
    for script, share in shares.items():
        if script == "HAN" and has_kana:
            system = "JAPANESE"
        elif script == "HAN" and has_hangul:
            system = "KOREAN"
        else:
            system = _WRITING_SYSTEM.get(script, script)
        out[system] = out.get(system, 0.0) + share
    return {s: round(v, 4) for s, v in sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))}


def is_mixed(shares: dict[str, float], *, threshold: float) -> bool:
    """True when a second writing system holds at least ``threshold`` of the letters."""
    systems = sorted(writing_systems(shares).values(), reverse=True)
    return len(systems) > 1 and systems[1] >= threshold


def no_space_share(shares: dict[str, float]) -> float:
    """The share of letters in scripts written without spaces between words."""
    return sum(v for s, v in shares.items() if s in NO_SPACE_SCRIPTS)
