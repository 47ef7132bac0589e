"""Per-content presets of the cleaning steps' thresholds.

The step defaults are the published Gopher values, tuned on web pages; on other content
they drop most of a source (on 150 records each of the bench-mixed slices, the defaults
drop 98% of German fortunes, 87% of English fortunes and 86% of the Python
documentation). A preset is a partial step configuration laid under the user's own
(``--config`` keys win). The measured drop shares of each preset are in docs/DATA.md.

>>> pipeline = CleaningPipeline.from_config(preset_config("prose", ["quality"]))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ConfigError

_RELAXED_TOP = [[2, 0.30], [3, 0.27], [4, 0.24]]
_LONGFORM_DUP = [[5, 0.5], [10, 0.4]]
_LONGFORM = {
    # Long documents repeat phrases (parameter lists, headings, examples) far more than
    # a web page: the duplicate-n-gram and duplicate-line shares are relaxed, and the
    # English stop-word rule is off (it is a web-English heuristic).
    "min_words": 20,
    "min_stop_words": None,
    "min_alpha_words": 0.6,
    "max_top_ngram_chars": _RELAXED_TOP,
    "max_dup_ngram_chars": _LONGFORM_DUP,
    "max_dup_lines": 0.5,
    "max_dup_paragraphs": 0.5,
    "max_dup_line_chars": 0.4,
    "max_dup_paragraph_chars": 0.4,
}

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # The step defaults: Gopher's published thresholds for web pages.
    "web": {},
    # Books, articles, documentation prose.
    "prose": {"quality": dict(_LONGFORM)},
    # Manual pages and technical documentation: options, paths and markup escapes make
    # more symbol-like and non-alphabetic words, and compounds make longer words.
    "technical": {
        "quality": {
            **_LONGFORM,
            "min_alpha_words": 0.5,
            "max_symbol_word_ratio": 0.3,
            "max_mean_word_length": 15.0,
        }
    },
    # Source code: only the length range and the lorem-ipsum rule; the word, symbol,
    # stop-word and repetition rules describe natural language.
    "code": {
        "quality": {
            "min_words": 5,
            "min_mean_word_length": None,
            "max_mean_word_length": None,
            "max_symbol_word_ratio": None,
            "max_bullet_lines": None,
            "max_ellipsis_lines": None,
            "min_alpha_words": None,
            "min_stop_words": None,
            "max_dup_lines": None,
            "max_dup_paragraphs": None,
            "max_dup_line_chars": None,
            "max_dup_paragraph_chars": None,
            "max_top_ngram_chars": [],
            "max_dup_ngram_chars": [],
        }
    },
    # Short texts (quotations, messages, UI strings): a few words suffice.
    "short": {
        "quality": {
            "min_words": 3,
            "min_chars_no_space": 10,
            "min_stop_words": None,
            "max_ellipsis_lines": 0.5,
            "max_top_ngram_chars": _RELAXED_TOP,
            "max_dup_ngram_chars": [
                [5, 0.30],
                [6, 0.28],
                [7, 0.26],
                [8, 0.24],
                [9, 0.22],
                [10, 0.20],
            ],
        }
    },
}


def preset_config(
    name: str, steps: Sequence[str] | None = None, config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The step configuration of preset ``name`` for the steps in ``steps`` (all of the
    preset's when None), with ``config``'s options laid over it (they win)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown cleaning preset {name!r}; use one of {sorted(PRESETS)}")
    out: dict[str, Any] = {}
    for step, options in PRESETS[name].items():
        if steps is None or step in steps:
            out[step] = dict(options)
    for step, options in (config or {}).items():
        out[step] = {**out.get(step, {}), **dict(options or {})}
    return out
