"""The padding and truncation policy is part of a tokenizer's identity (seed 0x02B: the
tokenizer object of the manifest lists "stop, padding, and truncation policy")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenpact import Padding, SpecialToken, Tokenizer, Truncation
from tokenpact.errors import ArtifactError, ConfigError, ContractError

try:  # tests/ on sys.path (pytest rootdir)
    from conformance import peer_data
except ImportError:  # pragma: no cover
    from tests.conformance import peer_data  # type: ignore[no-redef]


def _native() -> Tokenizer:
    return Tokenizer.from_merges(
        [(97, 98)], special_tokens=[SpecialToken("<s>", "bos"), SpecialToken("<pad>", "pad")]
    )


def test_policies_that_differ_give_different_identities() -> None:
    tok = _native()
    right = tok.with_padding(Padding(length=8))
    left = tok.with_padding(Padding(length=8, side="left"))
    cut = tok.with_truncation(Truncation(max_length=4))
    hashes = {t.semantic_hash for t in (tok, right, left, cut)}
    assert len(hashes) == 4
    # Removing the policy restores the original identity and config exactly.
    assert right.with_padding(None).semantic_hash == tok.semantic_hash
    assert right.with_padding(None).to_config() == tok.to_config()
    assert "padding" not in tok.to_config() and "truncation" not in tok.to_config()
    assert right.to_config()["padding"] == {
        "type": "padding",
        "length": 8,
        "multiple": None,
        "side": "right",
        "pad_id": None,
    }
    manifest = cut.manifest
    assert manifest["padding_and_truncation"]["truncation"]["max_length"] == 4
    assert manifest["padding_and_truncation"]["padding"] is None
    assert "padding_and_truncation" not in tok.manifest
    # Encoding is unchanged by a policy; the IDs a structured call returns follow it.
    assert right.encode("abab") == tok.encode("abab")
    enc = left.encode_structured("abab")
    assert enc.ids == [258, 258, 258, 258, 258, 258, 256, 256]
    assert enc.attention_mask == [0] * 6 + [1, 1]
    assert tok.encode_structured("ab" * 6).ids == [256] * 6
    assert cut.encode_structured("ab" * 6).ids == [256] * 4
    assert cut.encode_structured("ab" * 6).truncated
    # A call's own policy still wins over the tokenizer's.
    assert cut.encode_structured("ab" * 6, truncation=Truncation(max_length=5)).ids == [256] * 5


def test_native_artifact_round_trips_the_policy(tmp_path: Path) -> None:
    tok = _native().with_padding(Padding(multiple=4)).with_truncation(Truncation(max_length=6))
    tok.save(tmp_path / "a")
    assert (tmp_path / "a" / "policy.json").is_file()
    back = Tokenizer.load(tmp_path / "a")
    assert back.padding == Padding(multiple=4)
    assert back.truncation == Truncation(max_length=6)
    assert back.semantic_hash == tok.semantic_hash
    # Re-saving without the policy removes the file (no stale policy for a later load).
    _native().save(tmp_path / "a")
    assert not (tmp_path / "a" / "policy.json").exists()
    assert Tokenizer.load(tmp_path / "a").padding is None


def test_hf_artifact_round_trips_the_policy_and_old_artifacts_load(tmp_path: Path) -> None:
    # MiniLM's tokenizer.json pads and truncates at 128 itself; without that policy:
    plain = Tokenizer.load(peer_data.minilm_tokenizer_json())
    plain = plain.with_padding(None).with_truncation(None)
    plain.save(tmp_path / "old")
    assert Tokenizer.load(tmp_path / "old").semantic_hash == plain.semantic_hash
    tok = plain.with_truncation(Truncation(max_length=128))
    assert tok.semantic_hash != plain.semantic_hash
    tok.save(tmp_path / "new")
    back = Tokenizer.load(tmp_path / "new")
    assert back.truncation == Truncation(max_length=128)
    assert back.semantic_hash == tok.semantic_hash
    # Editing the policy after the save is drift the manifest catches.
    policy = tmp_path / "new" / "policy.json"
    document = json.loads(policy.read_text())
    document["truncation"]["max_length"] = 64
    policy.write_text(json.dumps(document))
    with pytest.raises(ContractError):
        Tokenizer.load(tmp_path / "new")


def test_bad_policies_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _native().with_padding({"length": 8})  # type: ignore[arg-type]
    tok = _native().with_padding(Padding(length=2))
    tok.save(tmp_path / "a")
    (tmp_path / "a" / "policy.json").write_text('{"kind": "other"}')
    with pytest.raises(ArtifactError, match="not a tokenpact policy"):
        Tokenizer.load(tmp_path / "a", verify=False)
