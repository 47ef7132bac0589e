"""Differential test of our safetensors header reader against the ``safetensors`` library
(issue 43: 30 malformed headers the library refuses went through ``migrate apply``).

For every header below, ``read_safetensors`` refuses with an ``ArtifactError`` exactly when
``safetensors.deserialize`` refuses, and when both accept, every tensor's bytes and
numpy array are identical. ``STRICTER`` lists the cases where we refuse on purpose what
the library accepts (with the reason).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")
from safetensors.numpy import load as np_load  # noqa: E402

from tokenpact import migrate  # noqa: E402
from tokenpact.contract.safetensors_header import read_safetensors  # noqa: E402
from tokenpact.errors import ArtifactError  # noqa: E402

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.arange(5, dtype=np.uint8)
C = np.array([1, -2, 3], dtype=np.int16)


def _entries() -> dict[str, Any]:
    return {
        "__metadata__": {"format": "np"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "U8", "shape": [5], "data_offsets": [24, 29]},
        "c": {"dtype": "I16", "shape": [3], "data_offsets": [29, 35]},
    }


DATA = A.tobytes() + B.tobytes() + C.tobytes()


def _blob(header: Any = None, data: bytes = DATA, *, raw: bytes | None = None) -> bytes:
    text = raw if raw is not None else json.dumps(header if header is not None else _entries())
    body = text if isinstance(text, bytes) else text.encode("utf-8")
    return struct.pack("<Q", len(body)) + body + data


def _edit(change: Callable[[dict[str, Any]], None], data: bytes = DATA) -> bytes:
    header = _entries()
    change(header)
    return _blob(header, data)


def _set(name: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(header: dict[str, Any]) -> None:
        header[name][key] = value

    return change


def _raw_entries(text: str, data: bytes = DATA) -> bytes:
    """A header written as text (duplicate keys, NaN, escapes json.dumps cannot make)."""
    return _blob(raw=text.encode("utf-8"), data=data)


_B = '"b":{"dtype":"U8","shape":[5],"data_offsets":[24,29]}'
_C = '"c":{"dtype":"I16","shape":[3],"data_offsets":[29,35]}'
_A = '"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}'

CASES: dict[str, bytes] = {
    "valid": _blob(),
    "overlapping ranges": _edit(_set("b", "data_offsets", [20, 25]), DATA[:25] + DATA[29:]),
    "shared storage": _edit(
        lambda h: h.update(lm={"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]})
    ),
    "gap between ranges": _edit(_set("c", "data_offsets", [30, 36]), DATA + b"\0"),
    "first range not at zero": _edit(
        lambda h: [
            h[k]["data_offsets"].__setitem__(slice(None), [o + 1 for o in h[k]["data_offsets"]])
            for k in "abc"
        ],
        b"\0" + DATA,
    ),
    "trailing bytes": _blob(data=DATA + b"\0\0"),
    "truncated data": _blob(data=DATA[:-1]),
    "duplicated name, different entries": _raw_entries(
        "{" + _A + "," + _B + "," + _C + ',"b":{"dtype":"U8","shape":[6],"data_offsets":[24,30]}}'
    ),
    "duplicated name, same entry": _raw_entries("{" + _A + "," + _B + "," + _C + "," + _B + "}"),
    "duplicated __metadata__": _raw_entries(
        '{"__metadata__":{},"__metadata__":{},' + _A + "," + _B + "," + _C + "}"
    ),
    "duplicated field in an entry": _raw_entries(
        '{"a":{"dtype":"F32","dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
        + _B
        + ","
        + _C
        + "}"
    ),
    "unknown dtype": _edit(_set("b", "dtype", "F33")),
    "lower-case dtype": _edit(_set("a", "dtype", "f32")),
    "dtype not a string": _edit(_set("a", "dtype", 32)),
    "__metadata__ a string": _edit(lambda h: h.update(__metadata__="np")),
    "__metadata__ an integer value": _edit(lambda h: h.update(__metadata__={"format": 1})),
    "__metadata__ a nested object": _edit(lambda h: h.update(__metadata__={"f": {"x": "y"}})),
    "__metadata__ a list": _edit(lambda h: h.update(__metadata__=["np"])),
    "__metadata__ null": _edit(lambda h: h.update(__metadata__=None)),
    "shape larger than the range": _edit(_set("a", "shape", [2, 4])),
    "shape smaller than the range": _edit(_set("a", "shape", [3, 1])),
    "negative dimension": _edit(_set("b", "shape", [-5])),
    "float dimension": _edit(_set("b", "shape", [5.0])),
    "boolean dimension": _edit(_set("b", "shape", [True])),
    "dimension beyond 64 bits": _edit(_set("b", "shape", [2**64 + 5])),
    "size overflowing 64 bits": _edit(_set("b", "shape", [2**40, 2**40, 0])),
    "three offsets": _edit(_set("b", "data_offsets", [24, 29, 29])),
    "reversed offsets": _edit(_set("b", "data_offsets", [29, 24])),
    "string offsets": _edit(_set("b", "data_offsets", ["24", "29"])),
    "missing data_offsets": _edit(lambda h: h["b"].pop("data_offsets")),
    "missing shape": _edit(lambda h: h["b"].pop("shape")),
    "missing dtype": _edit(lambda h: h["b"].pop("dtype")),
    "entry not an object": _edit(lambda h: h.update(b=[24, 29])),
    "header a list": _blob(raw=b"[]", data=b""),
    "header length beyond the file": struct.pack("<Q", 10_000) + b"{}",
    "header length beyond the limit": struct.pack("<Q", 100_000_001) + b"{}",
    "header length at 2**64-1": struct.pack("<Q", 2**64 - 1) + b"{}",
    "shorter than 8 bytes": b"\x02\0\0",
    "header not UTF-8": _blob(raw=b'{"\xff":1}', data=b""),
    "byte-order mark": _blob(raw=b"\xef\xbb\xbf{}", data=b""),
    "NaN in an extra field": _raw_entries(
        '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24],"x":NaN},' + _B + "," + _C + "}"
    ),
    "lone surrogate escape in a name": _raw_entries(
        '{"\\ud800":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},' + _B + "," + _C + "}"
    ),
    "control character in a name": _raw_entries(
        '{"a\x01":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},' + _B + "," + _C + "}"
    ),
    "deeply nested extra field": _raw_entries(
        '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24],"x":'
        + "[" * 300
        + "]" * 300
        + "},"
        + _B
        + ","
        + _C
        + "}"
    ),
    "shallow extra field": _edit(_set("a", "note", [[1, 2], {"k": "v"}])),
    "entries out of offset order": _raw_entries("{" + _C + "," + _A + "," + _B + "}"),
    "zero-sized twins": _blob(
        {
            "z1": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},
            "z2": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]},
        },
        b"",
    ),
    "empty header": _blob({}, b""),
    "trailing characters after the JSON": _blob(raw=b"{} x", data=b""),
    "whitespace around the JSON": _blob(raw=b" \t{}\n  ", data=b""),
    "NUL padding after the JSON": _blob(raw=b"{}\0\0", data=b""),
    "sub-byte dtype off a byte boundary": _blob(
        {"f": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0"
    ),
    "sub-byte dtype on a byte boundary": _blob(
        {"f": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}}, b"\x12\x34"
    ),
    "bf16 tensor": _blob(
        {"h": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, b"\x80?\0@"
    ),
}
# Refused by us, accepted by the library: a name written twice means two tensors in the
# file, and the library silently keeps the last one.
STRICTER = {"duplicated name, same entry"}
NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "U64": "<u8", "I32": "<i4",
         "U32": "<u4", "I16": "<i2", "U16": "<u2", "I8": "i1", "U8": "u1", "BOOL": "?"}  # fmt: skip


def test_the_table_covers_the_issue_kinds() -> None:
    refused = [name for name, blob in CASES.items() if _library(blob) is None]
    assert len(refused) >= 30, refused


def _library(blob: bytes) -> dict[str, tuple[str, list[int], bytes]] | None:
    try:
        return {
            name: (v["dtype"], v["shape"], bytes(v["data"]))
            for name, v in safetensors.deserialize(blob)
        }
    except Exception:  # noqa: BLE001 - any refusal of the library counts
        return None


@pytest.mark.parametrize("case", sorted(CASES))
def test_reader_refuses_exactly_what_safetensors_refuses(tmp_path: Path, case: str) -> None:
    blob = CASES[case]
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    theirs = _library(blob)
    if theirs is None or case in STRICTER:
        with pytest.raises(ArtifactError, match="not a valid safetensors file"):
            read_safetensors(path)
        if case in STRICTER:
            assert theirs is not None, (
                f"{case} is refused by the library now: drop it from STRICTER"
            )
        return
    ours = read_safetensors(path)
    assert set(ours.tensors) == set(theirs)
    for name, info in ours.tensors.items():
        dtype, shape, data = theirs[name]
        assert (info.dtype, list(info.shape)) == (dtype, shape)
        assert blob[info.begin : info.end] == data
    numpy_ok = all(t[0] in NUMPY for t in theirs.values())
    if numpy_ok:
        arrays = np_load(blob)
        for name, info in ours.tensors.items():
            mine = np.frombuffer(blob[info.begin : info.end], NUMPY[info.dtype]).reshape(info.shape)
            np.testing.assert_array_equal(mine, arrays[name])
            assert mine.dtype == arrays[name].dtype


def test_metadata_is_read_with_the_header(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(CASES["valid"])
    assert read_safetensors(path).metadata == {"format": "np"}


def _checkpoint(folder: Path, blob: bytes) -> Path:
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(blob)
    (folder / "config.json").write_text('{"vocab_size": 268}')
    return folder


def test_migrate_refuses_an_overlapping_embedding(tmp_path: Path) -> None:
    """Issue 43: an embedding whose offsets overlap another tensor was read from the wrong
    bytes and written out as a clean, loadable file."""
    import tokenpact as tp

    old = tp.Tokenizer.from_merges([(c, c) for c in b"abcdfghijklm"])
    new = migrate.build_extended(old, [(101, 114), (114, 101)])
    emb = np.ones((268, 4), dtype=np.float32)
    bias = np.zeros(4, dtype=np.float32)
    header = {
        "model.embed_tokens.weight": {
            "dtype": "F32",
            "shape": [268, 4],
            "data_offsets": [0, emb.nbytes],
        },
        "x.bias": {"dtype": "F32", "shape": [4], "data_offsets": [emb.nbytes - 8, emb.nbytes + 8]},
    }
    src = _checkpoint(tmp_path / "a", _blob(header, emb.tobytes() + bias.tobytes()[8:]))
    assert _library((src / "model.safetensors").read_bytes()) is None
    with pytest.raises(ArtifactError, match="without gap or overlap"):
        migrate.resize_checkpoint(src, tmp_path / "b", old, new)
    assert not (tmp_path / "b").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a"]


def test_shard_index_cannot_point_outside_its_directory(tmp_path: Path) -> None:
    from tokenpact.contract.checkpoint_reader import load_tensor_index

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (tmp_path / "outside.safetensors").write_bytes(CASES["valid"])
    index = {"weight_map": {"a": "../outside.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ArtifactError, match="beside the index"):
        load_tensor_index(folder)
    for bad in ('{"weight_map": [1]}', '{"weight_map": {"a": 5}}', "[" * 5000, "{,}"):
        (folder / "model.safetensors.index.json").write_text(bad)
        with pytest.raises(ArtifactError, match="safetensors index"):
            load_tensor_index(folder)


def test_shard_index_must_agree_with_the_shards(tmp_path: Path) -> None:
    from tokenpact.contract.checkpoint_reader import load_tensor_index

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "s1.safetensors").write_bytes(CASES["valid"])
    (folder / "s2.safetensors").write_bytes(CASES["valid"])
    index = {"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ArtifactError, match="two shards"):
        load_tensor_index(folder)
    (folder / "s2.safetensors").unlink()
    (folder / "s2.safetensors").write_bytes(_blob({}, b""))
    with pytest.raises(ArtifactError, match="does not hold it"):
        load_tensor_index(folder)


def test_a_later_resize_removes_temp_directories_of_dead_runs(tmp_path: Path) -> None:
    """Issue 43: kill -9 during ``migrate apply`` left ``.DST.tmp-PID`` directories that
    no later run removed. A dead PID's temp is removed; a live process's is kept."""
    import subprocess
    import sys

    import tiny_lm
    import tokenpact as tp

    old = tp.Tokenizer.from_merges([(c, c) for c in b"abcdfghijklm"])
    new = migrate.build_extended(old, [(101, 114), (114, 101)])
    tiny_lm.build(tmp_path / "a", rows=268)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f".b.tmp-{int(gone.stdout)}"
    dead.mkdir()
    (dead / "model.safetensors").write_bytes(b"partial")
    live = tmp_path / f".b.tmp-{os.getppid()}"
    live.mkdir()
    other = tmp_path / ".c.tmp-1234567"
    other.mkdir()
    migrate.resize_checkpoint(tmp_path / "a", tmp_path / "b", old, new)
    assert not dead.exists() and live.exists() and other.exists()
    assert (tmp_path / "b" / "model.safetensors").is_file()
