"""Quality heuristics: the published Gopher (MassiveText) and C4 rules, each named.

Every rule has a name (``gopher.word_count``...), a threshold from the configuration
(``None`` turns it off) and a scope:

* ``any`` rules look at lines, paragraphs and characters, and apply to every language;
* ``words`` rules count whitespace-separated words. Gopher and C4 were designed for
  English web text, and in languages written without spaces (Japanese, Chinese, Thai,
  Lao, Khmer, Burmese, Tibetan) a "word" is a whole clause, so these rules would reject
  clean text wholesale. They apply only to space-delimited languages; no-space text is
  held to a character-count range instead (``min_chars_no_space``/``max_chars_no_space``);
* ``ngrams`` rules (Gopher's top and duplicate n-gram shares) count word n-grams in
  space-delimited text and character n-grams in no-space text, a few characters standing
  for one word (``chars_per_word``: 4 for Thai, Lao, Khmer, Burmese, Tibetan; otherwise
  ``no_space_ngram_scale``, 2, for Chinese and Japanese), so a 5-gram rule looks at 10
  Chinese characters (``no_space_ngram_scale=None`` and an empty ``chars_per_word`` turn
  the n-gram rules off for no-space text);
* ``stop_words`` applies only to the languages in ``stop_word_languages`` (Gopher's list
  is English), or to every document when its language is unknown (no langid step ran).

A document's language comes from the langid step's annotation when present; otherwise it
counts as no-space when at least half its letters are in no-space scripts.

All rules are evaluated, so the report counts every rule a rejected document failed,
not only the first; a document fails when any rule fires. With ``c4_line_filter`` the
C4 line rules first remove lines (terminal punctuation, words per line, javascript,
policy phrases) and the document rules then judge what is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from . import quality_stats as qs
from .scripts import NO_SPACE_LANGUAGES, no_space_share, script_shares
from .step import (
    Outcome,
    StepConfig,
    check_optional_range,
    check_range,
    check_strings,
)

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
GOPHER_TOP_NGRAMS = ((2, 0.20), (3, 0.18), (4, 0.16))
GOPHER_DUP_NGRAMS = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))


def _pairs(value: Any, what: str) -> tuple[tuple[int, float], ...]:
    try:
        pairs = tuple((int(n), float(t)) for n, t in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a list of [n, threshold] pairs, got {value!r}") from None
    for n, t in pairs:
        if n < 1 or not 0.0 <= t <= 1.0:
            raise ConfigError(f"{what}: n must be >= 1 and thresholds in [0, 1], got {value!r}")
    return pairs


@dataclass(frozen=True)
class QualityConfig(StepConfig):
    """Thresholds of the Gopher and C4 rules (defaults: the published Gopher values, C4's
    "lorem ipsum" page rule; C4's line filter and curly-bracket rule are options)."""

    NAME = "quality"
    LIBRARY = None
    STEP_VERSION = 1

    min_words: int | None = 50
    max_words: int | None = 100_000
    min_mean_word_length: float | None = 3.0
    max_mean_word_length: float | None = 10.0
    max_symbol_word_ratio: float | None = 0.1
    max_bullet_lines: float | None = 0.9
    max_ellipsis_lines: float | None = 0.3
    min_alpha_words: float | None = 0.8
    min_stop_words: int | None = 2
    stop_words: tuple[str, ...] = GOPHER_STOP_WORDS
    stop_word_languages: tuple[str, ...] = ("en",)
    max_dup_lines: float | None = 0.30
    max_dup_paragraphs: float | None = 0.30
    max_dup_line_chars: float | None = 0.20
    max_dup_paragraph_chars: float | None = 0.20
    max_top_ngram_chars: tuple[tuple[int, float], ...] = GOPHER_TOP_NGRAMS
    max_dup_ngram_chars: tuple[tuple[int, float], ...] = GOPHER_DUP_NGRAMS
    no_space_languages: tuple[str, ...] = tuple(sorted(NO_SPACE_LANGUAGES))
    min_chars_no_space: int | None = 100
    # Characters standing for one word in the n-gram rules on no-space text, per
    # language (default ``no_space_ngram_scale``): CJK words are one to three
    # characters, Thai/Lao/Khmer/Burmese/Tibetan syllable clusters make longer words.
    no_space_ngram_scale: int | None = 2
    chars_per_word: tuple[tuple[str, int], ...] = (
        ("bo", 4),
        ("dz", 4),
        ("km", 4),
        ("lo", 4),
        ("my", 4),
        ("th", 4),
    )
    max_chars_no_space: int | None = 500_000
    c4_line_filter: bool = False
    c4_min_words_per_line: int = 3
    c4_javascript_lines: bool = True
    c4_policy_lines: bool = True
    c4_min_sentences: int | None = None
    c4_lorem_ipsum: bool = True
    c4_curly_bracket: bool = False

    def __post_init__(self) -> None:
        for name in ("min_words", "max_words", "min_stop_words", "c4_min_sentences"):
            check_optional_range(getattr(self, name), name, low=0)
        for name in ("min_chars_no_space", "max_chars_no_space", "no_space_ngram_scale"):
            check_optional_range(getattr(self, name), name, low=0)
        for name in ("min_mean_word_length", "max_mean_word_length", "max_symbol_word_ratio"):
            check_optional_range(getattr(self, name), name, low=0.0)
        for name in (
            "max_bullet_lines",
            "max_ellipsis_lines",
            "min_alpha_words",
            "max_dup_lines",
            "max_dup_paragraphs",
            "max_dup_line_chars",
            "max_dup_paragraph_chars",
        ):
            check_optional_range(getattr(self, name), name, low=0.0, high=1.0)
        check_range(self.c4_min_words_per_line, "c4_min_words_per_line", low=0)
        for name in ("stop_words", "stop_word_languages", "no_space_languages"):
            check_strings(getattr(self, name), name)
        for name in ("max_top_ngram_chars", "max_dup_ngram_chars"):
            object.__setattr__(self, name, _pairs(getattr(self, name), name))
        try:
            scales = tuple((str(lang), int(k)) for lang, k in self.chars_per_word)
        except (TypeError, ValueError):
            raise ConfigError(
                f"chars_per_word must be a list of [language, characters] pairs, got "
                f"{self.chars_per_word!r}"
            ) from None
        if any(k < 1 for _, k in scales):
            raise ConfigError(f"chars_per_word values must be >= 1, got {self.chars_per_word!r}")
        object.__setattr__(self, "chars_per_word", scales)
        for name in (
            "c4_line_filter",
            "c4_javascript_lines",
            "c4_policy_lines",
            "c4_lorem_ipsum",
            "c4_curly_bracket",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @classmethod
    def c4(cls) -> QualityConfig:
        """Gopher's rules plus C4's line filter, five-sentence minimum and code filter."""
        return cls(c4_line_filter=True, c4_min_sentences=5, c4_curly_bracket=True)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        for name in ("max_top_ngram_chars", "max_dup_ngram_chars", "chars_per_word"):
            out[name] = [list(p) for p in getattr(self, name)]
        return out

    def rules(self) -> list[dict[str, Any]]:
        """The rule table: name, threshold, comparison and scope (for reports and docs)."""
        table: list[dict[str, Any]] = []

        def add(name: str, threshold: Any, op: str, scope: str) -> None:
            if threshold is not None and threshold is not False:
                table.append({"rule": name, "threshold": threshold, "fails_if": op, "scope": scope})

        add("gopher.word_count", self.min_words, "words <", "words")
        add("gopher.word_count_max", self.max_words, "words >", "words")
        add("gopher.mean_word_length", self.min_mean_word_length, "mean word length <", "words")
        add("gopher.mean_word_length_max", self.max_mean_word_length, "mean >", "words")
        add("gopher.symbol_word_ratio", self.max_symbol_word_ratio, "(# + ...)/words >", "words")
        add("gopher.bullet_lines", self.max_bullet_lines, "bullet-line share >", "any")
        add("gopher.ellipsis_lines", self.max_ellipsis_lines, "ellipsis-line share >", "any")
        add("gopher.alpha_words", self.min_alpha_words, "alphabetic-word share <", "words")
        add("gopher.stop_words", self.min_stop_words, "stop words <", "stop_words")
        add("gopher.dup_lines", self.max_dup_lines, "duplicate-line share >", "any")
        add("gopher.dup_paragraphs", self.max_dup_paragraphs, "dup-paragraph share >", "any")
        add("gopher.dup_line_chars", self.max_dup_line_chars, "dup-line char share >", "any")
        add("gopher.dup_paragraph_chars", self.max_dup_paragraph_chars, "char share >", "any")
        for n, t in self.max_top_ngram_chars:
            add(f"gopher.top_{n}gram_chars", t, "top n-gram char share >", "ngrams")
        for n, t in self.max_dup_ngram_chars:
            add(f"gopher.dup_{n}gram_chars", t, "dup n-gram char share >", "ngrams")
        add("quality.chars_no_space", self.min_chars_no_space, "characters <", "no_space")
        add("quality.chars_no_space_max", self.max_chars_no_space, "characters >", "no_space")
        add("c4.min_sentences", self.c4_min_sentences, "sentences <", "any")
        add("c4.lorem_ipsum", self.c4_lorem_ipsum, "contains 'lorem ipsum'", "any")
        add("c4.curly_bracket", self.c4_curly_bracket, "contains '{'", "any")
        if self.c4_line_filter:
            add("c4.line_terminal_punctuation", True, "line lacks end punctuation", "lines")
            add("c4.line_min_words", self.c4_min_words_per_line, "line words <", "lines")
            add("c4.line_javascript", self.c4_javascript_lines, "line has 'javascript'", "lines")
            add("c4.line_policy", self.c4_policy_lines, "line has a policy phrase", "lines")
        return table

    def prepare(self) -> QualityWorker:
        return QualityWorker(self)


class QualityWorker:
    """Applies :class:`QualityConfig` to one document at a time."""

    def __init__(self, config: QualityConfig) -> None:
        self.c = config
        self.stop_words = frozenset(w.lower() for w in config.stop_words)
        self.no_space_languages = frozenset(config.no_space_languages)
        self.chars_per_word = dict(config.chars_per_word)

    def policy(self, text: str, meta: Mapping[str, Any]) -> tuple[bool, bool]:
        """(no-space text?, stop-word rule applies?) for this document."""
        language = meta.get("language")
        if isinstance(language, str) and language != "und":
            no_space = language in self.no_space_languages
            stop = language in self.c.stop_word_languages
        else:
            no_space = no_space_share(script_shares(text[:20_000])) >= 0.5
            stop = not no_space
        return no_space, stop

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        c = self.c
        no_space, stop_rule = self.policy(text, meta)
        language = meta.get("language")
        scale = self.chars_per_word.get(language) if isinstance(language, str) else None
        counts: Counter[str] = Counter()
        if c.c4_line_filter:
            text, removed = qs.c4_filter_lines(
                text,
                min_words=c.c4_min_words_per_line,
                javascript=c.c4_javascript_lines,
                policy=c.c4_policy_lines,
                no_space=no_space,
            )
            counts.update(removed)
        failed = self.failures(text, no_space=no_space, stop_rule=stop_rule, scale=scale)
        policy = {"quality_policy": "no_space" if no_space else "words"}
        if failed:
            return Outcome(None, tuple(failed), policy, counts)
        return Outcome(text, (), policy, counts)

    def failures(
        self, text: str, *, no_space: bool, stop_rule: bool, scale: int | None = None
    ) -> list[str]:
        c = self.c
        failed: list[str] = []

        def check(name: str, threshold: Any, value: float, low: bool) -> None:
            if threshold is not None and (value < threshold if low else value > threshold):
                failed.append(name)

        ws = qs.words(text)
        ls = qs.lines(text)
        if no_space:
            n_chars = sum(1 for ch in text if not ch.isspace())
            check("quality.chars_no_space", c.min_chars_no_space, n_chars, True)
            check("quality.chars_no_space_max", c.max_chars_no_space, n_chars, False)
        else:
            check("gopher.word_count", c.min_words, len(ws), True)
            check("gopher.word_count_max", c.max_words, len(ws), False)
            mean = qs.mean_word_length(ws)
            check("gopher.mean_word_length", c.min_mean_word_length, mean, True)
            check("gopher.mean_word_length_max", c.max_mean_word_length, mean, False)
            ratio = qs.symbol_word_ratio(text, ws)
            check("gopher.symbol_word_ratio", c.max_symbol_word_ratio, ratio, False)
            check("gopher.alpha_words", c.min_alpha_words, qs.alpha_word_fraction(ws), True)
        if stop_rule:
            count = qs.stop_word_count(ws, self.stop_words)
            check("gopher.stop_words", c.min_stop_words, count, True)
        check("gopher.bullet_lines", c.max_bullet_lines, qs.bullet_line_fraction(ls), False)
        check("gopher.ellipsis_lines", c.max_ellipsis_lines, qs.ellipsis_line_fraction(ls), False)
        line_frac, line_chars = qs.duplicate_fractions(ls)
        para_frac, para_chars = qs.duplicate_fractions(qs.paragraphs(text))
        check("gopher.dup_lines", c.max_dup_lines, line_frac, False)
        check("gopher.dup_paragraphs", c.max_dup_paragraphs, para_frac, False)
        check("gopher.dup_line_chars", c.max_dup_line_chars, line_chars, False)
        check("gopher.dup_paragraph_chars", c.max_dup_paragraph_chars, para_chars, False)
        units: list[str] = ws
        if no_space:
            # No-space text: n-grams of characters, ``scale`` characters standing for one
            # word (``chars_per_word`` of the language, else ``no_space_ngram_scale``).
            units = [ch for ch in text if not ch.isspace()]
            scale = scale or c.no_space_ngram_scale or 0
        else:
            scale = 1
        if scale and units:
            shares = qs.NgramShares(units)
            for n, t in c.max_top_ngram_chars:
                check(f"gopher.top_{n}gram_chars", t, shares.top(n * scale), False)
            for n, t in c.max_dup_ngram_chars:
                check(f"gopher.dup_{n}gram_chars", t, shares.duplicate(n * scale), False)
        if c.c4_min_sentences is not None:
            check("c4.min_sentences", c.c4_min_sentences, qs.sentence_count(text), True)
        lowered = text.lower()
        if c.c4_lorem_ipsum and "lorem ipsum" in lowered:
            failed.append("c4.lorem_ipsum")
        if c.c4_curly_bracket and "{" in text:
            failed.append("c4.curly_bracket")
        return failed
