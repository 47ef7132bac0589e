"""Python's character properties as one table for the native cleaning engines.

The cleaning rules read three properties of a character: ``str.isspace()`` (word and
line splitting, ``strip``), ``str.isalpha()`` (general category L*) and the script of a
letter (:func:`.scripts.char_script`). This module asks Python's own ``unicodedata``
once per process for every code point and hands the answers to Rust as a table of
0x110000 entries, so the engine and the Python reference agree on every character by
construction, whatever Unicode version either side was built with.

Entry layout: bit 15 ``isalpha``, bit 14 ``isspace``, the low 12 bits the letter's
script ID (0: none), an index into :func:`script_names`.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Any

import numpy as np

from .scripts import char_script

LETTER = 1 << 15
SPACE = 1 << 14


@lru_cache(maxsize=1)
def _build() -> tuple[np.ndarray, tuple[str | None, ...]]:
    entries = np.zeros(0x110000, dtype=np.uint16)
    names: list[str | None] = [None]
    ids: dict[str, int] = {}
    category = unicodedata.category
    for cp in range(0x110000):
        ch = chr(cp)
        if category(ch)[0] == "L":
            script = char_script(ch)
            sid = 0
            if script is not None:
                sid = ids.get(script, 0)
                if not sid:
                    sid = ids[script] = len(names)
                    names.append(script)
            entries[cp] = LETTER | sid
        elif ch.isspace():
            entries[cp] = SPACE
    return entries, tuple(names)


def script_names() -> tuple[str | None, ...]:
    """The script name of each script ID (ID 0: no script)."""
    return _build()[1]


@lru_cache(maxsize=1)
def native_table() -> Any:
    """The table as a ``_native.NativeCharTable`` (built once per process)."""
    from ... import _native

    return _native.NativeCharTable(_build()[0])


def script_counts(encoded: list[bytes], max_chars: int) -> list[dict[str, int]]:
    """Letters per script in the first ``max_chars`` code points of each UTF-8 text."""
    names = script_names()
    return [
        {str(names[s]): n for s, n in counts}
        for counts in native_table().script_counts(encoded, max_chars)
    ]
