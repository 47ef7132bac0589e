"""The corpus manifest records every cleaning step; any configuration change shows."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from tokenpact.contract import CorpusManifest, framed_hash
from tokenpact.data import Document, build_corpus_manifest
from tokenpact.data.cleaning import (
    CleaningPipeline,
    DecontamConfig,
    ExtractConfig,
    LangIdConfig,
    PiiConfig,
    QualityConfig,
    RepairConfig,
    StepConfig,
    clean,
)
from tokenpact.data.cleaning.step import CONFIG_DOMAIN

pytest.importorskip("trafilatura")
pytest.importorskip("ftfy")
pytest.importorskip("py3langid")


@pytest.fixture(scope="module")
def docs(real_docs: list[Document]) -> list[Document]:
    extra = [
        Document("mail", real_docs[0].text + "\nReport bugs to maint@example.org, please."),
        Document("moji", "The cafÃ© serves crÃ¨me brÃ»lÃ©e and the menu is long enough."),
    ]
    return real_docs[:60] + extra


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory: pytest.TempPathFactory, real_docs: list[Document]) -> Path:
    path = tmp_path_factory.mktemp("eval") / "heldout.jsonl"
    rows = [{"text": d.text} for d in real_docs[300:320]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def base_steps(eval_file: Path) -> list[StepConfig]:
    return [
        ExtractConfig(),
        RepairConfig(),
        LangIdConfig(),
        QualityConfig(min_words=5),
        PiiConfig(),
        DecontamConfig(eval_sets=(str(eval_file),)),
    ]


def test_manifest_records_each_step(docs: list[Document], eval_file: Path) -> None:
    result = clean(docs, steps=base_steps(eval_file))
    manifest = result.corpus_manifest(revision="r1", seed=7)
    document = manifest.to_json()
    again = CorpusManifest.from_json(json.loads(json.dumps(document)))
    assert again.hash == manifest.hash
    steps = document["cleaning"]["steps"]
    assert [s["step"] for s in steps] == [
        "extract",
        "repair",
        "langid",
        "quality",
        "pii",
        "decontam",
    ]
    versions = {s["library"]: s["version"] for s in steps}
    for lib in ("trafilatura", "ftfy", "py3langid"):
        assert versions[lib] == importlib.metadata.version(lib)
    for s, config in zip(steps, base_steps(eval_file), strict=True):
        assert s["config_hash"] == config.config_hash
        assert document["pipeline"][f"clean.{steps.index(s)}.{s['step']}"].endswith(
            s["config_hash"]
        )
        assert s["documents_in"] >= s["documents_out"]
        assert s["documents_in"] - s["documents_out"] == s["dropped"]
    # Counts chain: what one step lets out is what the next one takes in.
    for a, b in zip(steps, steps[1:], strict=False):
        assert a["documents_out"] == b["documents_in"] and a["bytes_out"] == b["bytes_in"]
    # The e-mail planted above; a dotted section number ("8.2.4.44") also reads as IPv4.
    assert steps[1]["modified"] >= 1 and steps[4]["counts"]["EMAIL"] == 1
    assert document["decontamination"]["eval_sets"] == {
        "heldout.jsonl": "sha256:"
        + __import__("hashlib").sha256(eval_file.read_bytes()).hexdigest()
    }
    # Per-document digests before and after cleanup: the PII document changed.
    by_id = {d["document_id"]: d for d in document["documents"]}
    assert by_id["mail"]["raw_sha256"] != by_id["mail"]["clean_sha256"]
    kept_ids = {d.doc_id for d in result.kept}
    assert set(by_id) == kept_ids
    dropped = {d["document_id"]: d for d in document["cleaning"]["dropped"]}
    assert set(dropped) == {d.doc_id for d in docs} - kept_ids
    assert all(d["reasons"] and d["step"] for d in dropped.values())


def test_config_hash_is_the_framed_canonical_config() -> None:
    config = QualityConfig(max_dup_lines=0.25)
    payload = {"step": "quality", "step_version": 1, "config": config.to_json()}
    # The default mode="tokenpact" is left out, so hashes from before the option stand.
    assert payload["config"].pop("mode") == "tokenpact"
    assert payload["config"].pop("datatrove_words") == "whitespace"  # likewise
    payload["config"]["max_dup_lines"] = "0.25"
    for key in ("min_mean_word_length", "max_mean_word_length", "max_symbol_word_ratio"):
        payload["config"][key] = repr(payload["config"][key])
    for key in ("max_bullet_lines", "max_ellipsis_lines", "min_alpha_words", "max_dup_paragraphs"):
        payload["config"][key] = repr(payload["config"][key])
    for key in ("max_dup_line_chars", "max_dup_paragraph_chars"):
        payload["config"][key] = repr(payload["config"][key])
    for key in ("max_top_ngram_chars", "max_dup_ngram_chars"):
        payload["config"][key] = [[n, repr(t)] for n, t in payload["config"][key]]
    assert config.config_hash == framed_hash(CONFIG_DOMAIN, payload)
    assert QualityConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    datatrove = QualityConfig(max_dup_lines=0.25, mode="datatrove")
    payload["config"]["mode"] = "datatrove"
    assert datatrove.config_hash == framed_hash(CONFIG_DOMAIN, payload)


CHANGES = [
    (0, ExtractConfig(favor_precision=True)),
    (1, RepairConfig(uncurl_quotes=True)),
    (2, LangIdConfig(min_confidence=0.5)),
    (3, QualityConfig(min_words=6)),
    (4, PiiConfig(policy="flag")),
]


@pytest.mark.parametrize(("index", "changed"), CHANGES, ids=[c.NAME for _, c in CHANGES])
def test_manifest_changes_when_a_step_configuration_changes(
    docs: list[Document], eval_file: Path, index: int, changed: StepConfig
) -> None:
    steps = base_steps(eval_file)
    before = clean(docs, steps=steps).corpus_manifest(revision="r1")
    steps[index] = changed
    after = clean(docs, steps=steps).corpus_manifest(revision="r1")
    assert before.hash != after.hash
    name = changed.NAME
    key = f"clean.{index}.{name}"
    assert before.pipeline[key] != after.pipeline[key]


def test_manifest_changes_when_the_eval_set_changes(
    docs: list[Document], eval_file: Path, tmp_path: Path
) -> None:
    other = tmp_path / "heldout.jsonl"
    other.write_bytes(eval_file.read_bytes() + b'{"text": "one more question"}\n')
    a = clean(docs, steps=[DecontamConfig(eval_sets=(str(eval_file),))])
    b = clean(docs, steps=[DecontamConfig(eval_sets=(str(other),))])
    ma, mb = a.corpus_manifest(revision="r"), b.corpus_manifest(revision="r")
    assert ma.hash != mb.hash
    assert ma.decontamination != mb.decontamination


def test_manifest_without_cleaning_keeps_its_hash(docs: list[Document]) -> None:
    plain = build_corpus_manifest(docs, revision="r1")
    assert "cleaning" not in plain.to_json()
    assert CorpusManifest.from_json(plain.to_json()).hash == plain.hash


def test_pipeline_config_round_trip(eval_file: Path) -> None:
    pipeline = CleaningPipeline(base_steps(eval_file))
    again = CleaningPipeline.from_config(json.loads(json.dumps(pipeline.to_json())))
    assert [s.config_hash for s in again.steps] == [s.config_hash for s in pipeline.steps]
