"""The quality rules as datatrove 0.10.1 implements them (``QualityConfig(mode="datatrove")``).

tokenpact's own Gopher and C4 rules (:mod:`.quality`) differ from datatrove's
``GopherRepetitionFilter``, ``GopherQualityFilter`` and ``C4QualityFilter`` in details
listed in docs/DATA.md. This module follows datatrove's code instead, filter by filter in
the order of FineWeb's pipeline (repetition, quality, then C4 when ``c4_line_filter`` is
on), each returning at its first failing rule with datatrove's own reason name.

Words and sentences come from one of two word tokenizers (``datatrove_words``):

* ``"spacy"``: what datatrove itself uses for English, a blank spaCy pipeline with a
  sentencizer (spaCy must be installed, as it must be for datatrove). Decisions then
  match datatrove's filters with their default language; tests/data/test_datatrove_mode.py
  compares with datatrove's own classes on the mixed corpus.
* ``"whitespace"`` (the default, no extra dependency): words are ``str.split()`` tokens
  and a line's sentences end at ``[.!?]`` runs followed by a space or the end of the line
  (at least one per line, as datatrove counts). The test plugs the same tokenizer into
  datatrove (its ``WordTokenizer`` extension point) and requires the same decision and
  reason on every document; against datatrove's spaCy words the decisions differ on a
  few percent of documents (docs/DATA.md).

The punctuation set is datatrove's (``datatrove.utils.text.PUNCTUATION_SET``, Apache-2.0).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from .quality_stats import C4_POLICY_PHRASES, duplicate_counts

_PUNCTUATION_RANGES = (
    (0x0, 0x8),
    (0xB, 0x1F),
    (0x21, 0x2F),
    (0x3A, 0x40),
    (0x5B, 0x60),
    (0x7B, 0x9F),
    (0xAB, 0xAB),
    (0xB4, 0xB4),
    (0xBB, 0xBB),
    (0x589, 0x589),
    (0x61D, 0x61F),
    (0x6D4, 0x6D4),
    (0x700, 0x702),
    (0x7F9, 0x7F9),
    (0x837, 0x837),
    (0x839, 0x839),
    (0x83D, 0x83E),
    (0x964, 0x965),
    (0x104A, 0x104B),
    (0x1362, 0x1362),
    (0x1367, 0x1368),
    (0x166E, 0x166E),
    (0x1735, 0x1736),
    (0x17D4, 0x17D6),
    (0x17D9, 0x17DA),
    (0x1803, 0x1803),
    (0x1809, 0x1809),
    (0x1944, 0x1945),
    (0x1AA8, 0x1AAB),
    (0x1B5A, 0x1B5B),
    (0x1B5E, 0x1B5F),
    (0x1B7D, 0x1B7E),
    (0x1C3B, 0x1C3C),
    (0x1C7E, 0x1C7F),
    (0x2013, 0x2014),
    (0x2019, 0x2019),
    (0x201C, 0x201E),
    (0x2026, 0x2026),
    (0x203C, 0x203D),
    (0x2047, 0x2049),
    (0x2236, 0x2236),
    (0x2501, 0x2501),
    (0x25BA, 0x25BA),
    (0x2E2E, 0x2E2E),
    (0x2E3C, 0x2E3C),
    (0x2E53, 0x2E54),
    (0x3001, 0x3002),
    (0x3008, 0x300D),
    (0x3010, 0x3011),
    (0xA4FF, 0xA4FF),
    (0xA60E, 0xA60F),
    (0xA6F3, 0xA6F3),
    (0xA6F7, 0xA6F7),
    (0xA876, 0xA877),
    (0xA8CE, 0xA8CF),
    (0xA92F, 0xA92F),
    (0xA9C8, 0xA9C9),
    (0xAA5D, 0xAA5F),
    (0xAAF0, 0xAAF1),
    (0xABEB, 0xABEB),
    (0xFE52, 0xFE52),
    (0xFE56, 0xFE57),
    (0xFF01, 0xFF01),
    (0xFF05, 0xFF05),
    (0xFF08, 0xFF09),
    (0xFF0C, 0xFF0C),
    (0xFF0E, 0xFF0E),
    (0xFF11, 0xFF11),
    (0xFF1A, 0xFF1B),
    (0xFF1F, 0xFF1F),
    (0xFF5E, 0xFF5E),
    (0xFF61, 0xFF61),
    (0x10A56, 0x10A57),
    (0x10F55, 0x10F59),
    (0x10F86, 0x10F89),
    (0x11047, 0x11048),
    (0x110BE, 0x110C1),
    (0x11141, 0x11143),
    (0x111C5, 0x111C6),
    (0x111CD, 0x111CD),
    (0x111DE, 0x111DF),
    (0x11238, 0x11239),
    (0x1123B, 0x1123C),
    (0x112A9, 0x112A9),
    (0x1144B, 0x1144C),
    (0x115C2, 0x115C3),
    (0x115C9, 0x115D7),
    (0x11641, 0x11642),
    (0x1173C, 0x1173E),
    (0x11944, 0x11944),
    (0x11946, 0x11946),
    (0x11A42, 0x11A43),
    (0x11A9B, 0x11A9C),
    (0x11C41, 0x11C42),
    (0x11EF7, 0x11EF8),
    (0x11F43, 0x11F44),
    (0x16A6E, 0x16A6F),
    (0x16AF5, 0x16AF5),
    (0x16B37, 0x16B38),
    (0x16B44, 0x16B44),
    (0x16E98, 0x16E98),
    (0x1BC9F, 0x1BC9F),
    (0x1DA88, 0x1DA88),
)
PUNCTUATION_SET = frozenset(chr(c) for a, b in _PUNCTUATION_RANGES for c in range(a, b + 1))
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")


WORD_TOKENIZERS = ("whitespace", "spacy")


def words(text: str, tokenizer: str = "whitespace") -> list[str]:
    """The mode's words: whitespace tokens, or spaCy's as datatrove splits English."""
    if tokenizer == "spacy":
        return _spacy_words(text)
    return text.split()


def sentence_count(line: str, tokenizer: str = "whitespace") -> int:
    """Sentences of one line, at least 1 (datatrove's ``split_into_sentences`` of a line
    without sentence ends is the whole line). Whitespace mode: ends of ``[.!?]`` runs
    before a space or the end, plus a trailing unterminated piece."""
    if tokenizer == "spacy":
        return max(1, len(_spacy_sentence_spans(line)))
    ends = [m.end() for m in _SENTENCE_END.finditer(line)]
    if line[ends[-1] if ends else 0 :].strip():
        ends.append(len(line))
    return max(1, len(ends))


_SPACY: list[Any] = []


def _spacy() -> Any:
    """datatrove's English word tokenizer: ``spacy.blank("en")`` plus a sentencizer."""
    if not _SPACY:
        try:
            import spacy
        except ImportError:
            raise ConfigError(
                'datatrove_words="spacy" needs spaCy (pip install spacy), as datatrove '
                'does for English; or use datatrove_words="whitespace"'
            ) from None
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        _SPACY.append(nlp)
    return _SPACY[0]


def _spacy_doc(text: str) -> Any:
    nlp = _spacy()
    nlp.max_length = len(text) + 10
    try:
        return nlp(text)
    except Exception:
        # spaCy's tokenizer fails on text holding its attribute name "IS_ALPHA";
        # datatrove retries without it, and so do we.
        if "IS_ALPHA" not in text:
            raise
        return nlp(text.replace("IS_ALPHA", ""))


def _spacy_words(text: str) -> list[str]:
    # datatrove strips each token and drops empty ones (whitespace tokens).
    tokens = (token.text.strip() for token in _spacy_doc(text))
    return [t for t in tokens if t]


def _spacy_sentence_spans(text: str) -> list[tuple[int, int]]:
    return [(sent.start_char, sent.end_char) for sent in _spacy_doc(text).sents]


@dataclass(frozen=True)
class DatatroveThresholds:
    """datatrove's filter parameters (None or 0 turns a check off, as there), made from
    a :class:`.quality.QualityConfig` by :func:`thresholds_from` (its defaults are
    datatrove's)."""

    min_doc_words: int | None
    max_doc_words: int | None
    min_avg_word_length: float | None
    max_avg_word_length: float | None
    max_symbol_word_ratio: float | None
    max_bullet_lines_ratio: float | None
    max_ellipsis_lines_ratio: float | None
    max_non_alpha_words_ratio: float | None
    min_stop_words: int | None
    stop_words: tuple[str, ...]
    dup_line_frac: float | None
    dup_para_frac: float | None
    dup_line_char_frac: float | None
    dup_para_char_frac: float | None
    top_n_grams: tuple[tuple[int, float], ...]
    dup_n_grams: tuple[tuple[int, float], ...]
    c4: bool
    c4_min_num_sentences: int
    c4_min_words_per_line: int
    c4_filter_lorem_ipsum: bool
    c4_filter_javascript: bool
    c4_filter_curly_bracket: bool
    c4_filter_policy: bool
    word_tokenizer: str
    c4_max_word_length: int = 1000  # no QualityConfig option: datatrove's default


def _top_duplicate(grams: Sequence[str]) -> int:
    counts: dict[str, int] = {}
    for g in grams:
        counts[g] = counts.get(g, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1])  # the first of the most frequent
    return len(best[0]) * best[1]


def _all_duplicate(ws: Sequence[str], n: int) -> int:
    seen: set[str] = set()
    repeated = idx = 0
    while idx < len(ws) - n + 1:
        gram = "".join(ws[idx : idx + n])
        if gram in seen:
            repeated += len(gram)
            idx += n
        else:
            seen.add(gram)
            idx += 1
    return repeated


def repetition(text: str, t: DatatroveThresholds) -> str | None:
    """``GopherRepetitionFilter``: the failing rule's name, or None."""
    if not text:
        return "empty"
    paragraphs = _PARAGRAPHS.split(text.strip())
    dup, chars = duplicate_counts(paragraphs)
    if t.dup_para_frac and dup / len(paragraphs) > t.dup_para_frac:
        return "dup_para_frac"
    if t.dup_para_char_frac and chars / len(text) > t.dup_para_char_frac:
        return "dup_para_char_frac"
    lines = _LINES.split(text)
    dup, chars = duplicate_counts(lines)
    if t.dup_line_frac and dup / len(lines) > t.dup_line_frac:
        return "dup_line_frac"
    if t.dup_line_char_frac and chars / len(text) > t.dup_line_char_frac:
        return "dup_line_char_frac"
    ws = words(text, t.word_tokenizer)
    for n, frac in t.top_n_grams:
        grams = [" ".join(ws[i : i + n]) for i in range(len(ws) - n + 1)]
        if grams and _top_duplicate(grams) / len(text) > frac:
            return f"top_{n}_gram"
    for n, frac in t.dup_n_grams:
        if _all_duplicate(ws, n) / len(text) > frac:
            return f"duplicated_{n}_n_grams"
    return None


def gopher_quality(text: str, t: DatatroveThresholds) -> str | None:
    """``GopherQualityFilter``: the failing rule's name, or None."""
    ws = words(text, t.word_tokenizer)
    n_words = len(ws)
    kept = [w for w in ws if any(ch not in PUNCTUATION_SET for ch in w)]
    if t.min_doc_words and len(kept) < t.min_doc_words:
        return "gopher_short_doc"
    if t.max_doc_words and len(kept) > t.max_doc_words:
        return "gopher_long_doc"
    if kept:  # datatrove's mean of no words is NaN, which passes both comparisons
        mean = sum(len(w) for w in kept) / len(kept)
        if t.min_avg_word_length and mean < t.min_avg_word_length:
            return "gopher_below_avg_threshold"
        if t.max_avg_word_length and mean > t.max_avg_word_length:
            return "gopher_above_avg_threshold"
    if not n_words:  # datatrove divides by zero here; no words fail no ratio
        return None
    if t.max_symbol_word_ratio and text.count("#") / n_words > t.max_symbol_word_ratio:
        return "gopher_too_many_hashes"
    ellipses = text.count("...") + text.count("\u2026")
    if t.max_symbol_word_ratio and ellipses / n_words > t.max_symbol_word_ratio:
        return "gopher_too_many_ellipsis"
    lines = text.splitlines()
    bullets = sum(s.lstrip().startswith(("\u2022", "-")) for s in lines)
    if t.max_bullet_lines_ratio and bullets / len(lines) > t.max_bullet_lines_ratio:
        return "gopher_too_many_bullets"
    ends = sum(s.rstrip().endswith(("...", "\u2026")) for s in lines)
    if t.max_ellipsis_lines_ratio and ends / len(lines) > t.max_ellipsis_lines_ratio:
        return "gopher_too_many_end_ellipsis"
    alpha = sum(any(c.isalpha() for c in w) for w in ws)
    if t.max_non_alpha_words_ratio and alpha / n_words < t.max_non_alpha_words_ratio:
        return "gopher_below_alpha_threshold"
    if t.min_stop_words and len(set(t.stop_words) & set(ws)) < t.min_stop_words:
        return "gopher_enough_stop_words"
    return None


def c4_quality(text: str, t: DatatroveThresholds) -> tuple[str | None, str]:
    """``C4QualityFilter`` (lines split on line breaks): (failing rule or None, the text
    of the kept lines)."""
    sentences = 0
    kept: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        ws = line.split()
        if t.c4_max_word_length != -1 and any(len(w) > t.c4_max_word_length for w in ws):
            continue
        line = CITATION.sub("", line)
        if not line.endswith(END_PUNCTUATION) or line.endswith("..."):
            continue
        if len(ws) < t.c4_min_words_per_line:
            continue
        lowered = line.lower()
        if t.c4_filter_lorem_ipsum and "lorem ipsum" in lowered:
            return "lorem_ipsum", text
        if t.c4_filter_javascript and "javascript" in lowered:
            continue
        if t.c4_filter_curly_bracket and "{" in line:
            return "curly_bracket", text
        if t.c4_filter_policy and any(p in lowered for p in C4_POLICY_PHRASES):
            continue
        if t.c4_min_num_sentences != -1:
            sentences += sentence_count(line, t.word_tokenizer)
        kept.append(line)
    if sentences < t.c4_min_num_sentences:
        return "too_few_sentences", text
    return None, "\n".join(kept).strip()


def datatrove_decision(text: str, t: DatatroveThresholds) -> tuple[str | None, str]:
    """(reason ``datatrove.<filter>.<rule>`` or None, the text after the filters)."""
    reason = repetition(text, t)
    if reason is not None:
        return f"datatrove.gopher_repetition.{reason}", text
    reason = gopher_quality(text, t)
    if reason is not None:
        return f"datatrove.gopher_quality.{reason}", text
    if t.c4:
        reason, kept = c4_quality(text, t)
        if reason is not None:
            return f"datatrove.c4_quality.{reason}", text
        return None, kept
    return None, text


def rule_table(t: DatatroveThresholds) -> list[dict[str, Any]]:
    """The rules :func:`datatrove_decision` applies with ``t``, in its order, each named
    by the reason it reports (``QualityConfig.rules()`` of the mode)."""
    table: list[dict[str, Any]] = []

    def add(name: str, threshold: Any, op: str, scope: str = "any") -> None:
        if threshold:  # datatrove: None or 0 turns a check off
            table.append({"rule": name, "threshold": threshold, "fails_if": op, "scope": scope})

    rep, gq, c4 = (
        "datatrove.gopher_repetition.",
        "datatrove.gopher_quality.",
        "datatrove.c4_quality.",
    )
    add(rep + "empty", True, "empty document")
    add(rep + "dup_para_frac", t.dup_para_frac, "duplicate-paragraph share >")
    add(rep + "dup_para_char_frac", t.dup_para_char_frac, "dup-paragraph char share >")
    add(rep + "dup_line_frac", t.dup_line_frac, "duplicate-line share >")
    add(rep + "dup_line_char_frac", t.dup_line_char_frac, "dup-line char share >")
    for n, frac in t.top_n_grams:
        add(f"{rep}top_{n}_gram", frac, "top n-gram char share >")
    for n, frac in t.dup_n_grams:
        add(f"{rep}duplicated_{n}_n_grams", frac, "dup n-gram char share >")
    add(gq + "gopher_short_doc", t.min_doc_words, "words <")
    add(gq + "gopher_long_doc", t.max_doc_words, "words >")
    add(gq + "gopher_below_avg_threshold", t.min_avg_word_length, "mean word length <")
    add(gq + "gopher_above_avg_threshold", t.max_avg_word_length, "mean word length >")
    add(gq + "gopher_too_many_hashes", t.max_symbol_word_ratio, "#/words >")
    add(gq + "gopher_too_many_ellipsis", t.max_symbol_word_ratio, "ellipses/words >")
    add(gq + "gopher_too_many_bullets", t.max_bullet_lines_ratio, "bullet-line share >")
    add(gq + "gopher_too_many_end_ellipsis", t.max_ellipsis_lines_ratio, "ellipsis-line share >")
    add(gq + "gopher_below_alpha_threshold", t.max_non_alpha_words_ratio, "alpha-word share <")
    add(gq + "gopher_enough_stop_words", t.min_stop_words, "distinct stop words <")
    if t.c4:
        if t.c4_max_word_length != -1:
            add(c4 + "line_max_word_length", t.c4_max_word_length, "line word length >", "lines")
        add(c4 + "line_terminal_punctuation", True, "line lacks end punctuation", "lines")
        add(c4 + "line_min_words", t.c4_min_words_per_line, "line words <", "lines")
        add(c4 + "lorem_ipsum", t.c4_filter_lorem_ipsum, "contains 'lorem ipsum'")
        add(c4 + "line_javascript", t.c4_filter_javascript, "line has 'javascript'", "lines")
        add(c4 + "curly_bracket", t.c4_filter_curly_bracket, "contains '{'")
        add(c4 + "line_policy", t.c4_filter_policy, "line has a policy phrase", "lines")
        add(c4 + "too_few_sentences", max(t.c4_min_num_sentences, 0), "sentences <")
    return table


def thresholds_from(config: Any) -> DatatroveThresholds:
    """datatrove's parameters from a :class:`.quality.QualityConfig`."""
    c4_sentences = config.c4_min_sentences
    return DatatroveThresholds(
        min_doc_words=config.min_words,
        max_doc_words=config.max_words,
        min_avg_word_length=config.min_mean_word_length,
        max_avg_word_length=config.max_mean_word_length,
        max_symbol_word_ratio=config.max_symbol_word_ratio,
        max_bullet_lines_ratio=config.max_bullet_lines,
        max_ellipsis_lines_ratio=config.max_ellipsis_lines,
        max_non_alpha_words_ratio=config.min_alpha_words,
        min_stop_words=config.min_stop_words,
        stop_words=tuple(config.stop_words),
        dup_line_frac=config.max_dup_lines,
        dup_para_frac=config.max_dup_paragraphs,
        dup_line_char_frac=config.max_dup_line_chars,
        dup_para_char_frac=config.max_dup_paragraph_chars,
        top_n_grams=tuple(config.max_top_ngram_chars),
        dup_n_grams=tuple(config.max_dup_ngram_chars),
        c4=config.c4_line_filter,
        c4_min_num_sentences=-1 if c4_sentences is None else c4_sentences,
        c4_min_words_per_line=config.c4_min_words_per_line,
        c4_filter_lorem_ipsum=config.c4_lorem_ipsum,
        c4_filter_javascript=config.c4_javascript_lines,
        c4_filter_curly_bracket=config.c4_curly_bracket,
        c4_filter_policy=config.c4_policy_lines,
        word_tokenizer=config.datatrove_words,
    )
