"""The audit report end to end: CLI, report.json, a deterministic self-contained HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tokenpact.audit.corpus import AuditCorpus
from tokenpact.audit.html import CHARTS
from tokenpact.cli.main import cli

from .conftest import gettext_parallel_items


@pytest.fixture(scope="module")
def inputs(
    tmp_path_factory: pytest.TempPathFactory, tp: Any, docs_corpus: AuditCorpus
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("audit-inputs")
    corpus = root / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as handle:
        for i, text in enumerate(docs_corpus.texts):
            record = {
                "id": f"d{i}",
                "text": text,
                "slice": docs_corpus.fields["slice"][i],
                "source": docs_corpus.fields["source"][i],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    parallel = root / "parallel.jsonl"
    with parallel.open("w", encoding="utf-8") as handle:
        for item in gettext_parallel_items():
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    small = tp.train_bpe(docs_corpus.texts, vocab_size=600, special_tokens=["<|endoftext|>"])
    large = tp.train_bpe(docs_corpus.texts, vocab_size=1200, special_tokens=["<|endoftext|>"])
    small.save(root / "small")
    large.save(root / "large")
    return {
        "corpus": corpus,
        "parallel": parallel,
        "small": root / "small",
        "large": root / "large",
    }


def run_audit(inputs: dict[str, Path], out: Path, *extra: str) -> Any:
    args = [
        "audit",
        "-t",
        f"small={inputs['small']}",
        "-t",
        f"large={inputs['large']}",
        "--corpus",
        str(inputs["corpus"]),
        "--slice-field",
        "slice",
        "--parallel",
        str(inputs["parallel"]),
        "--context-length",
        "512",
        "--d-model",
        "256",
        "--sweep-sizes",
        "300,500,800",
        "--group-field",
        "source",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_cli_writes_json_and_html(inputs: dict[str, Path], tmp_path: Path) -> None:
    result = run_audit(inputs, tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "winner:" in result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["schema"] == "tokenpact.audit/v1"
    assert set(report["tokenizers"]) == {"small", "large"}
    large = report["tokenizers"]["large"]
    assert large["metrics"]["overall"]["amplification"]["ratio_of_totals"] < 1
    assert large["premium"]["languages"]
    assert large["throughput"]["encode_seconds"] > 0
    sweep = report["selection"]["sweep"]
    assert [p["vocab_size"] for p in sweep["points"]] == [300, 500, 800]
    assert report["selection"]["test"]["evaluated_after_freeze"] is True
    html = (tmp_path / "r" / "report.html").read_text()
    assert len(html.encode()) < 2 * 1024 * 1024
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "<h2>Built-in slices</h2>" in html and "<td>@code</td>" in html
    for chart in CHARTS:
        figure = re.search(
            rf'<figure class="chart" data-chart="{chart}">(.*?)</figure>', html, re.S
        )
        assert figure, chart
        assert 'class="mark"' in figure.group(1), chart


def test_html_is_byte_identical_across_runs(inputs: dict[str, Path], tmp_path: Path) -> None:
    assert run_audit(inputs, tmp_path / "a").exit_code == 0
    assert run_audit(inputs, tmp_path / "b", "--threads", "1").exit_code == 0
    a = (tmp_path / "a" / "report.html").read_bytes()
    b = (tmp_path / "b" / "report.html").read_bytes()
    assert a == b
    # The JSON keeps the machine-dependent figures the page leaves out.
    ja = json.loads((tmp_path / "a" / "report.json").read_text())
    jb = json.loads((tmp_path / "b" / "report.json").read_text())
    assert jb["tokenizers"]["small"]["throughput"]["threads"] == 1
    assert ja["tokenizers"]["small"]["metrics"] == jb["tokenizers"]["small"]["metrics"]


def test_usage_and_data_errors_exit_codes(inputs: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["audit", "-t", str(inputs["small"]), "--out", str(tmp_path)])
    assert missing.exit_code == 2  # --corpus is required
    bad_field = runner.invoke(
        cli,
        [
            "audit",
            "-t",
            str(inputs["small"]),
            "--corpus",
            str(inputs["corpus"]),
            "--slice-field",
            "language",
            "--out",
            str(tmp_path / "x"),
            "--no-select",
        ],
    )
    assert bad_field.exit_code == 1
    assert "--slice-field" in bad_field.output
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text('{"text": "a"}\n{"text": "b"}\n', encoding="utf-8")
    few = runner.invoke(
        cli,
        ["audit", "-t", str(inputs["small"]), "--corpus", str(tiny), "--out", str(tmp_path / "t")],
    )
    assert few.exit_code == 1 and "--no-select" in few.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    none = runner.invoke(
        cli,
        ["audit", "-t", str(inputs["small"]), "--corpus", str(empty), "--out", str(tmp_path / "e")],
    )
    assert none.exit_code == 1 and "no records" in none.output
    gated = run_audit(inputs, tmp_path / "g", "--max-vocab-params", "10")
    assert gated.exit_code == 1
    assert "no candidate passes" in gated.output
    # The evidence is still written; the test split stays sealed.
    report = json.loads((tmp_path / "g" / "report.json").read_text())
    assert report["selection"]["selection"]["winner"] is None
    assert report["selection"]["test"] is None
    assert "No winner" in (tmp_path / "g" / "report.html").read_text()
