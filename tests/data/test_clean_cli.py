"""``tokenpact data clean`` end to end on files the test writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenpact.cli.main import cli
from tokenpact.contract import CorpusManifest
from tokenpact.data import Document

pytest.importorskip("trafilatura")
pytest.importorskip("ftfy")
pytest.importorskip("py3langid")

PAGE = (
    "<!DOCTYPE html><html><head><title>Night trains</title>"
    '<link rel="canonical" href="https://example.org/trains"></head><body>'
    "<nav><a href='/'>Home</a> <a href='/blog'>Blog</a></nav><article><p>{body}</p>"
    "</article><footer>Copyright 2024 Example. All rights reserved.</footer></body></html>"
)
PROSE = (
    "Night trains are coming back to many European routes, and the operators say that "
    "travellers who want to avoid short flights fill the sleeping cars on most nights. "
    "A ticket with a bed costs more than a seat, but it also saves the price of a hotel "
    "room, and the train arrives in the city centre early in the morning. Contact the "
    "booking office at tickets@example.org for group fares."
)


@pytest.fixture()
def corpus(tmp_path: Path, real_docs: list[Document]) -> Path:
    rows = [{"id": d.doc_id, "text": d.text, "src": d.source} for d in real_docs[:60]]
    rows.append({"id": "page", "text": PAGE.format(body=PROSE), "src": "web"})
    rows.append({"id": "prose", "text": PROSE, "src": "web"})
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_clean_command_writes_outputs_and_manifest(tmp_path: Path, corpus: Path) -> None:
    config = tmp_path / "clean.json"
    config.write_text(json.dumps({"quality": {"min_words": 20}, "pii": {"policy": "replace"}}))
    out = tmp_path / "kept.jsonl"
    args = [
        "data",
        "clean",
        str(corpus),
        str(out),
        "--source-field",
        "src",
        "--steps",
        "extract,langid,quality,pii",
        "--config",
        str(config),
        "--rejected",
        str(tmp_path / "rejected.jsonl"),
        "--report",
        str(tmp_path / "report.json"),
        "--manifest",
        str(tmp_path / "corpus.json"),
        "--revision",
        "v1",
        "--allow-drop",  # web thresholds on harvested code drop most of it (checked below)
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "| extract | trafilatura" in result.output and "| pii | tokenpact" in result.output
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r for r in kept}
    assert "Copyright 2024" not in by_id["page"]["text"] and "Night trains" in by_id["page"]["text"]
    assert by_id["page"]["meta"]["url"] == "https://example.org/trains"
    assert "<EMAIL>" in by_id["prose"]["text"] and by_id["prose"]["meta"]["language"] == "en"
    rejected = [json.loads(x) for x in (tmp_path / "rejected.jsonl").read_text().splitlines()]
    assert rejected and all(r["step"] and r["reasons"] and "text" in r for r in rejected)
    assert len(kept) + len(rejected) == 62
    report = json.loads((tmp_path / "report.json").read_text())
    assert [s["step"] for s in report["steps"]] == ["extract", "langid", "quality", "pii"]
    assert report["steps"][2]["config"]["min_words"] == 20
    manifest = CorpusManifest.from_json(json.loads((tmp_path / "corpus.json").read_text()))
    assert manifest.revision == "v1" and len(manifest.documents) == len(kept)
    assert manifest.cleaning is not None and len(manifest.cleaning["dropped"]) == len(rejected)


def test_clean_command_eval_set_adds_decontamination(tmp_path: Path, corpus: Path) -> None:
    eval_file = tmp_path / "bench.jsonl"
    eval_file.write_text(json.dumps({"text": PROSE}) + "\n", encoding="utf-8")
    out = tmp_path / "kept.jsonl"
    args = ["data", "clean", str(corpus), str(out), "--steps", "extract,pii"]
    result = CliRunner().invoke(cli, [*args, "--eval-set", str(eval_file)])
    assert result.exit_code == 0, result.output
    assert "| decontam | tokenpact" in result.output
    kept_ids = {json.loads(line)["id"] for line in out.read_text().splitlines()}
    assert "prose" not in kept_ids and "page" not in kept_ids


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("latin1", "not UTF-8"),
        ("missing", "does not exist"),
        ("bad-step", "unknown cleaning steps"),
        ("bad-option", "unknown quality option"),
        ("bad-json", "not valid JSON"),
    ],
)
def test_clean_command_bad_input_is_a_clean_error(tmp_path: Path, setup: str, message: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "text": "hello"}) + "\n", encoding="utf-8")
    extra: list[str] = []
    if setup == "latin1":
        source = tmp_path / "latin1.txt"
        source.write_bytes("Grüße aus Köln".encode("latin-1"))
    elif setup == "missing":
        source = tmp_path / "nothing.jsonl"
    elif setup == "bad-step":
        extra = ["--steps", "langid,dedupe"]
    else:
        config = tmp_path / "c.json"
        text = '{"quality": {"min_word": 3}}' if setup == "bad-option" else "{oops"
        config.write_text(text, encoding="utf-8")
        extra = ["--config", str(config)]
    result = CliRunner().invoke(
        cli, ["data", "clean", str(source), str(tmp_path / "o.jsonl"), *extra]
    )
    assert result.exit_code == 1, result.output
    assert message in result.output and "Traceback" not in result.output
