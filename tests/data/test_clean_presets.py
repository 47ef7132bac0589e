"""Cleaning presets per content type and the drop guard (issue 37): web thresholds on
fortunes and man pages silently dropped 99% of the documents."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenpact.cli.main import cli
from tokenpact.data import Document
from tokenpact.data.cleaning import CleaningPipeline, QualityConfig, clean
from tokenpact.data.cleaning.presets import PRESETS, preset_config
from tokenpact.errors import ConfigError

from .conftest import shared_corpus_file


def test_presets_are_valid_quality_configs() -> None:
    for name in PRESETS:
        pipeline = CleaningPipeline.from_config(preset_config(name, ["quality"]), steps=["quality"])
        assert isinstance(pipeline.steps[0], QualityConfig)
    with pytest.raises(ConfigError, match="unknown cleaning preset"):
        preset_config("forum")


def test_user_options_win_over_the_preset() -> None:
    config = preset_config("prose", ["quality"], {"quality": {"min_words": 7}})
    assert config["quality"]["min_words"] == 7
    assert config["quality"]["min_stop_words"] is None  # the rest of the preset stays
    assert preset_config("prose", ["pii"]) == {}  # steps not run get no options


def _rows(docs: list[Document]) -> list[dict[str, str]]:
    return [{"id": d.doc_id, "text": d.text, "src": d.source} for d in docs]


def test_drop_guard_exits_1_and_names_the_fix(tmp_path: Path, real_docs: list[Document]) -> None:
    code = [d for d in real_docs if d.source == "code-py"][:40]
    corpus = tmp_path / "code.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in _rows(code)), encoding="utf-8")
    args = ["data", "clean", str(corpus), str(tmp_path / "out.jsonl"), "--steps", "quality",
            "--source-field", "src"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "of source 'code-py'" in result.output and "--preset" in result.output
    assert (tmp_path / "out.jsonl").exists()  # the outputs are written for review
    assert CliRunner().invoke(cli, [*args, "--allow-drop"]).exit_code == 0
    result = CliRunner().invoke(cli, [*args, "--preset", "code"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output  # paragraphs under 5 words still go


def test_presets_fit_the_bench_mixed_slices() -> None:
    from tokenpact.data import read_documents

    path = shared_corpus_file("bench-mixed.jsonl.gz")
    per: dict[str, list[Document]] = defaultdict(list)
    for d in read_documents(path, source_field="slice", duplicate_ids="number"):
        if len(per[d.source]) < 100:
            per[d.source].append(d)
    fits = {"fortune-en": "short", "fortune-de": "short", "man-de": "technical",
            "man-fr": "technical", "prose-en": "prose", "code-py": "code"}  # fmt: skip
    for slice_name, preset in fits.items():
        docs = per[slice_name]
        web = clean(docs, steps=["quality"])
        fitted = clean(docs, config=preset_config(preset, ["quality"]), steps=["quality"])
        web_drop = Counter(d.kept for d in web.documents)[False] / len(docs)
        fit_drop = Counter(d.kept for d in fitted.documents)[False] / len(docs)
        assert fit_drop <= 0.2, (slice_name, preset, fit_drop)
        assert fit_drop <= web_drop
        assert not fitted.drops(0.2)
