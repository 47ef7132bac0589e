"""Compact corpus manifests: per-document records in a sidecar past an inline limit,
read back and checked by ``tokenpact hash`` (the same corpus hash as inline)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenpact.cli.main import cli
from tokenpact.contract import CorpusManifest
from tokenpact.contract.corpus_sidecar import (
    SIDECAR_KEY,
    read_corpus_manifest,
    write_corpus_manifest,
)
from tokenpact.data import Document
from tokenpact.errors import ContractError

pytest.importorskip("py3langid")


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory, real_docs: list[Document]) -> Path:
    """One ``data clean`` run writing the manifest inline and once with a sidecar."""
    root = tmp_path_factory.mktemp("sidecar")
    rows = [{"id": d.doc_id, "text": d.text, "slice": d.source} for d in real_docs[:40]]
    corpus = root / "raw.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for name, limit in (("inline", "10000"), ("compact", "5")):
        (root / name).mkdir()
        args = ["data", "clean", corpus, root / name / "kept.jsonl", "--steps", "langid,quality"]
        args += ["--preset", "code"]
        args += ["--manifest", root / name / "corpus.json", "--manifest-inline-limit", limit]
        result = CliRunner().invoke(cli, [str(a) for a in [*args, "--allow-drop"]])
        assert result.exit_code == 0, result.output
    return root


def corpus_hash(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["hash", str(path)])
    found = re.search(r"corpus_hash\s+(\S+)", result.output)
    return result.exit_code, (found.group(1) if found else result.output)


def test_large_manifest_keeps_records_in_a_checked_sidecar(cleaned: Path) -> None:
    inline = json.loads((cleaned / "inline" / "corpus.json").read_text("utf-8"))
    compact = json.loads((cleaned / "compact" / "corpus.json").read_text("utf-8"))
    assert SIDECAR_KEY not in inline and len(inline["documents"]) > 0
    ref = compact[SIDECAR_KEY]
    assert compact["documents"] == [] and compact["cleaning"]["dropped"] == []
    assert ref["documents"] == len(inline["documents"])
    assert ref["dropped"] == len(inline["cleaning"]["dropped"]) > 0
    sidecar = cleaned / "compact" / ref["path"]
    assert sidecar.name == "corpus.documents.jsonl"
    assert len(sidecar.read_text("utf-8").splitlines()) == ref["documents"] + ref["dropped"]
    # Read back, the compact manifest is the inline one; the corpus hash is the same.
    assert read_corpus_manifest(cleaned / "compact" / "corpus.json") == inline
    CorpusManifest.from_json({**read_corpus_manifest(cleaned / "compact" / "corpus.json")})
    assert corpus_hash(cleaned / "compact" / "corpus.json") == corpus_hash(
        cleaned / "inline" / "corpus.json"
    )
    assert corpus_hash(cleaned / "inline" / "corpus.json")[0] == 0
    doctor = CliRunner().invoke(cli, ["doctor", str(cleaned / "compact" / "corpus.json")])
    assert doctor.exit_code == 0 and "dataset manifest" in doctor.output, doctor.output
    # No temporary files are left beside the outputs.
    assert not [p for p in (cleaned / "compact").iterdir() if p.name.startswith(".")]


def test_a_changed_or_missing_sidecar_is_refused(cleaned: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "corpus.json"
    manifest.write_bytes((cleaned / "compact" / "corpus.json").read_bytes())
    sidecar = tmp_path / "corpus.documents.jsonl"
    original = (cleaned / "compact" / "corpus.documents.jsonl").read_bytes()
    sidecar.write_bytes(original.replace(b"sha256:", b"sha256:0", 1)[:-1] + b"\n")
    code, output = corpus_hash(manifest)
    assert code != 0 and "does not match" in output and "corpus.documents.jsonl" in output
    doctor = CliRunner().invoke(cli, ["doctor", str(manifest)])
    assert doctor.exit_code != 0 and "does not match" in doctor.output, doctor.output
    with pytest.raises(ContractError, match="does not match"):
        read_corpus_manifest(manifest)
    sidecar.unlink()
    with pytest.raises(ContractError, match="keep the two files together"):
        read_corpus_manifest(manifest)
    # A sidecar with a matching digest but a record missing: the counts disagree.
    short = b"".join(original.splitlines(keepends=True)[:-1])
    sidecar.write_bytes(short)
    document = json.loads(manifest.read_text("utf-8"))
    import hashlib

    document[SIDECAR_KEY]["sha256"] = "sha256:" + hashlib.sha256(short).hexdigest()
    manifest.write_text(json.dumps(document), "utf-8")
    with pytest.raises(ContractError, match="records, the manifest counts"):
        read_corpus_manifest(manifest)
    document[SIDECAR_KEY]["path"] = "../elsewhere.jsonl"
    manifest.write_text(json.dumps(document), "utf-8")
    with pytest.raises(ContractError, match="file name beside the manifest"):
        read_corpus_manifest(manifest)


def test_small_manifests_stay_inline(tmp_path: Path) -> None:
    document = {"kind": "tokenpact.corpus", "documents": [{"document_id": "a"}]}
    assert write_corpus_manifest(tmp_path / "c.json", document, inline_limit=1) == [
        tmp_path / "c.json"
    ]
    assert read_corpus_manifest(tmp_path / "c.json") == document
    written = write_corpus_manifest(tmp_path / "d.json", document, inline_limit=0)
    assert [p.name for p in written] == ["d.json", "d.documents.jsonl"]
    assert read_corpus_manifest(tmp_path / "d.json") == document
    with pytest.raises(ContractError, match=">= 0"):
        write_corpus_manifest(tmp_path / "e.json", document, inline_limit=-1)
