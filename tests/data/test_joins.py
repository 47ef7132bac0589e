"""The joins between data steps: what one command writes, the next reads, unchanged.

Regression tests for issue 37: dataset.json readable by verify/release/doctor/hash,
dedup and split pass every input field through, end-of-document tokens and a truthful
boundary policy, duplicate IDs from the CLI, errors that name CLI flags.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.cli.main import cli
from tokenpact.contract import loads
from tokenpact.contract.dataset_files import read_dataset
from tokenpact.data import Document, encode_dataset, open_dataset
from tokenpact.errors import ConfigError


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory, real_docs: list[Document]) -> Path:
    folder = tmp_path_factory.mktemp("tok") / "tok"
    tp.train_bpe([d.text for d in real_docs], vocab_size=420).save(folder)
    return folder


@pytest.fixture()
def records(real_docs: list[Document]) -> list[dict[str, object]]:
    """Records with fields no step owns (slice, meta, a user 'source')."""
    rows: list[dict[str, object]] = [
        {
            "id": d.doc_id,
            "text": d.text,
            "slice": d.source,
            "source": "harvested",
            "meta": {"n": i, "tags": ["a", "b"]},
        }
        for i, d in enumerate(real_docs[:60])
    ]
    rows.append({**rows[3], "id": "copy-of-3"})  # an exact duplicate
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_dataset_manifest_reads_back_through_the_canonical_reader(
    tmp_path: Path, tok: Path, real_docs: list[Document]
) -> None:
    docs = [Document(d.doc_id, d.text, source=d.source) for d in real_docs[:40]]
    encode_dataset(docs, tp.Tokenizer.load(tok), tmp_path / "ds", append_eod=True)
    manifest = loads((tmp_path / "ds" / "dataset.json").read_bytes())  # no float refused
    shares = manifest["mixture"]["token_share"]
    assert shares and all(isinstance(v, str) for v in shares.values())
    assert abs(sum(float(v) for v in shares.values()) - 1.0) < 1e-9
    for path in (tmp_path / "ds", tmp_path / "ds" / "dataset.json"):
        found = read_dataset(path)
        assert found.declaration == manifest["declaration"] and found.root == tmp_path / "ds"


def test_every_dataset_path_is_accepted_by_verify_hash_and_doctor(
    tmp_path: Path, tok: Path, records: list[dict[str, object]]
) -> None:
    corpus = _write(tmp_path / "raw.jsonl", records[:-1])
    for fmt in ("parquet", "megatron"):
        out = tmp_path / fmt
        code, text = _run(
            "encode-dataset", "-t", tok, corpus, "-o", out, "--shard-format", fmt, "--append-eod"
        )
        assert code == 0, text
        shard_files = sorted(p for p in out.iterdir() if p.name.startswith("shard-"))
        hashes = set()
        for path in [out, out / "dataset.json", *shard_files]:
            code, text = _run("verify", tok, "--dataset", path)
            assert code == 0 and "dataset.boundaries" not in text, (path, text)
            code, text = _run("hash", path, "--json")
            assert code == 0, text
            hashes.add(json.loads(text)["dataset_hash"])
            code, text = _run("doctor", path, tok)
            assert code == 0 and "encoded dataset" in text, (path, text)
        assert len(hashes) == 1


def test_verify_and_doctor_catch_a_flipped_shard_byte(
    tmp_path: Path, tok: Path, records: list[dict[str, object]]
) -> None:
    corpus = _write(tmp_path / "raw.jsonl", records[:-1])
    out = tmp_path / "ds"
    assert (
        _run("encode-dataset", "-t", tok, corpus, "-o", out, "--shard-format", "megatron")[0] == 0
    )
    data = bytearray((out / "shard-00000.bin").read_bytes())
    data[7] ^= 0x01
    (out / "shard-00000.bin").write_bytes(bytes(data))
    code, text = _run("verify", tok, "--dataset", out)
    assert code == 1 and "dataset.shards" in text and "shard-00000.bin" in text
    code, text = _run("doctor", out)
    assert code == 1 and "dataset-shards-changed" in text


def test_a_lone_megatron_shard_is_not_a_false_clean(tmp_path: Path) -> None:
    (tmp_path / "shard-00000.bin").write_bytes(b"\x00" * 8)
    code, text = _run("doctor", tmp_path / "shard-00000.bin")
    assert code == 1 and "dataset.json" in text


def test_dedup_and_split_pass_every_field_through(
    tmp_path: Path, records: list[dict[str, object]]
) -> None:
    corpus = _write(tmp_path / "raw.jsonl", records)
    kept = tmp_path / "kept.jsonl"
    code, text = _run("data", "dedup", corpus, "-o", kept)
    assert code == 0, text
    by_id = {r["id"]: r for r in records}
    out = _read(kept)
    assert "copy-of-3" not in {r["id"] for r in out} and len(out) < len(records)
    for row in out:
        assert row == by_id[row["id"]]  # source stays "harvested"; slice and meta survive
    code, text = _run(
        "data", "split", kept, "-o", tmp_path / "sp", "--role", "a=0.5", "--role", "b=0.5"
    )
    assert code == 0, text
    split_rows = _read(tmp_path / "sp" / "a.jsonl") + _read(tmp_path / "sp" / "b.jsonl")
    assert sorted(split_rows, key=lambda r: str(r["id"])) == sorted(out, key=lambda r: str(r["id"]))


def test_source_field_is_written_back_to_the_field_it_came_from(
    tmp_path: Path, records: list[dict[str, object]]
) -> None:
    corpus = _write(tmp_path / "raw.jsonl", records)
    kept = tmp_path / "kept.jsonl"
    assert _run("data", "dedup", corpus, "-o", kept, "--source-field", "slice")[0] == 0
    for row in _read(kept):
        assert row["source"] == "harvested" and row["slice"] != "default"


def test_duplicate_ids_from_the_cli(tmp_path: Path, records: list[dict[str, object]]) -> None:
    rows = [*records, {**records[5], "text": "a different text under a repeated ID"}]
    corpus = _write(tmp_path / "raw.jsonl", rows)
    code, text = _run("data", "dedup", corpus, "-o", tmp_path / "k.jsonl", "--no-near")
    assert code == 1 and "--duplicate-ids number" in text and "duplicate_ids" not in text
    code, text = _run(
        "data",
        "dedup",
        corpus,
        "-o",
        tmp_path / "k.jsonl",
        "--no-near",
        "--duplicate-ids",
        "number",
    )
    assert code == 0, text
    ids = [r["id"] for r in _read(tmp_path / "k.jsonl")]
    assert f"{records[5]['id']}#2" in ids and records[5]["id"] in ids
    # Only the repeat was renamed; every other kept ID is an original one.
    assert set(ids) - {r["id"] for r in records} == {f"{records[5]['id']}#2"}


def test_errors_from_the_cli_name_flags(tmp_path: Path, tok: Path) -> None:
    corpus = _write(tmp_path / "raw.jsonl", [{"body": "no text field here"}])
    code, text = _run("encode-dataset", "-t", tok, corpus, "-o", tmp_path / "o")
    assert code == 1 and "--text-field" in text and "text_field" not in text


def test_append_eod_and_add_bos(tmp_path: Path, tok: Path, real_docs: list[Document]) -> None:
    t = tp.Tokenizer.load(tok)
    docs = [Document(d.doc_id, d.text) for d in real_docs[:30]] + [Document("zz-empty", "")]
    for fmt in ("parquet", "megatron"):
        out = tmp_path / fmt
        manifest = encode_dataset(
            docs, t, out, format=fmt, append_eod=True, add_bos=True, max_length=16
        )
        assert manifest["boundary_policy"] == "eos_separate_documents"
        assert manifest["eod_id"] == t.eos_id and manifest["bos_id"] == t.bos_id
        ds = open_dataset(out, tokenizer=t)
        by_id = dict(zip(ds.doc_ids, range(len(ds)), strict=True))
        for d in docs:
            ids = ds[by_id[d.doc_id]].tolist()
            body = t.encode(d.text)[:14]
            assert ids == [t.bos_id, *body, t.eos_id]
        assert int(ds.lengths.max()) <= 16


def test_boundary_policy_describes_the_shards(
    tmp_path: Path, tok: Path, real_docs: list[Document]
) -> None:
    t = tp.Tokenizer.load(tok)
    docs = [Document(d.doc_id, d.text) for d in real_docs[:10]]
    manifest = encode_dataset(docs, t, tmp_path / "plain")
    assert manifest["boundary_policy"] == "none" and not manifest["append_eod"]
    ds = open_dataset(tmp_path / "plain")
    assert not np.any(ds.input_ids == t.eos_id)
    with pytest.raises(ConfigError, match="append_eod"):
        encode_dataset(docs, t, tmp_path / "lie", boundary_policy="eos_separate_documents")
    # A hand-edited policy is caught by verify against the shards.
    path = tmp_path / "plain" / "dataset.json"
    edited = json.loads(path.read_text())
    edited["boundary_policy"] = "eos_separate_documents"
    path.write_text(json.dumps(edited))
    code, text = _run("verify", tok, "--dataset", tmp_path / "plain")
    assert code == 1 and "dataset.boundaries" in text and "--append-eod" in text


def test_allowed_special_lets_control_spellings_through(tmp_path: Path, tok: Path) -> None:
    t = tp.Tokenizer.load(tok)
    docs = [Document("a", "before <|eot|> after")]
    plain = open_dataset(tmp_path / "p") if encode_dataset(docs, t, tmp_path / "p") else None
    assert plain is not None and t.special_tokens["<|eot|>"] not in plain[0].tolist()
    encode_dataset(docs, t, tmp_path / "s", allowed_special=["<|eot|>"])
    assert t.special_tokens["<|eot|>"] in open_dataset(tmp_path / "s")[0].tolist()
    assert json.loads((tmp_path / "s" / "dataset.json").read_text())["allowed_special"] == [
        "<|eot|>"
    ]


def test_leakage_cli_reports_and_drops(tmp_path: Path, records: list[dict[str, object]]) -> None:
    fit = [dict(r) for r in records[:30] if r["id"] != "copy-of-3"]
    test = [dict(r) for r in records[30:45]]
    # One exact copy and one shared passage (13+ words) carried into the fit role.
    fit.append({**test[0], "id": "fit-copy"})
    passage = " ".join(f"word{i}" for i in range(20))
    fit.append({"id": "fit-quote", "text": "intro " + passage, "slice": "q", "meta": {}})
    test.append({"id": "test-quote", "text": passage + " outro", "slice": "q", "meta": {}})
    _write(tmp_path / "fit.jsonl", fit)
    _write(tmp_path / "test.jsonl", test)
    args = ["data", "leakage", tmp_path / "fit.jsonl", tmp_path / "test.jsonl"]
    code, text = _run(*args, "--report", tmp_path / "leak.json")
    assert code == 1 and "| fit / test |" in text, text
    assert json.loads((tmp_path / "leak.json").read_text())["pairs"]
    code, text = _run(*args, "--drop", tmp_path / "fit.clean.jsonl")
    assert code == 0, text
    kept = _read(tmp_path / "fit.clean.jsonl")
    ids = {r["id"] for r in kept}
    assert "fit-copy" not in ids and "fit-quote" not in ids
    by_id = {r["id"]: r for r in fit}
    assert all(r == by_id[r["id"]] for r in kept)  # every field passed through
    code, text = _run(
        "data",
        "leakage",
        tmp_path / "fit.clean.jsonl",
        tmp_path / "test.jsonl",
        "--fit-role",
        "fit",
    )
    assert code == 0, text


def test_bind_an_existing_checkpoint_and_verify_an_hf_directory(
    tmp_path: Path, real_docs: list[Document]
) -> None:
    import tiny_lm

    native = tp.train_bpe([d.text for d in real_docs], vocab_size=420)
    hf = tmp_path / "hf"
    hf.mkdir()
    native.export_hf(hf / "tokenizer.json")
    tok = tp.Tokenizer.load(hf)
    tiny_lm.build(tmp_path / "ckpt", rows=tok.vocab_size, tied=True)
    config_path = tmp_path / "ckpt" / "config.json"
    config = json.loads(config_path.read_text())
    ids = tok.special_tokens
    config.update(
        bos_token_id=ids["<|bos|>"],
        pad_token_id=ids["<|pad|>"],
        eos_token_id=[ids["<|eos|>"], ids["<|eot|>"]],
        my_key=[1, 2],
    )
    config_path.write_text(json.dumps(config))
    code, text = _run("bind", tmp_path / "ckpt", "--tokenizer", hf)
    assert code == 0, text
    bound = json.loads(config_path.read_text())
    assert bound["tokenpact"]["tokenizer_semantic_hash"] == tok.semantic_hash
    assert {k: v for k, v in bound.items() if k != "tokenpact"} == config  # all else kept
    docs = [Document(d.doc_id, d.text) for d in real_docs[:20]]
    encode_dataset(docs, tok, tmp_path / "ds", format="megatron", append_eod=True)
    code, text = _run("verify", hf, "--dataset", tmp_path / "ds", "--checkpoint", tmp_path / "ckpt")
    assert code == 0 and "artifact.foreign" not in text, text  # passes quietly
    code, text = _run("verify", hf, "-v")
    assert code == 0 and "artifact.foreign" in text
    # A checkpoint too small for the tokenizer is refused and nothing is written.
    tiny_lm.build(tmp_path / "small", rows=tok.vocab_size - 5, tied=True)
    before = (tmp_path / "small" / "config.json").read_text()
    code, text = _run("bind", tmp_path / "small", "-t", hf)
    assert code == 1 and "rows" in text
    assert (tmp_path / "small" / "config.json").read_text() == before


def test_clean_passes_every_field_through(tmp_path: Path, records: list[dict[str, object]]) -> None:
    corpus = _write(tmp_path / "raw.jsonl", records)
    out = tmp_path / "clean.jsonl"
    code, text = _run(
        "data", "clean", corpus, out, "--steps", "repair,pii", "--duplicate-ids", "number"
    )
    assert code == 0, text
    by_id = {r["id"]: r for r in records}
    rows = _read(out)
    assert len(rows) == len(records)
    for row in rows:
        original = by_id[row["id"]]
        # Every input field is kept as it was ("meta" included: this run's annotations
        # go to clean_meta because the input already uses "meta").
        for key, value in original.items():
            if key != "text":
                assert row[key] == value, key
        assert {"clean_meta", "raw_sha256", "clean_sha256"} <= set(row)
