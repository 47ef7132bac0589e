"""The literal-text policy a contract declares is part of the tokenizer's identity and
its saved artifact (seed 003: the manifest lists the escape policy for literal control
text); the default (``ordinary``) leaves every identity unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact import LiteralTextPolicy, SpecialToken, Tokenizer
from tokenpact.errors import ArtifactError, ConfigError, ContractError


def _native() -> Tokenizer:
    return Tokenizer.from_merges(
        [(97, 98)],
        special_tokens=[SpecialToken("<s>", "bos"), tp.marker("role", "user")],
    )


def test_two_policies_give_two_identities_and_the_default_none() -> None:
    tok = _native()
    escaped = tok.with_literal_text(LiteralTextPolicy("escaped"))
    tilde = tok.with_literal_text(LiteralTextPolicy("escaped", "~"))
    rejected = tok.with_literal_text(LiteralTextPolicy("rejected"))
    hashes = {t.semantic_hash for t in (tok, escaped, tilde, rejected)}
    assert len(hashes) == 4
    # The default policy is not written: config, hash and manifest are those of `tok`.
    default = rejected.with_literal_text(LiteralTextPolicy())
    assert default.to_config() == tok.to_config()
    assert default.semantic_hash == tok.semantic_hash
    assert "literal_text" not in tok.to_config()
    assert tok.literal_text == LiteralTextPolicy("ordinary")
    assert rejected.to_config()["literal_text"] == {
        "type": "literal_text",
        "mode": "rejected",
        "escape": "\\",
    }
    assert tok.manifest["special_tokens"]["literal_text_policy"] == "ordinary"
    assert "literal_text_escape" not in tok.manifest["special_tokens"]
    section = tilde.manifest["special_tokens"]
    assert (section["literal_text_policy"], section["literal_text_escape"]) == ("escaped", "~")
    # The policy is declared, and applies where the caller asks for it.
    text = f"typed {tp.marker('role', 'user')}"
    ids = tilde.literal_text.encode(tilde, text)
    assert tilde.literal_text.unescape_text(tilde, tilde.decode(ids)) == text
    with pytest.raises(tp.SpecialTokenError):
        rejected.literal_text.encode(rejected, text)


def test_policy_round_trips_through_a_saved_artifact(tmp_path: Path) -> None:
    tok = _native().with_literal_text(LiteralTextPolicy("escaped", "~"))
    tok.save(tmp_path / "a")
    for back in (Tokenizer.load(tmp_path / "a"), tp.load(tmp_path / "a")):
        assert back.literal_text == LiteralTextPolicy("escaped", "~")
        assert back.semantic_hash == tok.semantic_hash
        assert back.release_hash == tok.release_hash
        assert back.to_config() == tok.to_config()
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["special_tokens"]["literal_text_policy"] == "escaped"
    # Saving the default removes the policy file: nothing stale for a later load.
    _native().save(tmp_path / "a")
    assert not (tmp_path / "a" / "policy.json").exists()
    assert Tokenizer.load(tmp_path / "a").literal_text == LiteralTextPolicy()


def test_policy_beside_a_padding_policy_and_on_a_hf_file(tmp_path: Path) -> None:
    tok = (
        _native()
        .with_padding(tp.Padding(multiple=4))
        .with_literal_text(LiteralTextPolicy("allowed"))
    )
    tok.save(tmp_path / "a")
    back = Tokenizer.load(tmp_path / "a")
    assert back.padding == tp.Padding(multiple=4)
    assert back.literal_text == LiteralTextPolicy("allowed")
    hf = tmp_path / "hf.json"
    _native().export_hf(hf)
    plain = Tokenizer.load(hf)
    marked = plain.with_literal_text(LiteralTextPolicy("rejected"))
    marked.save(tmp_path / "h")
    again = Tokenizer.load(tmp_path / "h")
    assert again.literal_text.mode == "rejected"
    assert again.semantic_hash == marked.semantic_hash != plain.semantic_hash


@pytest.mark.parametrize(
    "node",
    [
        {"type": "literal_text", "mode": "sometimes", "escape": "\\"},
        {"type": "literal_text", "mode": "escaped", "escape": "ab"},
        {"type": "literal_text", "mode": "escaped"},
        {"type": "literal_text", "mode": "escaped", "escape": "\\", "extra": 1},
        {"type": "padding", "mode": "escaped", "escape": "\\"},
        {"type": "literal_text", "mode": 3, "escape": "\\"},
        "escaped",
        None,
    ],
)
def test_a_malformed_stored_policy_fails_closed(tmp_path: Path, node: object) -> None:
    tok = _native().with_literal_text(LiteralTextPolicy("escaped"))
    tok.save(tmp_path / "a")
    policy = tmp_path / "a" / "policy.json"
    document = json.loads(policy.read_text())
    document["literal_text"] = node
    policy.write_text(json.dumps(document))
    with pytest.raises(ArtifactError):
        Tokenizer.load(tmp_path / "a", verify=False)
    # With verification on, the edit is drift the manifest seals first.
    with pytest.raises((ArtifactError, ContractError)):
        Tokenizer.load(tmp_path / "a")


def test_versions_and_fields_fail_closed(tmp_path: Path) -> None:
    tok = _native().with_literal_text(LiteralTextPolicy("escaped"))
    tok.save(tmp_path / "a")
    policy = tmp_path / "a" / "policy.json"
    good = json.loads(policy.read_text())
    assert good["version"] == 2  # a version-1 reader refuses it instead of dropping it
    for change in ({"version": 1}, {"version": 3}, {"version": True}, {"surprise": 1}):
        policy.write_text(json.dumps({**good, **change}))
        with pytest.raises(ArtifactError):
            Tokenizer.load(tmp_path / "a", verify=False)
    without = {k: v for k, v in good.items() if k != "literal_text"}
    policy.write_text(json.dumps(without))
    with pytest.raises(ArtifactError, match="literal_text"):
        Tokenizer.load(tmp_path / "a", verify=False)


def test_bad_arguments_are_typed_errors() -> None:
    with pytest.raises(ConfigError):
        _native().with_literal_text("escaped")  # type: ignore[arg-type]
    # An escape character a control spelling contains is refused when it is declared.
    with pytest.raises(ConfigError, match="escape"):
        _native().with_literal_text(LiteralTextPolicy("escaped", "|"))
