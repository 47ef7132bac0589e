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
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import ConfigError
from . import quality_stats as qs
from .char_table import native_table, script_counts
from .datatrove_rules import WORD_TOKENIZERS, datatrove_decision, rule_table, thresholds_from
from .scripts import NO_SPACE_LANGUAGES, no_space_share, script_shares, shares_from_counts
from .step import (
    Outcome,
    StepConfig,
    check_choice,
    check_optional_range,
    check_range,
    check_strings,
)

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
GOPHER_TOP_NGRAMS = ((2, 0.20), (3, 0.18), (4, 0.16))
GOPHER_DUP_NGRAMS = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))


@lru_cache(maxsize=1)
def _count_names() -> tuple[str, ...]:
    """The names of the native engine's leading count columns, in its order (the n-gram
    columns follow)."""
    from ... import _native

    return tuple(_native.NativeQualityCounts.names())


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
    # mode "datatrove": datatrove 0.10.1's GopherRepetitionFilter, GopherQualityFilter and
    # (with c4_line_filter) C4QualityFilter, their rules and reasons (.datatrove_rules);
    # the per-language policy and the no-space options do not apply there.
    mode: str = "tokenpact"
    # mode "datatrove": its words and sentences, "whitespace" (no dependency) or "spacy"
    # (datatrove's own English tokenizer; needs spaCy installed).
    datatrove_words: str = "whitespace"

    def __post_init__(self) -> None:
        check_choice(self.mode, ("tokenpact", "datatrove"), "mode")
        check_choice(self.datatrove_words, WORD_TOKENIZERS, "datatrove_words")
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

    @classmethod
    def datatrove(cls, *, c4: bool = False, words: str = "whitespace") -> QualityConfig:
        """datatrove's Gopher filters (and its C4 filter with ``c4``), their defaults;
        ``words="spacy"`` splits words and sentences with datatrove's own English
        tokenizer (spaCy), so decisions match datatrove's filters exactly."""
        if c4:
            return cls(mode="datatrove", c4_line_filter=True, c4_min_sentences=5,
                       c4_curly_bracket=True, datatrove_words=words)  # fmt: skip
        return cls(mode="datatrove", datatrove_words=words)

    def identity(self) -> dict[str, Any]:
        out = self.to_json()
        if self.mode == "tokenpact":  # the hash of configurations from before the option
            del out["mode"]
        if self.datatrove_words == "whitespace":  # likewise for the word tokenizer
            del out["datatrove_words"]
        return out

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        for name in ("max_top_ngram_chars", "max_dup_ngram_chars", "chars_per_word"):
            out[name] = [list(p) for p in getattr(self, name)]
        return out

    def rules(self) -> list[dict[str, Any]]:
        """The rule table: name, threshold, comparison and scope (for reports and docs);
        in mode "datatrove", datatrove's rules, named by the reasons they report."""
        if self.mode == "datatrove":
            return rule_table(thresholds_from(self))
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
    """Applies :class:`QualityConfig`: :meth:`batch` counts natively, :meth:`reference`
    computes the same statistics in Python (:mod:`.quality_stats`); both feed one
    decision function, so they reject the same documents for the same rules."""

    def __init__(self, config: QualityConfig) -> None:
        self.c = config
        self.stop_words = frozenset(w.lower() for w in config.stop_words)
        self.no_space_languages = frozenset(config.no_space_languages)
        self.chars_per_word = dict(config.chars_per_word)
        self._datatrove = thresholds_from(config)  # mode "datatrove": its parameters
        self._native: Any = None

    def _policy(self, meta: Mapping[str, Any], shares: Any) -> tuple[bool, bool]:
        language = meta.get("language")
        if isinstance(language, str) and language != "und":
            return language in self.no_space_languages, language in self.c.stop_word_languages
        no_space = no_space_share(shares()) >= 0.5
        return no_space, not no_space

    def policy(self, text: str, meta: Mapping[str, Any]) -> tuple[bool, bool]:
        """(no-space text?, stop-word rule applies?) for this document."""
        return self._policy(meta, lambda: script_shares(text[:20_000]))

    def _scale(self, meta: Mapping[str, Any], no_space: bool) -> int:
        """Units per word in the n-gram rules: 1 for words, the language's (or the
        default) characters per word for no-space text, 0 when the rules are off."""
        if not no_space:
            return 1
        language = meta.get("language")
        scale = self.chars_per_word.get(language) if isinstance(language, str) else None
        return scale or self.c.no_space_ngram_scale or 0

    def _line_filter(self, text: str, no_space: bool, counts: Counter[str]) -> str:
        c = self.c
        if not c.c4_line_filter:
            return text
        text, removed = qs.c4_filter_lines(
            text,
            min_words=c.c4_min_words_per_line,
            javascript=c.c4_javascript_lines,
            policy=c.c4_policy_lines,
            no_space=no_space,
        )
        counts.update(removed)
        return text

    def __call__(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        return self.batch([text], [meta])[0]

    def datatrove(self, text: str) -> Outcome:
        """One document under ``mode="datatrove"`` (:mod:`.datatrove_rules`)."""
        reason, kept = datatrove_decision(text, self._datatrove)
        policy = {"quality_policy": "datatrove"}
        if reason is not None:
            return Outcome(None, (reason,), policy, {})
        return Outcome(kept, (), policy, {})

    def reference(self, text: str, meta: Mapping[str, Any]) -> Outcome:
        """One document in Python (the specification of :meth:`batch`)."""
        if self.c.mode == "datatrove":
            return self.datatrove(text)
        no_space, stop_rule = self.policy(text, meta)
        counts: Counter[str] = Counter()
        text = self._line_filter(text, no_space, counts)
        stats = self.stats_reference(text, no_space=no_space, scale=self._scale(meta, no_space))
        return self._outcome(text, stats, no_space, stop_rule, counts)

    def batch(self, texts: list[str], metas: list[Mapping[str, Any]]) -> list[Outcome]:
        """Outcomes of many documents, their counts in one native call."""
        if self.c.mode == "datatrove":
            return [self.datatrove(t) for t in texts]
        unknown = [
            i
            for i, m in enumerate(metas)
            if not isinstance(m.get("language"), str) or m.get("language") == "und"
        ]
        found = script_counts(
            [texts[i][:20_000].encode("utf-8", "surrogatepass") for i in unknown], 20_000
        )
        letters = dict(zip(unknown, found, strict=True))
        prepared = []
        for i, (text, meta) in enumerate(zip(texts, metas, strict=True)):
            no_space, stop_rule = self._policy(
                meta,
                lambda i=i: shares_from_counts(letters[i]),  # type: ignore[misc]
            )
            counts: Counter[str] = Counter()
            text = self._line_filter(text, no_space, counts)
            prepared.append((text, no_space, stop_rule, self._scale(meta, no_space), counts))
        table = self._engine().counts(
            [p[0].encode("utf-8", "surrogatepass") for p in prepared],
            [p[1] for p in prepared],
            [p[3] for p in prepared],
        )
        failed = self.failures_from_counts(
            table,
            np.array([p[1] for p in prepared], dtype=bool),
            np.array([p[2] for p in prepared], dtype=bool),
            np.array([p[3] for p in prepared], dtype=np.int64),
        )
        out = []
        for (text, no_space, _, _, counts), reasons in zip(prepared, failed, strict=True):
            policy = {"quality_policy": "no_space" if no_space else "words"}
            if reasons:
                out.append(Outcome(None, tuple(reasons), policy, counts))
            else:
                out.append(Outcome(text, (), policy, counts))
        return out

    def failures_from_counts(
        self, table: Any, no_space: Any, stop_rule: Any, scale: Any
    ) -> list[list[str]]:
        """:meth:`failures_from` of every row of the native counts at once: the same
        divisions of the same integers (exact in float64 below 2**53), the same
        comparisons, the rules in the same order."""
        c = self.c
        n = table.shape[0]
        columns = _count_names()
        col = {name: table[:, k] for k, name in enumerate(columns)}

        def ratio(a: str, b: str) -> Any:
            num, den = col[a].astype(np.float64), col[b].astype(np.float64)
            return np.divide(num, den, out=np.zeros(n), where=den > 0)

        words = ~no_space
        checks: list[tuple[str, Any]] = []

        def check(name: str, threshold: Any, value: Any, low: bool, applies: Any) -> None:
            if threshold is not None:
                hit = value < threshold if low else value > threshold
                checks.append((name, hit & applies))

        everywhere = np.ones(n, dtype=bool)
        nonspace = col["nonspace_chars"]
        check("quality.chars_no_space", c.min_chars_no_space, nonspace, True, no_space)
        check("quality.chars_no_space_max", c.max_chars_no_space, nonspace, False, no_space)
        check("gopher.word_count", c.min_words, col["words"], True, words)
        check("gopher.word_count_max", c.max_words, col["words"], False, words)
        mean = ratio("word_chars", "words")
        check("gopher.mean_word_length", c.min_mean_word_length, mean, True, words)
        check("gopher.mean_word_length_max", c.max_mean_word_length, mean, False, words)
        symbols = ratio("symbols", "words")
        check("gopher.symbol_word_ratio", c.max_symbol_word_ratio, symbols, False, words)
        alpha = ratio("alpha_words", "words")
        check("gopher.alpha_words", c.min_alpha_words, alpha, True, words)
        check("gopher.stop_words", c.min_stop_words, col["stop_words"], True, stop_rule)
        for name, threshold, a, b in (
            ("gopher.bullet_lines", c.max_bullet_lines, "bullet_lines", "lines"),
            ("gopher.ellipsis_lines", c.max_ellipsis_lines, "ellipsis_lines", "lines"),
            ("gopher.dup_lines", c.max_dup_lines, "dup_lines", "lines"),
            ("gopher.dup_paragraphs", c.max_dup_paragraphs, "dup_paragraphs", "paragraphs"),
            ("gopher.dup_line_chars", c.max_dup_line_chars, "dup_line_chars", "line_chars"),
            (
                "gopher.dup_paragraph_chars",
                c.max_dup_paragraph_chars,
                "dup_paragraph_chars",
                "paragraph_chars",
            ),
        ):
            check(name, threshold, ratio(a, b), False, everywhere)
        unit_chars = col["unit_chars"].astype(np.float64)
        grams = (scale > 0) & (unit_chars > 0)
        tops = c.max_top_ngram_chars
        base = len(columns)
        for k, (size, threshold) in enumerate(tops):
            count, chars = table[:, base + 2 * k], table[:, base + 2 * k + 1]
            share = np.divide(
                (count * chars).astype(np.float64), unit_chars, out=np.zeros(n), where=grams
            )
            share = np.where(count < 2, 0.0, np.minimum(1.0, share))
            check(f"gopher.top_{size}gram_chars", threshold, share, False, grams)
        for k, (size, threshold) in enumerate(c.max_dup_ngram_chars):
            covered = table[:, base + 2 * len(tops) + k].astype(np.float64)
            share = np.divide(covered, unit_chars, out=np.zeros(n), where=grams)
            check(f"gopher.dup_{size}gram_chars", threshold, share, False, grams)
        if c.c4_min_sentences is not None:
            check("c4.min_sentences", c.c4_min_sentences, col["sentences"], True, everywhere)
        if c.c4_lorem_ipsum:
            checks.append(("c4.lorem_ipsum", col["lorem_ipsum"] > 0))
        if c.c4_curly_bracket:
            checks.append(("c4.curly_bracket", col["curly_bracket"] > 0))
        out: list[list[str]] = [[] for _ in range(n)]
        if not checks:
            return out
        hits = np.stack([h for _, h in checks], axis=1)
        names = [name for name, _ in checks]
        for i in np.flatnonzero(hits.any(axis=1)).tolist():
            out[i] = [names[j] for j in np.flatnonzero(hits[i]).tolist()]
        return out

    def _engine(self) -> Any:
        if self._native is None:
            from ... import _native

            self._native = _native.NativeQualityCounts(
                native_table(),
                [w.encode("utf-8", "surrogatepass") for w in sorted(self.stop_words)],
                [n for n, _ in self.c.max_top_ngram_chars],
                [n for n, _ in self.c.max_dup_ngram_chars],
            )
        return self._native

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_native": None}  # the engine is rebuilt where it runs

    def stats_reference(self, text: str, *, no_space: bool, scale: int) -> dict[str, Any]:
        """The statistics the rules compare, from :mod:`.quality_stats`."""
        c = self.c
        ws = qs.words(text)
        ls = qs.lines(text)
        line_frac, line_chars = qs.duplicate_fractions(ls)
        para_frac, para_chars = qs.duplicate_fractions(qs.paragraphs(text))
        stats: dict[str, Any] = {
            "words": len(ws),
            "mean_word_length": qs.mean_word_length(ws),
            "symbol_word_ratio": qs.symbol_word_ratio(text, ws),
            "alpha_words": qs.alpha_word_fraction(ws),
            "stop_words": qs.stop_word_count(ws, self.stop_words),
            "bullet_lines": qs.bullet_line_fraction(ls),
            "ellipsis_lines": qs.ellipsis_line_fraction(ls),
            "dup_lines": line_frac,
            "dup_paragraphs": para_frac,
            "dup_line_chars": line_chars,
            "dup_paragraph_chars": para_chars,
            "chars_no_space": sum(1 for ch in text if not ch.isspace()),
            "sentences": qs.sentence_count(text),
            "lorem_ipsum": "lorem ipsum" in text.lower(),
            "curly_bracket": "{" in text,
            "top": {},
            "dup": {},
        }
        # No-space text: n-grams of characters, ``scale`` characters standing for one
        # word (``chars_per_word`` of the language, else ``no_space_ngram_scale``).
        units = [ch for ch in text if not ch.isspace()] if no_space else ws
        if scale and units:
            shares = qs.NgramShares(units)
            stats["top"] = {n: shares.top(n * scale) for n, _ in c.max_top_ngram_chars}
            stats["dup"] = {n: shares.duplicate(n * scale) for n, _ in c.max_dup_ngram_chars}
        return stats

    def stats_from_counts(self, row: list[int], no_space: bool, scale: int) -> dict[str, Any]:
        """The statistics from the native engine's counts (the same divisions)."""
        names = _count_names()
        col = dict(zip(names, row, strict=False))
        words, lines, unit_chars = col["words"], col["lines"], col["unit_chars"]

        def ratio(a: int, b: int) -> float:
            return a / b if b else 0.0

        stats: dict[str, Any] = {
            "words": words,
            "mean_word_length": ratio(col["word_chars"], words),
            "symbol_word_ratio": ratio(col["symbols"], words),
            "alpha_words": ratio(col["alpha_words"], words),
            "stop_words": col["stop_words"],
            "bullet_lines": ratio(col["bullet_lines"], lines),
            "ellipsis_lines": ratio(col["ellipsis_lines"], lines),
            "dup_lines": ratio(col["dup_lines"], lines),
            "dup_paragraphs": ratio(col["dup_paragraphs"], col["paragraphs"]),
            "dup_line_chars": ratio(col["dup_line_chars"], col["line_chars"]),
            "dup_paragraph_chars": ratio(col["dup_paragraph_chars"], col["paragraph_chars"]),
            "chars_no_space": col["nonspace_chars"],
            "sentences": col["sentences"],
            "lorem_ipsum": bool(col["lorem_ipsum"]),
            "curly_bracket": bool(col["curly_bracket"]),
            "top": {},
            "dup": {},
        }
        if scale and unit_chars:
            tops = self.c.max_top_ngram_chars
            grams = row[len(names) :]
            for k, (n, _) in enumerate(tops):
                count, chars = grams[2 * k], grams[2 * k + 1]
                stats["top"][n] = 0.0 if count < 2 else min(1.0, count * chars / unit_chars)
            for k, (n, _) in enumerate(self.c.max_dup_ngram_chars):
                stats["dup"][n] = float(grams[2 * len(tops) + k]) / unit_chars
        return stats

    def _outcome(
        self,
        text: str,
        stats: dict[str, Any],
        no_space: bool,
        stop_rule: bool,
        counts: Counter[str],
    ) -> Outcome:
        failed = self.failures_from(stats, no_space=no_space, stop_rule=stop_rule)
        policy = {"quality_policy": "no_space" if no_space else "words"}
        if failed:
            return Outcome(None, tuple(failed), policy, counts)
        return Outcome(text, (), policy, counts)

    def failures(
        self, text: str, *, no_space: bool, stop_rule: bool, scale: int | None = None
    ) -> list[str]:
        """The rules ``text`` fails (Python statistics)."""
        if scale is None:
            scale = 1 if not no_space else (self.c.no_space_ngram_scale or 0)
        stats = self.stats_reference(text, no_space=no_space, scale=scale)
        return self.failures_from(stats, no_space=no_space, stop_rule=stop_rule)

    def failures_from(
        self, stats: Mapping[str, Any], *, no_space: bool, stop_rule: bool
    ) -> list[str]:
        """The rules that fire on ``stats``, in the order of :meth:`QualityConfig.rules`."""
        c = self.c
        failed: list[str] = []

        def check(name: str, threshold: Any, value: float, low: bool) -> None:
            if threshold is not None and (value < threshold if low else value > threshold):
                failed.append(name)

        if no_space:
            n_chars = stats["chars_no_space"]
            check("quality.chars_no_space", c.min_chars_no_space, n_chars, True)
            check("quality.chars_no_space_max", c.max_chars_no_space, n_chars, False)
        else:
            check("gopher.word_count", c.min_words, stats["words"], True)
            check("gopher.word_count_max", c.max_words, stats["words"], False)
            mean = stats["mean_word_length"]
            check("gopher.mean_word_length", c.min_mean_word_length, mean, True)
            check("gopher.mean_word_length_max", c.max_mean_word_length, mean, False)
            ratio = stats["symbol_word_ratio"]
            check("gopher.symbol_word_ratio", c.max_symbol_word_ratio, ratio, False)
            check("gopher.alpha_words", c.min_alpha_words, stats["alpha_words"], True)
        if stop_rule:
            check("gopher.stop_words", c.min_stop_words, stats["stop_words"], True)
        check("gopher.bullet_lines", c.max_bullet_lines, stats["bullet_lines"], False)
        check("gopher.ellipsis_lines", c.max_ellipsis_lines, stats["ellipsis_lines"], False)
        check("gopher.dup_lines", c.max_dup_lines, stats["dup_lines"], False)
        check("gopher.dup_paragraphs", c.max_dup_paragraphs, stats["dup_paragraphs"], False)
        check("gopher.dup_line_chars", c.max_dup_line_chars, stats["dup_line_chars"], False)
        check(
            "gopher.dup_paragraph_chars",
            c.max_dup_paragraph_chars,
            stats["dup_paragraph_chars"],
            False,
        )
        for n, t in c.max_top_ngram_chars:
            if n in stats["top"]:
                check(f"gopher.top_{n}gram_chars", t, stats["top"][n], False)
        for n, t in c.max_dup_ngram_chars:
            if n in stats["dup"]:
                check(f"gopher.dup_{n}gram_chars", t, stats["dup"][n], False)
        if c.c4_min_sentences is not None:
            check("c4.min_sentences", c.c4_min_sentences, stats["sentences"], True)
        if c.c4_lorem_ipsum and stats["lorem_ipsum"]:
            failed.append("c4.lorem_ipsum")
        if c.c4_curly_bracket and stats["curly_bracket"]:
            failed.append("c4.curly_bracket")
        return failed
