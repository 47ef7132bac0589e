"""Built-in audit slices: code, numbers, URLs, emoji, mixed scripts, length and quality
bands, computed from the text without a record field. Each is a partition, so its
per-slice totals add up to the overall totals (the slice invariant)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tokenpact.audit.builtin_slices import BUILTIN_SLICES, quality_score, slice_values
from tokenpact.audit.corpus import AuditCorpus
from tokenpact.audit.run import AuditOptions, audit_tokenizers
from tokenpact.errors import ConfigError

EXAMPLES = [
    "def area(r):\n    return 3.14159 * r ** 2\n",
    "See https://www.python.org/downloads for version 3.11.",
    "Great job 🎉 see you soon",
    "Москва is the capital; Berlin ist die Hauptstadt von Deutschland.",
    "東京は日本の首都です。カタカナもひらがなも漢字も。",
    "The cat sleeps on the warm mat near the door today.",
]


def test_each_slice_on_small_examples() -> None:
    assert slice_values("@code", EXAMPLES) == ["code"] + ["prose"] * 5
    assert slice_values("@numbers", EXAMPLES)[:3] == ["with_numbers"] * 2 + ["without_numbers"]
    assert slice_values("@urls", EXAMPLES)[:3] == ["without_urls", "with_urls", "without_urls"]
    assert slice_values("@emoji", EXAMPLES)[1:3] == ["without_emoji", "with_emoji"]
    # Cyrillic + Latin is mixed; Japanese (Han + kana) is one writing system.
    assert slice_values("@scripts", EXAMPLES)[3:] == ["mixed", "single", "single"]
    assert slice_values("@scripts", ["1234 !!"]) == ["no_letters"]
    assert slice_values("@length", ["x" * 63, "x" * 64, "é" * 300, "x" * 5000, "x" * 40000]) == [
        "1: <64 B",
        "2: 64-511 B",
        "3: 512 B-4 KiB",
        "4: 4-32 KiB",
        "5: >=32 KiB",
    ]
    # The four checks: letters in words, mean word length, symbols, duplicate lines.
    assert quality_score(EXAMPLES[5]) == 1.0
    assert quality_score("## ..\n## ..\n## ..") == 0.0
    assert slice_values("@quality", ["", EXAMPLES[5]]) == ["no_words", "high (1.0)"]
    with pytest.raises(ConfigError, match="unknown built-in slice"):
        slice_values("@nope", EXAMPLES)


def test_code_slice_separates_real_code_from_prose(docs_corpus: AuditCorpus) -> None:
    values = slice_values("@code", docs_corpus.texts)
    by_origin = Counter(zip(docs_corpus.fields["slice"], values, strict=True))
    code_total = by_origin["code-py", "code"] + by_origin["code-py", "prose"]
    assert by_origin["code-py", "code"] >= 0.8 * code_total
    for origin in ("prose-en", "gettext"):
        total = by_origin[origin, "code"] + by_origin[origin, "prose"]
        assert by_origin[origin, "prose"] >= 0.95 * total


def test_builtin_slices_in_an_audit_add_up(small_tok: Any, docs_corpus: AuditCorpus) -> None:
    corpus = AuditCorpus(docs_corpus.texts[:20] + EXAMPLES, name="mixed")
    report = audit_tokenizers({"t": small_tok}, corpus, options=AuditOptions(selection=None))
    entry = report["tokenizers"]["t"]
    overall = entry["metrics"]["overall"]
    assert set(entry["builtin_slices"]) == set(BUILTIN_SLICES)
    for name, slices in entry["builtin_slices"].items():
        assert list(slices) == report["corpus"]["builtin_slices"][name]
        assert sum(s["tokens"] for s in slices.values()) == overall["tokens"], name
        assert sum(s["records"] for s in slices.values()) == len(corpus), name
    with_emoji = slice_values("@emoji", corpus.texts).count("with_emoji")
    assert with_emoji >= 1
    assert entry["builtin_slices"]["@emoji"]["with_emoji"]["records"] == with_emoji
    # A built-in slice also works as the slice field (no record field needed).
    names, codes = corpus.slice_codes("@length")
    assert names == sorted(set(slice_values("@length", corpus.texts)))
    assert len(codes) == len(corpus)
    off = audit_tokenizers(
        {"t": small_tok}, corpus, options=AuditOptions(selection=None, builtin_slices=())
    )
    assert off["tokenizers"]["t"]["builtin_slices"] == {}


def test_the_reference_tokenizer_has_no_amplification_on_builtin_slices(
    small_tok: Any, docs_corpus: AuditCorpus
) -> None:
    """Amplification compares a tokenizer with the reference; the reference itself has
    none, on the field's slices and on the built-in ones alike."""
    report = audit_tokenizers(
        {"ref": small_tok, "other": small_tok},
        docs_corpus,
        options=AuditOptions(selection=None, builtin_slices=("@emoji",)),
    )
    ref, other = report["tokenizers"]["ref"], report["tokenizers"]["other"]
    for block in ref["builtin_slices"]["@emoji"].values():
        assert "amplification" not in block
    for block in other["builtin_slices"]["@emoji"].values():
        assert "amplification" in block
