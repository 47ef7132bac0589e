"""Issue 13 section 2: the contract layer fails closed. A null, malformed or missing
contract file is an error, never "all 0 checks passed"; every manifest field is either
checked against the tokenizer or listed as informational."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.contract import check_contract_files
from tokenpact.contract.manifest import INFORMATIONAL_FIELDS
from tokenpact.errors import ArtifactError, ContractError, TokenpactError

runner = CliRunner()


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    tok = tp.train_bpe(
        ["the cat sat on the mat", "a dog ran to the cat"] * 20,
        vocab_size=300,
        special_tokens=tp.DEFAULT_SPECIAL_TOKENS,
    )
    return tok.save(tmp_path / "tok")


def _tamper(saved: Path) -> None:
    """Change behaviour in tokenpact.json: respell a special token the post-processor
    does not insert."""
    path = saved / "tokenpact.json"
    doc = json.loads(path.read_text())
    inserted = (doc.get("post_processor") or {}).get("token")
    victim = next(t for t in doc["special_tokens"] if t["content"] != inserted)
    victim["content"] = "<|tampered|>"
    path.write_text(json.dumps(doc))


def _edit_manifest(saved: Path, edit: Any) -> None:
    path = saved / "manifest.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("content", ["null", "[]", "3", '"manifest"', "{}"])
def test_malformed_manifest_fails_load_and_verify(saved: Path, content: str) -> None:
    _tamper(saved)
    (saved / "manifest.json").write_text(content)
    with pytest.raises(TokenpactError):
        tp.Tokenizer.load(saved)
    result = runner.invoke(cli, ["verify", str(saved)])
    assert result.exit_code == 1, result.output
    assert "all 0 checks passed" not in result.output


@pytest.mark.parametrize("content", ["null", "[]", '{"kind": "tokenpact.golden"}'])
def test_malformed_golden_fails(saved: Path, content: str) -> None:
    (saved / "golden.json").write_text(content)
    with pytest.raises((ArtifactError, ContractError)):
        tp.Tokenizer.load(saved)
    assert runner.invoke(cli, ["verify", str(saved)]).exit_code == 1


def test_deleting_both_contract_files_is_refused_unless_opted_out(saved: Path) -> None:
    _tamper(saved)
    (saved / "manifest.json").unlink()
    (saved / "golden.json").unlink()
    with pytest.raises(ArtifactError, match="verify=False"):
        tp.Tokenizer.load(saved)
    tok = tp.Tokenizer.load(saved, verify=False)  # the explicit opt-out
    assert "<|tampered|>" in tok.special_tokens
    encoded = runner.invoke(cli, ["encode", "-t", str(saved), "hi"])
    assert encoded.exit_code == 1 and "--no-verify" in encoded.output + str(encoded.exception)
    opted_out = runner.invoke(cli, ["--no-verify", "encode", "-t", str(saved), "hi"])
    assert opted_out.exit_code == 0, opted_out.output


def test_deleting_the_manifest_of_a_hugging_face_artifact_is_refused(tmp_path: Path) -> None:
    from .hostile import wordpiece, write_json

    source = write_json(tmp_path / "tokenizer.json", wordpiece())
    saved = tp.Tokenizer.load(source).save(tmp_path / "art")
    (saved / "manifest.json").unlink()
    with pytest.raises(ArtifactError):
        tp.Tokenizer.load(saved)


@pytest.mark.parametrize(
    "path,value",
    [
        (("boundaries", "pre_tokenizer", "pattern"), r"\S+"),
        (("model", "merges"), 7),
        (("model", "model_size"), 12),
        (("model", "byte_fallback"), "none"),
        (("special_tokens", "literal_text_policy"), "escaped"),
        (("input", "invalid_input_policy"), "replace"),
        (("postprocessor_and_decoder", "decode_error_policy", "default"), "replace"),
        (("normalization", "form"), "NFKC"),
        (("training", "merges_learned"), 1),
    ],
)
def test_a_manifest_that_lies_about_a_field_fails(saved: Path, path: tuple, value: Any) -> None:
    def edit(doc: dict[str, Any]) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    _edit_manifest(saved, edit)
    with pytest.raises(ContractError, match="manifest.fields"):
        tp.Tokenizer.load(saved)
    result = runner.invoke(cli, ["verify", str(saved)])
    assert result.exit_code == 1 and ".".join(path) in result.output


def test_informational_fields_are_not_compared(saved: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["library"]["version"] = "9.9.9"
        doc["library"]["build"] = "elsewhere"

    _edit_manifest(saved, edit)
    tok = tp.Tokenizer.load(saved)
    assert check_contract_files(tok, saved).ok
    assert "library.version" in INFORMATIONAL_FIELDS


def test_security_doc_lists_every_informational_field() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "SECURITY.md").read_text()
    for field in INFORMATIONAL_FIELDS:
        assert f"`{field}`" in text
