"""``tokenpact doctor``: exit codes, JSON output, Parquet batches and unreadable paths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from tokenpact.cli import cli
from tokenpact.doctor import diagnose

from .fixtures import PAD, batch_file, byte_bpe_artifact, padded


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["doctor", *args])
    return result.exit_code, result.output


def test_clean_batch_exits_zero(tmp_path: Path) -> None:
    path = batch_file(tmp_path, padded(tokenizer_hash=np.asarray("sha256:" + "00" * 32)))
    code, out = _run(str(path))
    assert code == 0, out
    assert "clean" in out


def test_findings_exit_one_and_json(tmp_path: Path) -> None:
    arrays = padded()
    arrays["input_ids"] = np.where(arrays["attention_mask"] == 1, arrays["input_ids"], -1)
    path = batch_file(tmp_path, arrays)
    code, out = _run("--json", str(path))
    assert code == 1
    doc = json.loads(out)
    assert doc["exit_code"] == 1
    codes = {f["code"] for f in doc["findings"]}
    assert {"negative-input-id", "batch-without-identity"} <= codes
    finding = next(f for f in doc["findings"] if f["code"] == "negative-input-id")
    assert finding["evidence"] and finding["fix"] and finding["path"] == str(path)


def test_only_restricts_detectors(tmp_path: Path) -> None:
    path = batch_file(tmp_path, padded())
    code, out = _run("--only", "negative-input-id", str(path))
    assert code == 0 and "1 detectors ran" in out


def test_usage_errors_exit_two(tmp_path: Path) -> None:
    assert _run()[0] == 2
    assert _run(str(tmp_path / "missing.npz"))[0] == 2
    assert _run("--only", "no-such-detector", str(tmp_path))[0] == 2


def test_unreadable_file_is_reported_not_raised(tmp_path: Path) -> None:
    broken = tmp_path / "batch.npz"
    broken.write_bytes(b"not a zip file")
    code, out = _run(str(broken))
    assert code == 1
    assert "cannot inspect" in out and "Traceback" not in out
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello", encoding="utf-8")
    report = diagnose([unknown])
    assert report.exit_code == 1 and report.inspected[0].problem


def test_parquet_batch_with_ragged_rows(tmp_path: Path) -> None:
    rows = {
        "input_ids": [[5, 6, 7, 2], [8, 9, 2]],
        "labels": [[6, 7, 2, -100], [9, 2, -100]],
        "attention_mask": [[1, 1, 1, 1], [1, 1, 1]],
    }
    table = pa.table(rows).replace_schema_metadata({"tokenizer_hash": "sha256:" + "00" * 32})
    pq.write_table(table, tmp_path / "clean.parquet")
    assert diagnose([tmp_path / "clean.parquet"]).findings == []
    rows["input_ids"][1] = [8, 9, 2, PAD]
    rows["attention_mask"][1] = [1, 1, 1, 0]
    rows["labels"][1] = [9, 2, PAD, PAD]
    pq.write_table(pa.table(rows), tmp_path / "bad.parquet")
    report = diagnose([tmp_path / "bad.parquet"])
    assert {"pad-in-labels", "batch-without-identity"} <= set(report.codes())


def test_a_batch_is_checked_against_a_tokenizer(tmp_path: Path) -> None:
    folder = byte_bpe_artifact(tmp_path / "tok")
    arrays = padded()
    arrays["input_ids"][0, 0] = 99_999
    report = diagnose([folder, batch_file(tmp_path, arrays)])
    found = next(f for f in report.findings if f.code == "id-out-of-vocab")
    assert "99999" in found.evidence


def test_broken_template_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    from .cases import _chat

    paths, _ = _chat(tmp_path, "{% for m in messages %}{{ m.content }")  # syntax error
    report = diagnose(paths)
    assert "template-render-failed" in report.codes()


def test_hf_style_unshifted_packed_batch_is_clean(tmp_path: Path) -> None:
    from tokenpact.batch import collate_packed

    from .fixtures import RECORDS

    batch = collate_packed(RECORDS, label_convention="unshifted")
    arrays = {
        "input_ids": batch.input_ids,
        "labels": batch.labels,
        "position_ids": batch.position_ids,
        "cu_seqlens": batch.cu_seqlens,
        "tokenizer_hash": np.asarray("sha256:" + "00" * 32),
    }
    assert diagnose([batch_file(tmp_path, arrays)]).findings == []
    # Keeping the first label of a record lets the model's own shift cross the boundary.
    arrays["labels"] = batch.input_ids.copy()
    report = diagnose([batch_file(tmp_path, arrays, "crossing.npz")])
    assert "label-crosses-boundary" in report.codes()


def test_declared_stream_policy_keeps_positions(tmp_path: Path) -> None:
    from .fixtures import packed

    arrays = packed(position_ids=np.arange(12), packing_policy=np.asarray("stream"))
    report = diagnose([batch_file(tmp_path, arrays)])
    assert "positions-not-reset" not in report.codes()


def test_malformed_batch_arrays_are_reported(tmp_path: Path) -> None:
    bad_shape = batch_file(
        tmp_path, {"input_ids": np.zeros((2, 3), np.int64), "labels": np.zeros((2, 4), np.int64)}
    )
    floats = batch_file(tmp_path, {"input_ids": np.zeros((2, 3), dtype=np.float32)}, "f.npz")
    no_ids = batch_file(tmp_path, {"labels": np.zeros(3)}, "n.npz")
    report = diagnose([bad_shape, floats, no_ids])
    problems = [i.problem or "" for i in report.inspected]
    assert all(problems) and report.exit_code == 1
    assert "shape" in problems[0] and "dtype" in problems[1] and "input_ids" in problems[2]
