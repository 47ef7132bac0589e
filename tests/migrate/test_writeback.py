"""Durable writes of a resized checkpoint: early write-back and the durable switch.

Neither may change a byte of the output; ``durable=True`` must fsync every file it
renames into place, ``durable=False`` none.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import tiny_lm
import tokenpact as tp
from tokenpact import migrate
from tokenpact.migrate import safetensors_stream, writeback
from tokenpact.migrate.safetensors_stream import OutTensor, copy_range, write_safetensors

OLD_MERGES = [(c, c) for c in b"abcdfghijklm"]
NEW_MERGES = [(101, 114), (114, 101), (61, 61), (49, 48)]


def _toks() -> tuple[tp.Tokenizer, tp.Tokenizer]:
    old = tp.Tokenizer.from_merges(OLD_MERGES, special_tokens=())
    return old, migrate.build_extended(old, NEW_MERGES)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_durable_switch_changes_no_byte_and_only_the_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=268, tied=False, shards=3, optimizer=True)
    # Small steps so the write-back requests and the chunked copy loop both run.
    monkeypatch.setattr(safetensors_stream, "WRITEBACK_BYTES", 1000)
    monkeypatch.setattr(writeback, "START_EVERY", 1500)
    calls = _count_fsyncs(monkeypatch)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "durable", old, new)
    durable_fsyncs = len(calls)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "fast", old, new, durable=False)
    assert len(calls) == durable_fsyncs  # durable=False added none
    written = _files(tmp_path / "durable")
    assert written == _files(tmp_path / "fast")
    # Every safetensors file, the index and config.json were flushed before renaming.
    flushed = sum(1 for name in written if name.endswith(".safetensors"))
    assert durable_fsyncs == flushed + 2


def _payload(tmp_path: Path, size: int) -> Path:
    src = tmp_path / "src.bin"
    src.write_bytes(np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes())
    return src


@pytest.mark.parametrize("fails", [False, True])
def test_copy_with_writeback_copies_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    src = _payload(tmp_path, 10_000)
    monkeypatch.setattr(safetensors_stream, "WRITEBACK_BYTES", 700)
    monkeypatch.setattr(writeback, "START_EVERY", 1000)
    requests: list[tuple[int, int]] = []

    def fake_sync_file_range(fd: int, offset: int, count: int, flags: int) -> int:
        assert flags == writeback.SYNC_FILE_RANGE_WRITE
        requests.append((offset, count))
        return -1 if fails else 0

    monkeypatch.setattr(writeback, "_SYNC_FILE_RANGE", fake_sync_file_range)
    dst = tmp_path / "dst.bin"
    with open(src, "rb") as a, open(dst, "wb") as b:
        wb = writeback.Writeback(b.fileno())
        copy_range(a.fileno(), b.fileno(), 123, 9_000, wb)
    assert dst.read_bytes() == src.read_bytes()[123:9_123]
    if fails:
        assert len(requests) == 1 and not wb.enabled  # a failure stops asking, copy goes on
    else:
        # Contiguous, in order, each at least START_EVERY, never past what was written.
        assert requests[0][0] == 0
        assert all(a + n == b for (a, n), (b, _) in zip(requests, requests[1:], strict=False))
        assert all(n >= 1000 for _, n in requests)
        assert sum(n for _, n in requests) <= 9_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_real_sync_file_range_is_found_and_accepted(tmp_path: Path) -> None:
    assert writeback._SYNC_FILE_RANGE is not None
    path = tmp_path / "f.bin"
    with open(path, "wb") as handle:
        handle.write(b"x" * 4096)
        handle.flush()
        wb = writeback.Writeback(handle.fileno())
        wb.started, wb.end = 0, 4096
        wb._start()
        assert wb.enabled and wb.started == 4096


def test_write_safetensors_with_writeback_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safetensors.numpy import load_file

    monkeypatch.setattr(writeback, "START_EVERY", 64)
    values = np.arange(600, dtype="<f4").reshape(20, 30)
    segs = [("bytes", values[:7].tobytes()), ("fill", lambda: values[7:].tobytes(), 13 * 120)]
    write_safetensors(tmp_path / "t.safetensors", [OutTensor(["w"], "F32", (20, 30), segs)])
    np.testing.assert_array_equal(load_file(str(tmp_path / "t.safetensors"))["w"], values)


@pytest.mark.parametrize("durable", [True, False])
def test_computed_parts_written_last_land_at_their_offsets(tmp_path: Path, durable: bool) -> None:
    """Fills are deferred to the end of the file; the bytes must not move, whether a fill
    opens a tensor, sits between copies or ends the file."""
    from safetensors.numpy import load_file

    from tokenpact.migrate.safetensors_stream import write_unsynced

    values = np.arange(1200, dtype="<f4").reshape(40, 30)
    raw = values.tobytes()
    src = tmp_path / "rows.bin"
    src.write_bytes(raw)
    order: list[str] = []

    def fill(lo: int, hi: int) -> tuple[str, object, int]:
        def produce() -> bytes:
            order.append(f"fill {lo}")
            return raw[lo * 120 : hi * 120]

        return ("fill", produce, (hi - lo) * 120)

    segs = [
        fill(0, 3),
        ("copy", src, 3 * 120, 10 * 120),
        fill(13, 15),
        ("bytes", raw[15 * 120 : 20 * 120]),
        ("copy", src, 20 * 120, 18 * 120),
        fill(38, 40),
    ]
    tail = [("fill", lambda: raw[:120], 120)]
    tensors = [
        OutTensor(["w"], "F32", (40, 30), segs),
        OutTensor(["last"], "F32", (1, 30), tail),
    ]
    tmp, size = write_unsynced(tmp_path / "t.safetensors", tensors, durable=durable)
    os.replace(tmp, tmp_path / "t.safetensors")
    loaded = load_file(str(tmp_path / "t.safetensors"))
    np.testing.assert_array_equal(loaded["w"], values)
    np.testing.assert_array_equal(loaded["last"], values[:1])
    assert size == 41 * 120 and order == ["fill 0", "fill 13", "fill 38"]


@pytest.mark.parametrize("shift", [0, 8, 1000, 4088])
def test_copies_keep_their_source_page_offset_and_load_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shift: int
) -> None:
    """The header is padded so the copied runs keep their source offset modulo the page
    size (a cheaper kernel copy); the file must still load, 8-byte aligned, bytes intact."""
    from safetensors.numpy import load_file

    from tokenpact.contract.checkpoint_reader import read_safetensors_header

    monkeypatch.setattr(safetensors_stream, "ALIGN_MIN_BYTES", 0)
    values = np.random.default_rng(1).normal(size=(64, 32)).astype("<f4")
    src = tmp_path / "src.safetensors"
    # A source whose data starts at an arbitrary 8-aligned offset (metadata of any length).
    write_safetensors(
        src,
        [OutTensor(["a"], "F32", (64, 32), [("bytes", values.tobytes())])],
        {"pad": "x" * shift},
    )
    info = read_safetensors_header(src)["a"]
    small = np.arange(6, dtype="<f4")
    tensors = [
        OutTensor(["s"], "F32", (6,), [("bytes", small.tobytes())]),  # shifts what follows
        OutTensor(["a"], "F32", (64, 32), [("copy", src, info.begin, info.end - info.begin)]),
    ]
    out = tmp_path / "out.safetensors"
    write_safetensors(out, tensors)
    copied = read_safetensors_header(out)["a"]
    assert (
        copied.begin % safetensors_stream.PAGE_ALIGN == info.begin % safetensors_stream.PAGE_ALIGN
    )
    assert (copied.begin - 24) % 8 == 0  # the data section starts 8-byte aligned
    loaded = load_file(str(out))
    np.testing.assert_array_equal(loaded["a"], values)
    np.testing.assert_array_equal(loaded["s"], small)


def test_no_padding_when_alignment_would_break_the_8_byte_data_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tokenpact.contract.checkpoint_reader import read_safetensors_header

    monkeypatch.setattr(safetensors_stream, "ALIGN_MIN_BYTES", 0)
    src = _payload(tmp_path, 4096)
    # 12 bytes before a copy from offset 0: aligning it would start the data at 4084.
    tensors = [
        OutTensor(["s"], "F32", (3,), [("bytes", bytes(12))]),
        OutTensor(["a"], "U8", (4096,), [("copy", src, 0, 4096)]),
    ]
    write_safetensors(tmp_path / "out.safetensors", tensors)
    infos = read_safetensors_header(tmp_path / "out.safetensors")
    assert infos["s"].begin % 8 == 0 and infos["s"].begin < 8 + 200
    assert (tmp_path / "out.safetensors").read_bytes()[infos["a"].begin :] == src.read_bytes()


def test_shards_written_in_parallel_equal_shards_written_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tokenpact.migrate import resize

    old, new = _toks()
    tiny_lm.build(tmp_path / "a", rows=268, tied=False, shards=3, optimizer=True)
    monkeypatch.setattr(resize, "_usable_cpus", lambda: 4)
    monkeypatch.setattr(resize, "MAX_FILE_WORKERS", 1)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "serial", old, new)
    monkeypatch.setattr(resize, "MAX_FILE_WORKERS", 4)
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "parallel", old, new)
    assert _files(tmp_path / "serial") == _files(tmp_path / "parallel")


def test_first_kernel_copy_ends_on_a_splice_boundary_of_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "copy_file_range"):
        pytest.skip("no copy_file_range here")
    src = _payload(tmp_path, 10_000)
    monkeypatch.setattr(safetensors_stream, "SPLICE_ALIGN", 1024)
    sizes: list[int] = []
    real = os.copy_file_range

    def spy(a: int, b: int, count: int, offset_src: int | None = None) -> int:
        sizes.append(count)
        return real(a, b, count, offset_src)

    monkeypatch.setattr(os, "copy_file_range", spy)
    dst = tmp_path / "dst.bin"
    with open(src, "rb") as a, open(dst, "wb") as b:
        b.write(b"h" * 100)
        b.flush()
        copy_range(a.fileno(), b.fileno(), 7, 5_000)
    assert sizes[0] == 924  # 100 + 924 = 1024: every later call starts on a boundary
    assert dst.read_bytes() == b"h" * 100 + src.read_bytes()[7:5_007]
