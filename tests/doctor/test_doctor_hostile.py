"""The doctor on hostile batch files (issue 43): zip bombs, damaged archives, uint64 and
non-integer IDs, labels outside the vocabulary. Every case ends in a report (a finding or
"cannot inspect", exit 1), never a traceback or an allocation the file dictates."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tokenpact.doctor import batch_view, diagnose

from .fixtures import batch_file, byte_bpe_artifact, padded


def _problem(path: Path) -> str:
    report = diagnose([path])
    assert report.exit_code == 1
    problem = report.inspected[0].problem
    assert problem is not None and problem.startswith("ArtifactError"), problem
    return problem


def _npy(header_shape: tuple[int, ...], data: bytes) -> bytes:
    out = io.BytesIO()
    header = {"descr": "<i8", "fortran_order": False, "shape": header_shape}
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue() + data


def test_npy_header_declaring_gigabytes_is_refused_before_allocation(tmp_path: Path) -> None:
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("input_ids.npy", _npy((1 << 29,), b"\0" * 64))  # says 4 GiB
    assert "declares" in _problem(path)


def test_zip_bomb_is_refused_by_its_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_view, "MAX_NPZ_BYTES", 1 << 20)  # a real bomb, scaled down
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, input_ids=np.zeros((1, 1 << 18), dtype=np.int64))
    assert path.stat().st_size < 10_000
    assert "inflate" in _problem(path)


def test_damaged_archives_are_typed(tmp_path: Path) -> None:
    good = tmp_path / "good.npz"
    np.savez_compressed(good, input_ids=np.arange(5000, dtype=np.int64).reshape(10, 500))
    data = good.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    _problem(truncated)
    # Garbage in the middle of the deflate stream: zlib.error or a CRC mismatch.
    for offset in (80, 200, len(data) // 3):
        flipped = bytearray(data)
        flipped[offset : offset + 16] = bytes(range(16))
        path = tmp_path / f"flipped{offset}.npz"
        path.write_bytes(bytes(flipped))
        report = diagnose([path])
        assert report.exit_code in (0, 1)
        problem = report.inspected[0].problem
        assert problem is None or problem.startswith("ArtifactError"), problem


def _parquet(path: Path, columns: dict[str, pa.Array]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def test_uint64_parquet_ids_are_out_of_vocabulary_not_an_overflow(tmp_path: Path) -> None:
    tok = byte_bpe_artifact(tmp_path / "tok")
    ids = pa.array([[1, 2, 2**64 - 1]], type=pa.list_(pa.uint64()))
    report = diagnose([tok, _parquet(tmp_path / "u64.parquet", {"input_ids": ids})])
    assert "id-out-of-vocab" in report.codes() and report.exit_code == 1
    np.savez(tmp_path / "u64.npz", input_ids=np.array([[1, 2**64 - 1]], dtype=np.uint64))
    report = diagnose([tok, tmp_path / "u64.npz"])
    assert "id-out-of-vocab" in report.codes() and "negative-input-id" not in report.codes()


@pytest.mark.parametrize(
    "values",
    [
        pa.array([[1.0, 2.5]], type=pa.list_(pa.float64())),
        pa.array([["a", "b"]], type=pa.list_(pa.string())),
        pa.array([[True, False]], type=pa.list_(pa.bool_())),
        pa.array([[1, None]], type=pa.list_(pa.int64())),
        pa.array([1, 2], type=pa.int64()),
    ],
)
def test_non_integer_parquet_ids_are_not_clean(tmp_path: Path, values: pa.Array) -> None:
    _problem(_parquet(tmp_path / "bad.parquet", {"input_ids": values}))


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.str_])
def test_non_integer_npz_ids_are_not_clean(tmp_path: Path, dtype: type) -> None:
    path = batch_file(tmp_path, {"input_ids": np.ones((2, 3)).astype(dtype)})
    assert "dtype" in _problem(path)


def test_labels_are_range_checked_against_the_vocabulary(tmp_path: Path) -> None:
    tok = byte_bpe_artifact(tmp_path / "tok")
    arrays = padded()
    clean = diagnose([tok, batch_file(tmp_path, arrays, "clean.npz")])
    assert "label-out-of-vocab" not in clean.codes()
    labels = arrays["labels"].copy()
    assert (labels == -100).any()  # the ignore index stays allowed
    labels[0, 0] = 10_000
    arrays["labels"] = labels
    report = diagnose([tok, batch_file(tmp_path, arrays, "bad.npz")])
    assert "label-out-of-vocab" in report.codes() and report.exit_code == 1


def test_deep_json_beside_a_batch_is_typed(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    report = diagnose([path])
    assert report.exit_code == 1 and report.inspected[0].problem


def test_header_versions_other_than_npy_1_and_2(tmp_path: Path) -> None:
    path = tmp_path / "v9.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("input_ids.npy", b"\x93NUMPY\x09\x00" + struct.pack("<H", 0))
    _problem(path)


def test_a_dataset_whose_manifest_lies_is_a_finding(tmp_path: Path) -> None:
    import json

    import tokenpact as tp
    from tokenpact.data import Document, encode_dataset

    texts = [f"document number {i} says hello" for i in range(12)]
    tok = tp.train_bpe(texts, vocab_size=270)
    encode_dataset([Document(f"d{i:02d}", t) for i, t in enumerate(texts)], tok, tmp_path / "ds",
                   records_per_shard=4)  # fmt: skip
    assert "dataset-shards-changed" not in diagnose([tmp_path / "ds"]).codes()
    manifest = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    gone = manifest["shards"].pop(1)  # an entry dropped, the totals adjusted
    manifest["records"] -= gone["records"]
    manifest["tokens"] -= gone["tokens"]
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps(manifest))
    report = diagnose([tmp_path / "ds"])
    assert "dataset-shards-changed" in report.codes() and report.exit_code == 1
