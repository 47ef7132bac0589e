"""Framed SHA-256 and the named identities: stable under reformatting, sensitive to meaning."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tokenpact.contract import hashing
from tokenpact.contract.canonical import canonical_bytes
from tokenpact.contract.example import example_bundle
from tokenpact.errors import ContractError


def test_framed_digest_layout() -> None:
    payload = canonical_bytes({"a": 1})
    domain = b"tokenizer-semantic-v1"
    expected = hashlib.sha256(
        hashing.PROTOCOL_PREFIX
        + len(domain).to_bytes(4, "big")
        + domain
        + len(payload).to_bytes(8, "big")
        + payload
    ).hexdigest()
    assert hashing.framed_hash("tokenizer-semantic-v1", {"a": 1}) == "sha256:" + expected


def test_domains_separate_identities_and_lengths_prevent_ambiguity() -> None:
    assert hashing.framed_hash("corpus-v1", {"a": 1}) != hashing.framed_hash("golden-v1", {"a": 1})
    assert hashing.framed_digest("ab", b"c") != hashing.framed_digest("a", b"bc")


@pytest.mark.parametrize("domain", ["", "dömäin", "has space", "x" * 256])
def test_bad_domains_are_rejected(domain: str) -> None:
    with pytest.raises(ContractError, match="domain"):
        hashing.framed_digest(domain, b"")


def test_parse_hash() -> None:
    hexdigest = "AB" * 32
    assert hashing.parse_hash(hexdigest) == "sha256:" + "ab" * 32
    assert hashing.parse_hash("sha256:" + "ab" * 32) == "sha256:" + "ab" * 32
    assert hashing.is_hash("sha256:" + "ab" * 32)
    assert not hashing.is_hash("ab" * 32)
    with pytest.raises(ContractError, match="not a SHA-256"):
        hashing.parse_hash("sha256:abc")


def test_file_digests_are_plain_sha256(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello" * 1000)
    plain = "sha256:" + hashlib.sha256(b"hello" * 1000).hexdigest()
    assert hashing.file_sha256(path) == plain == hashing.bytes_sha256(b"hello" * 1000)


# ---------------------------------------------------------------- semantic hash


def test_reformatting_keeps_the_semantic_hash(config: dict[str, Any]) -> None:
    reformatted = json.loads(json.dumps(config, indent=7, sort_keys=False)[::1])
    shuffled = dict(reversed(list(reformatted.items())))
    shuffled["special_tokens"] = list(reversed(shuffled["special_tokens"]))
    assert hashing.semantic_hash(shuffled) == hashing.semantic_hash(config)


def test_file_description_keys_do_not_change_the_semantic_hash(config: dict[str, Any]) -> None:
    base = hashing.semantic_hash(config)
    assert hashing.semantic_hash({**config, "training": {"seconds": 1.5}}) == base
    assert hashing.semantic_hash({**config, "format_version": 2}) == base
    # Format v1 has no normalizer stage: absent and explicit null are the same behaviour.
    assert hashing.semantic_hash({**config, "normalizer": None}) == base


def _swap_vocab(c: dict[str, Any]) -> None:
    vocab = c["model"]["vocab"]
    vocab[5], vocab[6] = vocab[6], vocab[5]


EDITS = {
    "swap two IDs": _swap_vocab,
    "merge rank": lambda c: c["model"]["merges"].reverse(),
    "merge pair": lambda c: c["model"]["merges"][3].__setitem__(1, 6),
    "special role": lambda c: c["special_tokens"][2].__setitem__("role", "reserved"),
    "special spelling": lambda c: c["special_tokens"][0].__setitem__("content", "<s>"),
    "special id": lambda c: c["special_tokens"][2].__setitem__("id", 12),
    "normalizer": lambda c: c.__setitem__("normalizer", {"type": "nfc"}),
    "normalizer flag": lambda c: c.__setitem__("normalizer", {"type": "nfc", "lowercase": True}),
    "pre-tokenizer": lambda c: c["pre_tokenizer"].__setitem__("pattern", r"\S+|\s+"),
    "post-processor": lambda c: c.__setitem__("post_processor", None),
    "decoder": lambda c: c.__setitem__("decoder", None),
    "new component": lambda c: c.__setitem__("truncation", {"type": "right", "max": 8}),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_semantic_edit_changes_the_hash(config: dict[str, Any], edit: str) -> None:
    changed = copy.deepcopy(config)
    EDITS[edit](changed)
    assert hashing.semantic_hash(changed) != hashing.semantic_hash(config)


def test_normalizer_flag_itself_matters() -> None:
    from tokenpact.contract.example import example_config

    a = {**example_config(), "normalizer": {"type": "nfc", "lowercase": False}}
    b = {**example_config(), "normalizer": {"type": "nfc", "lowercase": True}}
    assert hashing.semantic_hash(a) != hashing.semantic_hash(b)


def test_empty_component_object_is_not_null(config: dict[str, Any]) -> None:
    with pytest.raises(ContractError, match="empty object is not 'no decoder'"):
        hashing.semantic_hash({**config, "decoder": {}})


def test_missing_component_must_be_written_as_null(config: dict[str, Any]) -> None:
    del config["decoder"]
    with pytest.raises(ContractError, match="write null"):
        hashing.semantic_hash(config)


def test_duplicate_special_ids_are_rejected(config: dict[str, Any]) -> None:
    config["special_tokens"][1]["id"] = 9
    with pytest.raises(ContractError, match="share ID 9"):
        hashing.semantic_hash(config)


class _Tok:
    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config

    def to_config(self) -> dict[str, Any]:
        return self._config


def test_semantic_hash_accepts_a_tokenizer_object(config: dict[str, Any]) -> None:
    assert hashing.semantic_hash(_Tok(config)) == hashing.semantic_hash(config)
    with pytest.raises(ContractError, match="to_config"):
        hashing.semantic_hash(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- release and others


def test_release_hash_orders_files_and_binds_every_digest() -> None:
    semantic = "sha256:" + "1" * 64
    files = {"b.json": "2" * 64, "a.json": "sha256:" + "3" * 64}
    same = dict(reversed(list(files.items())))
    base = hashing.release_hash(semantic, files)
    assert hashing.release_hash(semantic, same) == base
    assert hashing.release_hash(semantic, {**files, "b.json": "4" * 64}) != base
    assert hashing.release_hash("sha256:" + "5" * 64, files) != base
    records: list[dict[str, Any]] = [
        {"path": "a.json", "sha256": "3" * 64, "bytes": 10},
        {"path": "b.json", "sha256": "2" * 64},
    ]
    assert hashing.release_hash(semantic, records) == base


@pytest.mark.parametrize("path", ["", "/abs.json", "../up.json", "./a.json", "a//b", "a\\b", "a/."])
def test_release_paths_must_be_normalized_relative(path: str) -> None:
    with pytest.raises(ContractError, match="release file path"):
        hashing.release_files({path: "1" * 64})


def test_duplicate_release_paths_are_rejected() -> None:
    with pytest.raises(ContractError, match="twice"):
        hashing.release_files(
            [{"path": "a", "sha256": "1" * 64}, {"path": "a", "sha256": "2" * 64}]
        )


def test_no_template_has_its_own_identity() -> None:
    assert hashing.template_hash(None) != hashing.template_hash({"source": ""})
    assert hashing.golden_hash(None) != hashing.golden_hash({})


def test_bundle_hash_covers_the_checkpoint_declaration() -> None:
    bundle = example_bundle()
    hashes = bundle["hashes"]
    args = {
        "corpus": hashes["corpus"],
        "tokenizer_semantic": hashes["tokenizer_semantic"],
        "tokenizer_release": hashes["tokenizer_release"],
        "template": hashes["template"],
        "golden": hashes["golden"],
        "dataset": bundle["dataset"],
    }
    base = hashing.bundle_hash(**args, checkpoint=bundle["checkpoint"])
    assert base == hashes["bundle"]
    padded = {**bundle["checkpoint"], "input_embedding_rows": 16}
    assert hashing.bundle_hash(**args, checkpoint=padded) != base


def test_token_ids_hash_is_order_sensitive() -> None:
    assert hashing.token_ids_hash([1, 2]) != hashing.token_ids_hash([2, 1])


def test_short_id() -> None:
    assert hashing.short_id("sha256:" + "0123456789abcdef" * 4) == "tok-0123456789abcdef"
