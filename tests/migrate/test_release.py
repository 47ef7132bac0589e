"""Release bundles: mechanical admission, atomic promotion, whole-bundle rollback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tiny_lm
import tokenpact as tp
from tokenpact import migrate
from tokenpact.contract import DatasetDeclaration
from tokenpact.errors import ConfigError, ContractError
from tokenpact.migrate import release

TEXTS = ["the cat sat on the mat", "a dog ran far", "error here and there"] * 4
CORPUS_HASH = "sha256:" + "ab" * 32


def _resealed(bundle: dict) -> dict:
    """A hand-edited bundle, sealed again (as a user re-sealing a wrong bundle would)."""
    from tokenpact.migrate.release import bundle_seal

    return {**bundle, "seal": bundle_seal(bundle)}


def _dataset(path: Path, tok: tp.Tokenizer, template_hash: str) -> Path:
    ids = tok.encode_batch(TEXTS)
    decl = DatasetDeclaration(
        CORPUS_HASH, tok.semantic_hash, template_hash, len(ids), max(max(x) for x in ids)
    )
    path.write_text(json.dumps(decl.to_json()))
    return path


def _bind(folder: Path, tok: tp.Tokenizer) -> None:
    config = json.loads((folder / "config.json").read_text())
    roles = tok.special_tokens
    config.update(
        bos_token_id=roles["<|bos|>"],
        pad_token_id=roles["<|pad|>"],
        eos_token_id=[roles["<|eos|>"], roles["<|eot|>"]],
    )
    config.setdefault("tokenpact", {})["tokenizer_semantic_hash"] = tok.semantic_hash
    (folder / "config.json").write_text(json.dumps(config))


@pytest.fixture
def releases(tmp_path: Path) -> dict[str, Path]:
    old = tp.train_bpe(TEXTS, vocab_size=280)
    old.save(tmp_path / "tok-v1")
    tiny_lm.build(tmp_path / "ckpt-v1", rows=old.vocab_size, tied=True)
    _bind(tmp_path / "ckpt-v1", old)
    none_template = tp.contract.template_hash(None)
    canary = tmp_path / "canary.jsonl"
    canary.write_text(
        "\n".join(
            json.dumps({"slice": s, "text": t})
            for s, t in [("prose", "the cat sat"), ("code", "x = error(10)")]
        )
    )
    v1 = tmp_path / "v1.bundle.json"
    release.seal_release(
        v1,
        name="v1",
        tokenizer=tmp_path / "tok-v1",
        dataset=_dataset(tmp_path / "data-v1.json", old, none_template),
        checkpoint=tmp_path / "ckpt-v1",
        canary=canary,
    )
    new = migrate.extend_bpe(old, ["error error terror mirror"] * 5, add_merges=3)
    new.save(tmp_path / "tok-v2")
    migrate.resize_checkpoint(tmp_path / "ckpt-v1", tmp_path / "ckpt-v2", old, new)
    v2 = tmp_path / "v2.bundle.json"
    release.seal_release(
        v2,
        name="v2",
        tokenizer=tmp_path / "tok-v2",
        dataset=_dataset(tmp_path / "data-v2.json", new, none_template),
        checkpoint=tmp_path / "ckpt-v2",
        canary=canary,
        max_token_ratio={"default": 1.0},
        previous=v1,
    )
    return {"root": tmp_path, "v1": v1, "v2": v2, "pointer": tmp_path / "current.json"}


def test_promote_and_rollback_whole_bundles(releases: dict[str, Path]) -> None:
    pointer = releases["pointer"]
    report = release.promote(releases["v1"], pointer=pointer)
    assert report.ok, report.format(verbose=True)
    assert release.current_bundle(pointer).name == "v1.bundle.json"
    report = release.promote(releases["v2"], pointer=pointer)
    assert report.ok, report.format(verbose=True)
    names = {c.name for c in report}
    assert {
        "transition.prefix_proof",
        "cache.rotated",
        "canary.prose",
        "canary.code",
        "checkpoint.input_rows",
        "dataset.tokenizer_hash",
        "tokenizer.golden",
    } <= names
    assert json.loads(releases["v2"].read_text())["transition"] == "append-only"
    restored = release.rollback(pointer=pointer)
    assert restored["name"] == "v1"
    assert release.current_bundle(pointer).name == "v1.bundle.json"
    with pytest.raises(ConfigError, match="no earlier release"):
        release.rollback(pointer=pointer)


def test_tokenizer_released_before_its_checkpoint_is_refused(releases: dict[str, Path]) -> None:
    """Bug: a tokenizer is released before the checkpoint and dataset that need it."""
    root = releases["root"]
    bundle = json.loads(releases["v2"].read_text())
    bundle["checkpoint"] = {"path": "ckpt-v1", "hash": release.checkpoint_hash(root / "ckpt-v1")}
    early = root / "early.bundle.json"
    early.write_text(json.dumps(_resealed(bundle)))
    assert release.promote(releases["v1"], pointer=releases["pointer"]).ok
    report = release.promote(early, pointer=releases["pointer"])
    assert not report.ok
    failed = {c.name for c in report.failures}
    assert {"checkpoint.tokenizer_hash", "checkpoint.input_rows"} <= failed
    assert release.current_bundle(releases["pointer"]).name == "v1.bundle.json"


def test_cache_namespace_must_rotate_and_canary_limits_apply(releases: dict[str, Path]) -> None:
    root = releases["root"]
    v1 = json.loads(releases["v1"].read_text())
    bundle = json.loads(releases["v2"].read_text())
    bundle["cache_namespace"] = v1["cache_namespace"]
    bundle["canary"]["max_token_ratio"] = {"default": "1.0", "code": "0.5"}
    stale = root / "stale.bundle.json"
    stale.write_text(json.dumps(_resealed(bundle)))
    report = release.check_release(stale, previous=releases["v1"])
    failed = {c.name for c in report.failures}
    assert {"cache.namespace", "cache.rotated", "canary.code"} <= failed
    assert "canary.prose" not in failed


def test_drifted_component_fails_its_hash(releases: dict[str, Path]) -> None:
    ckpt = releases["root"] / "ckpt-v2" / "config.json"
    ckpt.write_text(ckpt.read_text().replace('"hidden_size": 16', '"hidden_size": 17'))
    report = release.check_release(releases["v2"], previous=releases["v1"])
    assert "hashes.checkpoint" in {c.name for c in report.failures}


def test_previous_is_recorded_and_used_without_flags(releases: dict[str, Path]) -> None:
    bundle = json.loads(releases["v2"].read_text())
    assert bundle["previous"]["name"] == "v1" and bundle["previous"]["path"] == "v1.bundle.json"
    report = release.check_release(releases["v2"])  # no previous= given
    names = {c.name for c in report}
    assert report.ok, report.format(verbose=True)
    assert {"previous.recorded", "transition.declared", "canary.prose"} <= names


def test_a_comparison_that_cannot_run_fails_instead_of_skipping(releases: dict[str, Path]) -> None:
    root = releases["root"]
    bundle = json.loads(releases["v2"].read_text())
    bundle["previous"] = None  # transition still declared, nothing to compare with
    orphan = root / "orphan.bundle.json"
    orphan.write_text(json.dumps(_resealed(bundle)))
    report = release.check_release(orphan)
    assert "transition.previous_missing" in {c.name for c in report.failures}
    assert "--previous" in report.format()
    # A recorded previous bundle that changed since sealing is caught.
    v1 = releases["v1"]
    v1.write_text(v1.read_text().replace('"name": "v1"', '"name": "v1b"'))
    failed = {c.name for c in release.check_release(releases["v2"]).failures}
    assert "previous.recorded" in failed


def test_seal_refuses_a_ratio_limit_without_a_canary(releases: dict[str, Path]) -> None:
    root = releases["root"]
    with pytest.raises(ConfigError, match="canary"):
        release.seal_release(
            root / "x.bundle.json",
            name="x",
            tokenizer=root / "tok-v2",
            dataset=root / "data-v2.json",
            checkpoint=root / "ckpt-v2",
            max_token_ratio={"default": 1.0},
            previous=releases["v1"],
        )


def test_encoded_dataset_directory_in_a_bundle(releases: dict[str, Path]) -> None:
    root = releases["root"]
    tok = tp.Tokenizer.load(root / "tok-v1")
    docs = [tp.data.Document(f"d{i}", t) for i, t in enumerate(TEXTS)]
    tp.data.encode_dataset(docs, tok, root / "shards-v1", format="megatron", append_eod=True)
    bundle_path = root / "enc.bundle.json"
    release.seal_release(
        bundle_path,
        name="enc",
        tokenizer=root / "tok-v1",
        dataset=root / "shards-v1",
        checkpoint=root / "ckpt-v1",
    )
    report = release.check_release(bundle_path)
    assert report.ok, report.format(verbose=True)
    assert "hashes.dataset_shards" in {c.name for c in report}
    data = bytearray((root / "shards-v1" / "shard-00000.bin").read_bytes())
    data[3] ^= 0x40
    (root / "shards-v1" / "shard-00000.bin").write_bytes(bytes(data))
    failed = {c.name for c in release.check_release(bundle_path).failures}
    assert failed == {"hashes.dataset_shards"}


def test_rollback_is_a_stack(releases: dict[str, Path]) -> None:
    root, pointer = releases["root"], releases["pointer"]
    v3 = root / "v3.bundle.json"
    release.seal_release(
        v3,
        name="v3",
        tokenizer=root / "tok-v2",
        dataset=root / "data-v2.json",
        checkpoint=root / "ckpt-v2",
        canary=root / "canary.jsonl",
        previous=releases["v2"],
    )
    for path in (releases["v1"], releases["v2"], v3):
        assert release.promote(path, pointer=pointer).ok
    assert release.rollback(pointer=pointer)["name"] == "v2"
    assert release.rollback(pointer=pointer)["name"] == "v1"
    with pytest.raises(ConfigError, match="no earlier release"):
        release.rollback(pointer=pointer)


def test_bundles_read_back_through_the_canonical_reader(releases: dict[str, Path]) -> None:
    bundle = tp.contract.loads(releases["v2"].read_bytes())  # no float refused
    assert bundle["canary"]["max_token_ratio"] == {"default": "1.0"}
    from click.testing import CliRunner

    from tokenpact.cli.main import cli

    result = CliRunner().invoke(cli, ["reconcile", str(releases["v2"])])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------- issue 43: malformed input
def _mutated(bundle: dict, change: str) -> object:
    b = json.loads(json.dumps(bundle))
    if change == "no tokenizer path":
        del b["tokenizer"]["path"]
    elif change == "tokenizer a list":
        b["tokenizer"] = ["tok"]
    elif change == "path an int":
        b["dataset"]["path"] = 5
    elif change == "canary a string":
        b["canary"] = "canary.jsonl"
    elif change == "ratio not a number":
        b["canary"]["max_token_ratio"] = {"default": "fast"}
    elif change == "unknown transition":
        b["transition"] = "sideways"
    elif change == "version 999":
        b["version"] = 999
    elif change == "version true":
        b["version"] = True
    elif change == "name changed":
        b["name"] = "v2-renamed"
    elif change == "float limit":
        b["canary"]["max_token_ratio"] = {"default": 1.0}
    elif change == "whole bundle a list":
        return [b]
    elif change == "deep":
        return "DEEP"
    return b


CHANGES = ["no tokenizer path", "tokenizer a list", "path an int", "canary a string",
           "ratio not a number", "unknown transition", "version 999", "version true",
           "name changed", "float limit", "whole bundle a list", "deep"]  # fmt: skip


def _malformed_bundles_are_contract_errors(releases: dict[str, Path]) -> None:
    """Issue 43: KeyError 'path', TypeError and RecursionError tracebacks; version 999
    and a changed name passed. (One fixture for every change: it trains and resizes.)"""
    bundle = json.loads(releases["v2"].read_text())
    bad = releases["root"] / "bad.bundle.json"
    for change in CHANGES:
        mutated = _mutated(bundle, change)
        text = '{"kind": "tokenpact.release", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        bad.write_text(text if mutated == "DEEP" else json.dumps(mutated))
        with pytest.raises(ContractError):
            release.check_release(bad, previous=releases["v1"])
        with pytest.raises(ContractError):
            release.promote(bad, pointer=releases["pointer"])
        assert not releases["pointer"].exists(), change


def _emptying_the_canary_set_after_sealing_fails(releases: dict[str, Path]) -> None:
    """Issue 43: the canary set was bound by path only, so an emptied canary.jsonl passed
    with no canary check."""
    (releases["root"] / "canary.jsonl").write_text("")
    report = release.check_release(releases["v2"], previous=releases["v1"])
    assert "hashes.canary" in {c.name for c in report.failures}


def _a_bad_canary_line_is_a_failed_check(releases: dict[str, Path]) -> None:
    """Issue 43: JSONDecodeError on a bad canary line. A re-sealed bundle (canary hash
    matching) with a broken line fails the check instead of raising."""
    root = releases["root"]
    (root / "canary.jsonl").write_text('{"text": "ok"}\n{not json\n')
    bundle = json.loads(releases["v2"].read_text())
    bundle["canary"]["hash"] = tp.contract.file_sha256(root / "canary.jsonl")
    fixed = root / "fixed.bundle.json"
    fixed.write_text(json.dumps(_resealed(bundle)))
    report = release.check_release(fixed, previous=releases["v1"])
    failed = {c.name: c for c in report.failures}
    assert "canary.readable" in failed and "line 2" in report.format()


POINTERS = [
    '{"kind": "tokenpact.release-pointer", "version": 999, "current": null, "history": []}',
    '{"kind": "tokenpact.release-pointer", "version": 1, "current": {"bundle": 5}, "history": []}',
    '{"kind": "tokenpact.release-pointer", "version": 1, "current": null, "history": {}}',
    '{"kind": "tokenpact.release-pointer", "version": 1, "current": null, "history": [1]}',
    '{"kind": "tokenpact.release-pointer", "version": 1}',
    '{"kind": "tokenpact.release-pointer", "version": 1, "history": []}',
    # Fuzz finding: history without a current release (rollback read current's bundle).
    '{"kind": "tokenpact.release-pointer", "version": 1, "current": null, "history": ['
    '{"bundle": "v1.bundle.json", "name": "v1", "bundle_sha256": "sha256:' + "0" * 64 + '"}]}',
    "[" * 100_000,
    "{not json",
    "[]",
]


def _malformed_pointers_are_contract_errors(releases: dict[str, Path]) -> None:
    ptr = releases["pointer"]
    for pointer in POINTERS:
        ptr.write_text(pointer)
        with pytest.raises(ContractError):
            release.promote(releases["v1"], pointer=ptr)
        with pytest.raises(ContractError):
            release.rollback(pointer=ptr)
        with pytest.raises(ContractError):
            release.current_bundle(ptr)
        assert ptr.read_text() == pointer


def _a_pointer_naming_a_missing_bundle_is_a_contract_error(
    releases: dict[str, Path],
) -> None:
    """Fuzz finding: FileNotFoundError when a pointer entry names no file."""
    entry = {"bundle": " ", "name": "v1", "bundle_sha256": "sha256:" + "0" * 64}
    pointer = {"kind": "tokenpact.release-pointer", "version": 1}
    ptr = releases["pointer"]
    ptr.write_text(json.dumps({**pointer, "current": entry, "history": [entry]}))
    with pytest.raises(ContractError, match="missing or changed"):
        release.rollback(pointer=ptr)
    with pytest.raises(ContractError, match="changed since it was promoted"):
        release.promote(releases["v1"], pointer=ptr)


def _a_promoted_bundle_edited_in_place_is_refused_as_the_baseline(
    releases: dict[str, Path],
) -> None:
    ptr = releases["pointer"]
    assert release.promote(releases["v1"], pointer=ptr).ok
    v1 = json.loads(releases["v1"].read_text())
    v1["transition"] = None
    releases["v1"].write_text(json.dumps(_resealed(v1)))
    with pytest.raises(ContractError, match="changed since it was promoted"):
        release.promote(releases["v2"], pointer=ptr)


def _version_1_bundles_must_be_resealed_to_be_promoted(releases: dict[str, Path]) -> None:
    """Bundles sealed before the seal existed are still read, but admitting one as a new
    release needs a re-seal (their name and canary set are not bound)."""
    v1 = json.loads(releases["v1"].read_text())
    legacy = {k: v for k, v in v1.items() if k != "seal"}
    legacy["version"] = 1
    legacy["canary"] = {k: v for k, v in legacy["canary"].items() if k != "hash"}
    path = releases["root"] / "legacy.bundle.json"
    path.write_text(json.dumps(legacy))
    assert release.load_bundle(path)["name"] == "v1"
    report = release.check_release(path)
    assert "bundle.seal" in {c.name for c in report.failures}
    assert "re-seal" in report.format()


def test_malformed_bundles_and_pointers(releases: dict[str, Path]) -> None:
    """Issue 43 regression cases, on one fixture (it trains and resizes)."""
    _malformed_bundles_are_contract_errors(releases)
    _version_1_bundles_must_be_resealed_to_be_promoted(releases)
    _malformed_pointers_are_contract_errors(releases)
    _a_pointer_naming_a_missing_bundle_is_a_contract_error(releases)
    releases["pointer"].unlink()
    _a_promoted_bundle_edited_in_place_is_refused_as_the_baseline(releases)


def test_canary_set_is_bound_and_read_safely(releases: dict[str, Path]) -> None:
    _a_bad_canary_line_is_a_failed_check(releases)
    _emptying_the_canary_set_after_sealing_fails(releases)


def test_cache_invalidation_is_a_recorded_lifecycle_step(releases: dict[str, Path]) -> None:
    """Seed 0x0C2: appending tokens keeps old IDs but not old segmentation, so caches
    keyed by the old identity are retired with the release; promotion requires a fresh
    namespace, and a rollback invalidates only the candidate's caches, never the
    restored release's."""
    from click.testing import CliRunner

    from tokenpact.cli.main import cli
    from tokenpact.migrate import caches

    root, pointer = releases["root"], releases["pointer"]
    v1, v2 = (json.loads(releases[k].read_text()) for k in ("v1", "v2"))
    assert v1["cache_invalidation"] is None  # a first release retires nothing
    record = v2["cache_invalidation"]
    assert record == {
        "reason": "append-only",
        "stale": {
            "cache_namespace": v1["cache_namespace"],
            "tokenizer_semantic_hash": v1["tokenizer"]["semantic_hash"],
            "template_hash": tp.contract.template_hash(None),
        },
        "caches": ["prefix", "prompt", "tokenization", "compiled-graph"],
        "datasets": [{"path": "data-v1.json", "hash": v1["dataset"]["hash"]}],
    }
    assert record["stale"]["cache_namespace"] != v2["cache_namespace"]
    report = release.check_release(releases["v2"], previous=releases["v1"])
    assert report.ok, report.format(verbose=True)
    assert "cache.invalidation" in {c.name for c in report}

    # A record naming another namespace (or none) is refused, even when re-sealed.
    for wrong in (None, {**record, "stale": {**record["stale"], "cache_namespace": "tp-x"}}):
        edited = root / "edited.bundle.json"
        edited.write_text(json.dumps(_resealed({**v2, "cache_invalidation": wrong})))
        failed = {c.name for c in release.check_release(edited, previous=releases["v1"]).failures}
        assert "cache.invalidation" in failed
    # Editing it without re-sealing breaks the seal; a malformed one is a ContractError.
    tampered = root / "tampered.bundle.json"
    tampered.write_text(json.dumps({**v2, "cache_invalidation": None}))
    with pytest.raises(ContractError, match="seal"):
        release.load_bundle(tampered)
    tampered.write_text(json.dumps(_resealed({**v2, "cache_invalidation": {"stale": 1}})))
    with pytest.raises(ContractError, match="cache_invalidation"):
        release.load_bundle(tampered)
    # A bundle sealed before the step existed must be re-sealed.
    older = root / "older.bundle.json"
    older.write_text(
        json.dumps(_resealed({k: v for k, v in v2.items() if k != "cache_invalidation"}))
    )
    report = release.check_release(older, previous=releases["v1"])
    assert "cache.invalidation" in {c.name for c in report.failures}

    # A redeploy of the same tokenizer keeps the namespace: nothing is invalidated.
    same = root / "same.bundle.json"
    release.seal_release(
        same,
        name="v1-again",
        tokenizer=root / "tok-v1",
        dataset=root / "data-v1.json",
        checkpoint=root / "ckpt-v1",
        canary=root / "canary.jsonl",
        previous=releases["v1"],
    )
    assert json.loads(same.read_text())["cache_invalidation"] is None
    assert release.check_release(same, previous=releases["v1"]).ok

    # How a tool finds what the step makes stale: datasets bound to the old tokenizer
    # hash, and caches kept under a name holding the old namespace.
    (root / "cache" / v1["cache_namespace"]).mkdir(parents=True)
    (root / "cache" / v1["cache_namespace"] / "block-0").write_bytes(b"k")
    (root / "cache" / v2["cache_namespace"]).mkdir()
    (root / "cache" / f"prompts-{v1['cache_namespace']}.db").write_bytes(b"")
    found = caches.find_stale(record, [root])
    assert found["datasets"] == [str(root / "data-v1.json")]
    assert found["caches"] == sorted(
        [
            str(root / "cache" / v1["cache_namespace"]),
            str(root / "cache" / f"prompts-{v1['cache_namespace']}.db"),
        ]
    )
    assert caches.find_stale(None, [root]) == {"datasets": [], "caches": []}
    result = CliRunner().invoke(
        cli, ["release", "caches", str(releases["v2"]), "--root", str(root)]
    )
    assert result.exit_code == 0, result.output
    assert v1["cache_namespace"] in result.output and "data-v1.json" in result.output
    result = CliRunner().invoke(cli, ["release", "caches", str(releases["v2"]), "--json"])
    assert json.loads(result.output)["cache_invalidation"] == record

    # Promotion retires the replaced namespace; rollback invalidates only the candidate's.
    assert release.promote(releases["v1"], pointer=pointer).ok
    assert release.invalidations(pointer) == []
    assert release.promote(releases["v2"], pointer=pointer).ok
    assert release.invalidations(pointer) == [
        {"step": "promote", "bundle": "v2", "cache_namespace": v1["cache_namespace"]}
    ]
    result = CliRunner().invoke(cli, ["release", "rollback", "--pointer", str(pointer)])
    assert result.exit_code == 0, result.output
    assert v2["cache_namespace"] in result.output
    log = release.invalidations(pointer)
    assert log[-1] == {"step": "rollback", "bundle": "v2", "cache_namespace": v2["cache_namespace"]}
    assert all(e["cache_namespace"] != v1["cache_namespace"] for e in log[1:])
