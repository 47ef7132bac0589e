"""The cleaning pipeline on Ray (a 2-CPU loopback instance) equals the local run, byte
for byte: kept documents, rejected samples, report and corpus manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenpact.data import Document
from tokenpact.data.cleaning import (
    DecontamConfig,
    ExtractConfig,
    LangIdConfig,
    PiiConfig,
    QualityConfig,
    RepairConfig,
    clean,
)

from .test_ray_engine import cluster  # noqa: F401  (the module-scoped Ray instance)

pytest.importorskip("ray")
pytest.importorskip("trafilatura")
pytest.importorskip("ftfy")
pytest.importorskip("py3langid")

PAGE = (
    "<!DOCTYPE html><html><head><title>Notes</title></head><body><nav>Home | Blog</nav>"
    "<article><p>{body}</p></article><footer>Copyright Example</footer></body></html>"
)


@pytest.mark.usefixtures("cluster")
def test_ray_cleaning_equals_local(real_docs: list[Document], tmp_path: Path) -> None:
    docs = list(real_docs[:150])
    docs += [
        Document(f"page{i}", PAGE.format(body=d.text), source="html")
        for i, d in enumerate(real_docs[150:170])
    ]
    prose = (
        "The mail server keeps a copy of every message for thirty days, and the team that "
        "runs it answers questions about lost messages during office hours. When the "
        "queue grows too long, the oldest messages are moved to a slower disk so that new "
        "mail still arrives on time."
    )
    docs.append(Document("mail", prose + " Mail root@example.org or call +1 415 555 0100."))
    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text(
        "".join(json.dumps({"text": d.text}) + "\n" for d in real_docs[100:110]), "utf-8"
    )
    steps = [
        ExtractConfig(),
        RepairConfig(),
        LangIdConfig(),
        QualityConfig(min_words=10, min_stop_words=None),
        PiiConfig(),
        DecontamConfig(eval_sets=(str(eval_path),), policy="flag"),
    ]
    local = clean(docs, steps=steps)
    remote = clean(docs, steps=steps, engine="ray", ray_options={"block_docs": 16})
    local.write(
        tmp_path / "l.jsonl", rejected_path=tmp_path / "lr.jsonl", report_path=tmp_path / "l.json"
    )
    remote.write(
        tmp_path / "r.jsonl", rejected_path=tmp_path / "rr.jsonl", report_path=tmp_path / "r.json"
    )
    for a, b in (("l.jsonl", "r.jsonl"), ("lr.jsonl", "rr.jsonl"), ("l.json", "r.json")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes(), a
    assert local.corpus_manifest(revision="r").hash == remote.corpus_manifest(revision="r").hash
    # The run did real work on every step: pages extracted, rejects, PII, a flagged overlap.
    records = {r["step"]: r for r in local.step_records()}
    assert records["extract"]["counts"]["html"] == 20
    assert records["quality"]["dropped"] > 0
    assert records["pii"]["counts"]["EMAIL"] >= 1
    assert records["decontam"]["flagged"] >= 1


@pytest.mark.usefixtures("cluster")
def test_cli_ray_engine_equals_local(real_docs: list[Document], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": d.doc_id, "text": d.text} for d in real_docs[:80]]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    outputs = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.jsonl"
        manifest = tmp_path / f"{engine}-corpus.json"
        # Web thresholds on harvested paragraphs drop most of them; the comparison of
        # the engines needs the run to finish, so the drop guard is waived.
        args = ["data", "clean", str(corpus), str(out), "--engine", engine, "--allow-drop"]
        result = CliRunner().invoke(cli, [*args, "--manifest", str(manifest)])
        assert result.exit_code == 0, result.output
        outputs[engine] = (out.read_bytes(), manifest.read_bytes())
    assert outputs["ray"] == outputs["local"]
