"""The data journey through the command line, as a user runs it, with nothing lost at a
join: raw mixed-language JSON Lines -> clean -> dedup -> split -> leakage -> encode
(Parquet and Megatron, end-of-document tokens) -> verify -> doctor -> bind -> release
seal/check/promote -> migrate -> re-encode -> release v2 -> rollback.

Every step is a CLI call; Python only builds the inputs (harvested text, a tiny
checkpoint) and reads the outputs back to assert that no record, field or ID was lost
or changed, and that every tamper along the way is caught.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tiny_lm
import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.corpus import builtin_corpus
from tokenpact.data import open_dataset

PER_SLICE = 70


def run(*args: Any, code: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, f"{args}\n{result.output}"
    return result.output


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def raw_records() -> list[dict[str, Any]]:
    """Paragraphs of harvested text (gettext catalogs in many languages and scripts,
    English docstrings, Python code), each with fields no step owns."""
    per_slice: dict[str, list[dict[str, Any]]] = {}
    for doc in builtin_corpus(max_bytes=600_000):
        for k, para in enumerate(doc.text.split("\n\n")):
            bucket = per_slice.setdefault(doc.slice, [])
            if para.strip() and len(bucket) < PER_SLICE:
                n = len(bucket)
                bucket.append(
                    {
                        "id": f"{doc.slice}-{n:03d}",
                        "text": para,
                        "slice": doc.slice,
                        "source": "harvest",  # a user field, not --source-field
                        "meta": {"origin": doc.source, "paragraph": k},
                    }
                )
    rows = [r for bucket in per_slice.values() for r in bucket]
    rows.append({**rows[5], "id": "exact-copy"})  # removed by dedup
    rows.append({**rows[9], "text": rows[9]["text"] + " (revised)"})  # a repeated ID
    return rows


def flip_byte(path: Path, at: int = 5) -> bytes:
    data = path.read_bytes()
    changed = bytearray(data)
    changed[at] ^= 0x01
    path.write_bytes(bytes(changed))
    return data


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield _walk(tmp_path_factory.mktemp("journey"), engine="local")


def _walk(root: Path, *, engine: str) -> dict[str, Any]:
    raw = write_jsonl(root / "raw.jsonl", raw_records())
    run("train", raw, "-o", root / "tok", "--vocab-size", 700)
    clean = root / "clean.jsonl"
    run(
        "data", "clean", raw, clean, "--steps", "repair,quality,pii", "--preset", "short",
        "--source-field", "slice", "--duplicate-ids", "number",
        "--rejected", root / "rejected.jsonl", "--report", root / "clean-report.json",
        "--manifest", root / "corpus.json", "--engine", engine,
    )  # fmt: skip
    kept = root / "kept.jsonl"
    run("data", "dedup", clean, "-o", kept, "--report", root / "dedup.json", "--engine", engine)
    run("data", "split", kept, "-o", root / "splits", "--role", "fit=0.8", "--role", "test=0.2")
    fit = root / "fit.clean.jsonl"
    leak = run("data", "leakage", root / "splits" / "fit.jsonl", root / "splits" / "test.jsonl",
               "--drop", fit, "--report", root / "leakage.json")  # fmt: skip
    datasets = {}
    for fmt in ("parquet", "megatron"):
        out = root / f"ds-{fmt}"
        run(
            "encode-dataset", "-t", root / "tok", fit, "-o", out, "--shard-format", fmt,
            "--append-eod", "--source-field", "slice", "--records-per-shard", 50,
            "--engine", engine,
        )  # fmt: skip
        datasets[fmt] = out
    return {"root": root, "raw": raw, "clean": clean, "kept": kept, "fit": fit,
            "datasets": datasets, "leak": leak}  # fmt: skip


def test_no_record_field_or_id_is_lost(journey: dict[str, Any]) -> None:
    raw = read_jsonl(journey["raw"])
    clean = read_jsonl(journey["clean"])
    rejected = read_jsonl(journey["root"] / "rejected.jsonl")
    # The repeated ID was numbered, every other ID kept; every record is kept or rejected.
    ids = [*(r["id"] for r in raw[:-1]), f"{raw[-1]['id']}#2"]
    assert sorted(r["id"] for r in clean + rejected) == sorted(ids)
    assert 0 < len(rejected) < len(raw) / 2  # the "short" preset fits these paragraphs
    originals = dict(zip(ids, raw, strict=True))
    for after in clean:
        before = originals[after["id"]]
        for key in ("slice", "source", "meta"):
            assert after[key] == before[key]  # passed through, never rewritten
    kept = read_jsonl(journey["kept"])
    dedup = json.loads((journey["root"] / "dedup.json").read_text())
    removed = dedup["totals"]["exact_removed"] + dedup["totals"]["near_removed"]
    assert len(kept) == len(clean) - removed and "exact-copy" not in {r["id"] for r in kept}
    by_id = {r["id"]: r for r in clean}
    assert all(r == by_id[r["id"]] for r in kept)
    splits = journey["root"] / "splits"
    fit, test = read_jsonl(splits / "fit.jsonl"), read_jsonl(splits / "test.jsonl")
    assert sorted(r["id"] for r in fit + test) == sorted(r["id"] for r in kept)
    assert all(r == by_id[r["id"]] for r in fit + test)
    fit_clean = read_jsonl(journey["fit"])
    leaked = {r["id"] for r in fit} - {r["id"] for r in fit_clean}
    assert f"dropped {len(leaked)}" in journey["leak"]
    assert all(r == by_id[r["id"]] for r in fit_clean)


def test_shards_hold_every_kept_document_with_eod(journey: dict[str, Any]) -> None:
    tok = tp.Tokenizer.load(journey["root"] / "tok")
    fit = {r["id"]: r for r in read_jsonl(journey["fit"])}
    arrays = {}
    for fmt, path in journey["datasets"].items():
        ds = open_dataset(path, tokenizer=tok)
        assert sorted(ds.doc_ids) == sorted(fit)
        manifest = json.loads((path / "dataset.json").read_text())
        assert manifest["boundary_policy"] == "eos_separate_documents" and manifest["append_eod"]
        shares = manifest["mixture"]["token_share"]
        assert set(shares) == {r["slice"] for r in fit.values()}
        for doc_id, ids in ds:
            assert int(ids[-1]) == tok.eos_id
            assert tok.decode(ids[:-1].tolist()) == fit[doc_id]["text"]
        arrays[fmt] = ds.input_ids.astype(np.int64)
    assert np.array_equal(arrays["parquet"], arrays["megatron"])


def test_every_dataset_path_verifies_and_doctors_clean(journey: dict[str, Any]) -> None:
    tok = journey["root"] / "tok"
    for path in journey["datasets"].values():
        shard = sorted(path.glob("shard-*"))[0]
        for target in (path, path / "dataset.json", shard):
            assert "all" in run("verify", tok, "--dataset", target)
            run("doctor", target, tok)


def test_tampers_are_caught(journey: dict[str, Any], tmp_path: Path) -> None:
    root = journey["root"]
    ds = journey["datasets"]["megatron"]
    shard = ds / "shard-00000.bin"
    original = flip_byte(shard)
    try:
        assert "dataset.shards" in run("verify", root / "tok", "--dataset", ds, code=1)
        assert "dataset-shards-changed" in run("doctor", ds, code=1)
    finally:
        shard.write_bytes(original)
    manifest_path = ds / "dataset.json"
    text = manifest_path.read_text()
    try:
        manifest = json.loads(text)
        manifest["declaration"]["record_count"] += 1
        manifest_path.write_text(json.dumps(manifest))
        out = run("verify", root / "tok", "--dataset", ds, code=1)
        assert "dataset.declaration_hash" in out
    finally:
        manifest_path.write_text(text)
    other = tmp_path / "other-tok"
    run("train", journey["fit"], "-o", other, "--vocab-size", 500)
    assert "dataset.tokenizer_hash" in run("verify", other, "--dataset", ds, code=1)


def test_release_migrate_reencode_and_rollback(journey: dict[str, Any]) -> None:
    root = journey["root"]
    tok = tp.Tokenizer.load(root / "tok")
    tiny_lm.build(root / "ckpt-v1", rows=tok.vocab_size, tied=True)
    config_path = root / "ckpt-v1" / "config.json"
    config = json.loads(config_path.read_text())
    ids = tok.special_tokens
    config.update(
        bos_token_id=ids["<|bos|>"],
        pad_token_id=ids["<|pad|>"],
        eos_token_id=[ids["<|eos|>"], ids["<|eot|>"]],
    )
    config_path.write_text(json.dumps(config))
    run("bind", root / "ckpt-v1", "--tokenizer", root / "tok")
    ds1 = journey["datasets"]["megatron"]
    v1, pointer = root / "v1.bundle.json", root / "current.json"
    run("release", "seal", "--name", "v1", "--tokenizer", root / "tok", "--dataset", ds1,
        "--checkpoint", root / "ckpt-v1", "--out", v1)  # fmt: skip
    run("release", "check", v1)
    run("release", "promote", v1, "--pointer", pointer)

    # Migrate: extend the vocabulary, resize the checkpoint, re-encode, release v2.
    run("migrate", "extend", "-t", root / "tok", "--corpus", journey["fit"],
        "--add-merges", 8, "-o", root / "tok2")  # fmt: skip
    run("migrate", "apply", "--old", root / "tok", "--new", root / "tok2",
        "--checkpoint", root / "ckpt-v1", "-o", root / "ckpt-v2")  # fmt: skip
    run("bind", root / "ckpt-v2", "--tokenizer", root / "tok2")
    ds2 = root / "ds2"
    run("encode-dataset", "-t", root / "tok2", journey["fit"], "-o", ds2,
        "--shard-format", "megatron", "--append-eod", "--source-field", "slice")  # fmt: skip
    run("verify", root / "tok2", "--dataset", ds2, "--checkpoint", root / "ckpt-v2")
    assert sorted(open_dataset(ds2).doc_ids) == sorted(open_dataset(ds1).doc_ids)
    canary = write_jsonl(
        root / "canary.jsonl",
        [{"slice": r["slice"], "text": r["text"]} for r in read_jsonl(journey["fit"])[:20]],
    )
    v2 = root / "v2.bundle.json"
    run("release", "seal", "--name", "v2", "--tokenizer", root / "tok2", "--dataset", ds2,
        "--checkpoint", root / "ckpt-v2", "--canary", canary, "--previous", v1,
        "--out", v2)  # fmt: skip
    checked = run("release", "check", v2)  # the recorded previous: nothing skipped
    assert "transition.declared" in checked and "canary." in checked
    assert "all" in run("reconcile", v2)  # a release bundle runs the same admission
    run("release", "promote", v2, "--pointer", pointer)
    # A flipped byte in the new shards blocks a re-check.
    original = flip_byte(ds2 / "shard-00000.bin")
    try:
        assert "hashes.dataset_shards" in run("release", "check", v2, code=1)
    finally:
        (ds2 / "shard-00000.bin").write_bytes(original)
    assert "v1" in run("release", "rollback", "--pointer", pointer)
    assert "no earlier release" in run("release", "rollback", "--pointer", pointer, code=1)
