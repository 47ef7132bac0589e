"""The dedup keep policy: once copies are found, keep the one with the best quality
score or the most usable licence, never keep a document whose licence class is not
allowed, and record every cluster's choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenpact.cli.main import cli
from tokenpact.data import Document, KeepPolicy, deduplicate
from tokenpact.errors import ConfigError, InvalidInputError

TEXT = "the quick brown fox jumps over the lazy dog near the river bank today"


def _docs() -> list[Document]:
    return [
        # a and b are exact copies (b differs by whitespace only); c is a near copy.
        Document("a", TEXT, "web", license_class="unknown", fields={"quality": 0.2}),
        Document("b", TEXT + "  ", "web", license_class="cc-by", fields={"quality": 0.9}),
        Document(
            "c",
            TEXT.replace("today", "tonight"),
            "books",
            license_class="public-domain",
            fields={"quality": 0.5},
        ),
        Document(
            "d", "an unrelated page about tides and moons", "web", license_class="proprietary"
        ),
    ]


def test_without_a_policy_the_smallest_id_survives() -> None:
    out = deduplicate(_docs(), near=0.5)
    assert [d.doc_id for d in out.kept] == ["a", "d"]
    assert "keep" not in out.report.to_json()


def test_quality_keeps_the_highest_score_in_every_cluster() -> None:
    out = deduplicate(_docs(), near=0.5, keep=KeepPolicy("quality"))
    assert [d.doc_id for d in out.kept] == ["b", "d"]
    assert out.exact.duplicate_of == {"a": "b"}
    assert out.near is not None and out.near.duplicate_of == {"c": "b"}
    records = out.report.to_json()["keep"]
    assert [(r["stage"], r["kept"], r["reason"]) for r in records] == [
        ("exact", "b", "quality"),
        ("near", "b", "quality"),
    ]
    assert records[0]["members"] == [
        {"doc_id": "a", "license_class": "unknown", "quality": 0.2},
        {"doc_id": "b", "license_class": "cc-by", "quality": 0.9},
    ]
    assert out.report.clusters[0]["kept"] == "b"


def test_license_order_wins_over_quality() -> None:
    policy = KeepPolicy("license", license_order=("public-domain", "cc-by"))
    out = deduplicate(_docs(), near=0.5, keep=policy)
    assert [d.doc_id for d in out.kept] == ["c", "d"]
    near = [r for r in out.report.to_json()["keep"] if r["stage"] == "near"]
    assert near[0]["kept"] == "c" and near[0]["reason"] == "license"
    # Equal licence rank: quality decides, then the doc_id.
    same = [Document("x", "t", fields={"quality": 1}), Document("y", "t", fields={"quality": 3})]
    assert policy.choose(same) == (same[1], "quality")
    tied = [Document("y", "t"), Document("x", "t")]
    assert policy.choose(tied) == (tied[1], "doc_id")


def test_allowed_licenses_filter_before_dedup() -> None:
    policy = KeepPolicy("quality", allowed_licenses=("public-domain", "unknown"))
    out = deduplicate(_docs(), near=0.5, keep=policy)
    # b (cc-by, the best score) and d (proprietary) are filtered out, so a and c remain
    # candidates; c's higher score makes it the near survivor.
    assert [d.doc_id for d in out.kept] == ["c"]
    assert out.report.totals["license_removed"] == 2
    assert out.report.per_source["web"]["license_removed"] == 2
    assert out.report.settings["keep"]["allowed_licenses"] == ["public-domain", "unknown"]
    assert "Removed by licence class: 2" in out.report.to_markdown()
    # Only allowed classes survive, whatever the policy prefers.
    assert {d.license_class for d in out.kept} <= {"public-domain", "unknown"}


def test_policy_errors_are_typed() -> None:
    with pytest.raises(ConfigError, match="unknown keep rule"):
        KeepPolicy("newest")
    with pytest.raises(ConfigError, match="empty"):
        KeepPolicy(allowed_licenses=())
    with pytest.raises(InvalidInputError, match="quality score is a number"):
        KeepPolicy().quality_of(Document("a", "t", fields={"quality": "high"}))


def test_cli_keep_and_licence_options(tmp_path: Path) -> None:
    rows = [
        {"id": d.doc_id, "text": d.text, "license": d.license_class, **(d.fields or {})}
        for d in _docs()
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, report = tmp_path / "kept.jsonl", tmp_path / "report.json"
    args = ["data", "dedup", str(src), "-o", str(out), "--report", str(report), "--near", "0.5"]
    extra = ["--keep", "quality", "--license-field", "license", "--allow-license", "cc-by"]
    extra += ["--allow-license", "public-domain", "--allow-license", "unknown"]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == ["b"]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["totals"]["license_removed"] == 1
    assert [r["kept"] for r in data["keep"]] == ["b", "b"]
