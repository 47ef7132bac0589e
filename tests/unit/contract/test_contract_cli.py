"""``tokenpact hash``, ``verify`` and ``reconcile``: readable reports and exit codes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from contract_helpers import CORPUS

from tokenpact.cli.contract_cmds import hash_cmd, reconcile_cmd, verify_cmd
from tokenpact.contract import (
    DatasetDeclaration,
    EncodedDocument,
    derive_hashes,
    seal_bundle,
    semantic_hash,
    template_declaration,
)
from tokenpact.contract.canonical import pretty_text
from tokenpact.contract.example import example_bundle, example_files
from tokenpact.contract.hashing import corpus_hash, file_sha256, template_hash

runner = CliRunner()


def _write(path: Path, value: Any) -> Path:
    path.write_text(pretty_text(value), encoding="utf-8")
    return path


# ---------------------------------------------------------------- reconcile


def test_reconcile_passes_the_example(tmp_path: Path) -> None:
    result = runner.invoke(reconcile_cmd, [str(_write(tmp_path / "b.json", example_bundle()))])
    assert result.exit_code == 0, result.output
    assert "all" in result.output and "checks passed" in result.output


def test_reconcile_fails_with_a_readable_report(tmp_path: Path) -> None:
    bundle = example_bundle()
    bundle["checkpoint"]["tied_storage_verified"] = False
    path = _write(tmp_path / "b.json", seal_bundle(bundle))
    result = runner.invoke(reconcile_cmd, [str(path)])
    assert result.exit_code == 1
    assert "FAIL checkpoint.tied_head" in result.output
    as_json = runner.invoke(reconcile_cmd, [str(path), "--json"])
    report = json.loads(as_json.output)
    assert report["ok"] is False and as_json.exit_code == 1


def test_reconcile_rehashes_release_files_under_root(tmp_path: Path) -> None:
    path = _write(tmp_path / "b.json", example_bundle())
    root = tmp_path / "release"
    root.mkdir()
    (root / "tokenpact.json").write_bytes(example_files()["tokenpact.json"] + b" ")
    result = runner.invoke(reconcile_cmd, [str(path), "--root", str(root)])
    assert result.exit_code == 1 and "tokenizer.release_files" in result.output


def test_reconcile_reports_unreadable_json(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text('{"kind": "tokenpact.bundle", "kind": 1}')
    result = runner.invoke(reconcile_cmd, [str(path)])
    assert result.exit_code == 1 and "structure.json" in result.output


# ---------------------------------------------------------------- hash


def test_hash_of_declarations_and_files(tmp_path: Path) -> None:
    bundle = example_bundle()
    result = runner.invoke(hash_cmd, [str(_write(tmp_path / "b.json", bundle)), "--json"])
    assert json.loads(result.output) == derive_hashes(bundle)
    corpus = _write(tmp_path / "c.json", bundle["corpus"])
    assert corpus_hash(bundle["corpus"]) in runner.invoke(hash_cmd, [str(corpus)]).output
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert file_sha256(other) in runner.invoke(hash_cmd, [str(other)]).output


def test_hash_of_a_saved_tokenizer_matches_the_live_one(saved: Path, tok: Any) -> None:
    # The file-content shortcut must agree with tok.to_config(); this pins that contract.
    result = runner.invoke(hash_cmd, [str(saved), "--json"])
    assert result.exit_code == 0, result.output
    values = json.loads(result.output)
    manifest = json.loads((saved / "manifest.json").read_text())
    assert values["semantic_hash"] == semantic_hash(tok) == manifest["tokenizer"]["semantic_hash"]
    assert values["release_hash"] == manifest["tokenizer"]["release_hash"]
    assert values["golden_hash"] == manifest["tests"]["golden_hash"]
    single = json.loads(runner.invoke(hash_cmd, [str(saved / "tokenpact.json"), "--json"]).output)
    assert single == values
    elsewhere = saved.parent / "copy.json"
    elsewhere.write_bytes((saved / "tokenpact.json").read_bytes())
    copied = json.loads(runner.invoke(hash_cmd, [str(elsewhere), "--json"]).output)
    assert copied["semantic_hash"] == values["semantic_hash"]
    assert copied["file copy.json"] == values["file tokenpact.json"]


def test_hash_rejects_invalid_declarations(tmp_path: Path) -> None:
    bundle = example_bundle()
    del bundle["hashes"]
    result = runner.invoke(hash_cmd, [str(_write(tmp_path / "b.json", bundle))])
    assert result.exit_code == 1 and "not a valid bundle" in result.output
    broken = tmp_path / "x.json"
    broken.write_text("{")
    assert runner.invoke(hash_cmd, [str(broken)]).exit_code == 1


# ---------------------------------------------------------------- verify


def test_verify_a_saved_artifact(saved: Path) -> None:
    result = runner.invoke(verify_cmd, [str(saved)])
    assert result.exit_code == 0, result.output
    verbose = runner.invoke(verify_cmd, [str(saved), "-v"])
    assert "PASS golden.long_input" in verbose.output


def test_verify_detects_an_edited_file(saved: Path) -> None:
    path = saved / "tokenpact.json"
    data = json.loads(path.read_text())
    data["special_tokens"][0]["role"] = "reserved"
    path.write_text(json.dumps(data))
    result = runner.invoke(verify_cmd, [str(saved)])
    assert result.exit_code == 1
    assert "manifest.semantic_hash" in result.output and "special tokens" in result.output


def _dataset(tok: Any, tokenizer_hash: str, template: str) -> dict[str, Any]:
    docs = [
        EncodedDocument(
            ids=tuple(tok.encode(text)),
            source_id="s",
            document_id=f"d{i}",
            tokenizer_hash=tokenizer_hash,
            template_hash=template,
            boundary_policy="eos_after_document",
        )
        for i, text in enumerate(CORPUS[:4])
    ]
    return DatasetDeclaration.from_documents(docs, corpus_hash="sha256:" + "c" * 64).to_json()


def test_verify_a_dataset_binding(saved: Path, tok: Any, tmp_path: Path) -> None:
    template = template_declaration("{{ messages }}", name="plain")
    template_path = _write(tmp_path / "t.json", template)
    good = _write(tmp_path / "d.json", _dataset(tok, semantic_hash(tok), template_hash(template)))
    result = runner.invoke(
        verify_cmd, [str(saved), "--dataset", str(good), "--template", str(template_path)]
    )
    assert result.exit_code == 0, result.output
    stale = _write(tmp_path / "s.json", _dataset(tok, "sha256:" + "0" * 64, template_hash(None)))
    result = runner.invoke(
        verify_cmd, [str(saved), "--dataset", str(stale), "--template", str(template_path)]
    )
    assert result.exit_code == 1
    assert "dataset.tokenizer_hash" in result.output and "dataset.template_hash" in result.output


def _safetensors(directory: Path, rows: int, config: dict[str, Any]) -> Path:
    directory.mkdir()
    raw = b"\0" * (rows * 2 * 4)
    header = {
        "model.embed_tokens.weight": {
            "dtype": "F32",
            "shape": [rows, 2],
            "data_offsets": [0, len(raw)],
        }
    }
    blob = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob + raw)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_verify_a_checkpoint_read_from_safetensors(saved: Path, tok: Any, tmp_path: Path) -> None:
    config = {
        "bos_token_id": tok.bos_id,
        "eos_token_id": [tok.eos_id, tok.special_tokens["<|eot|>"]],
        "pad_token_id": tok.pad_id,
        "tie_word_embeddings": True,
    }
    padded = _safetensors(tmp_path / "ok", tok.vocab_size + 11, config)
    result = runner.invoke(verify_cmd, [str(saved), "--checkpoint", str(padded)])
    assert result.exit_code == 0, result.output
    small = _safetensors(tmp_path / "small", tok.vocab_size - 1, {**config, "bos_token_id": 0})
    result = runner.invoke(
        verify_cmd, [str(saved), "--checkpoint", str(small / "model.safetensors")]
    )
    assert result.exit_code == 1
    for name in ("checkpoint.input_rows", "checkpoint.output_rows", "checkpoint.special_ids"):
        assert name in result.output


def test_verify_a_checkpoint_declaration(saved: Path, tok: Any, tmp_path: Path) -> None:
    declaration = {
        "kind": "tokenpact.checkpoint",
        "version": 1,
        "tokenizer_hash": "sha256:" + "1" * 64,
        "template_hash": None,
        "input_embedding_rows": tok.vocab_size,
        "output_vocab_rows": tok.vocab_size,
        "special_ids": {
            "bos": tok.bos_id,
            "eos": tok.eos_id,
            "pad": tok.pad_id,
            "stop": sorted([tok.eos_id, tok.special_tokens["<|eot|>"]]),
        },
        "tied_output_head": False,
        "tied_storage_verified": False,
        "evidence": None,
    }
    result = runner.invoke(
        verify_cmd, [str(saved), "--checkpoint", str(_write(tmp_path / "k.json", declaration))]
    )
    assert result.exit_code == 1 and "checkpoint.tokenizer_hash" in result.output


def test_verify_replay(saved: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in CORPUS))
    result = runner.invoke(verify_cmd, [str(saved), "--replay", "--corpus", str(corpus), "-v"])
    assert result.exit_code == 0, result.output
    assert "PASS replay.corpus_digest" in result.output
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"text": "something else entirely"}) + "\n")
    result = runner.invoke(verify_cmd, [str(saved), "--replay", "--corpus", str(other)])
    assert result.exit_code == 1 and "replay.corpus_digest" in result.output


def test_verify_replay_needs_a_corpus(saved: Path) -> None:
    result = runner.invoke(verify_cmd, [str(saved), "--replay"])
    assert result.exit_code == 2 and "--corpus" in result.output


@pytest.mark.parametrize("command", [hash_cmd, verify_cmd, reconcile_cmd])
def test_help(command: Any) -> None:
    result = runner.invoke(command, ["--help"])
    assert result.exit_code == 0 and "Usage" in result.output
