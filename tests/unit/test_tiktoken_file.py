"""The strict ``*.tiktoken`` reader and the writer, checked against tiktoken's own loader."""

from __future__ import annotations

import base64
import hashlib
import random
from pathlib import Path

import pytest

from tokenpact.errors import ArtifactError, ConfigError
from tokenpact.formats.tiktoken_file import read_tiktoken, write_tiktoken


def _ranks(extra: int = 300) -> list[bytes]:
    """256 single bytes plus deterministic multi-byte tokens (UTF-8 and raw)."""
    ranks = [bytes([b]) for b in range(256)]
    rng = random.Random(7)
    seen = set(ranks)
    while len(ranks) < 256 + extra:
        token = bytes(rng.randrange(256) for _ in range(rng.randint(2, 12)))
        if token not in seen:
            seen.add(token)
            ranks.append(token)
    ranks.append(" déjà vu 日本語".encode())
    return ranks


def _line(token: bytes, rank: int) -> bytes:
    return base64.b64encode(token) + b" " + str(rank).encode() + b"\n"


def _tiktoken_load(path: Path) -> dict[bytes, int]:
    load = pytest.importorskip("tiktoken.load")
    # tiktoken caches even local files by *path*; the hash makes it re-read changed files.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return load.load_tiktoken_bpe(str(path), expected_hash=digest)


def test_round_trip(tmp_path: Path) -> None:
    ranks = _ranks()
    path = tmp_path / "x.tiktoken"
    write_tiktoken(path, ranks)
    assert read_tiktoken(path) == ranks
    assert path.read_bytes() == b"".join(_line(t, r) for r, t in enumerate(ranks))


def test_tiktoken_reads_what_we_write(tmp_path: Path) -> None:
    ranks = _ranks()
    path = tmp_path / "x.tiktoken"
    write_tiktoken(path, ranks)
    assert _tiktoken_load(path) == {token: rank for rank, token in enumerate(ranks)}


def test_we_read_what_tiktoken_dump_writes(tmp_path: Path) -> None:
    ranks = _ranks(50)
    # tiktoken's dump_tiktoken_bpe needs blobfile; this is its exact byte format.
    path = tmp_path / "dumped.tiktoken"
    path.write_bytes(b"".join(_line(t, r) for r, t in enumerate(ranks)))
    assert read_tiktoken(path) == ranks
    assert _tiktoken_load(path) == {token: rank for rank, token in enumerate(ranks)}


def test_any_line_order_crlf_and_trailing_blank_lines(tmp_path: Path) -> None:
    ranks = _ranks(40)
    lines = [_line(t, r).replace(b"\n", b"\r\n") for r, t in enumerate(ranks)]
    random.Random(3).shuffle(lines)
    path = tmp_path / "shuffled.tiktoken"
    path.write_bytes(b"".join(lines) + b"\n\n  \n")
    assert read_tiktoken(path) == ranks


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.tiktoken"
    write_tiktoken(path, _ranks(5))
    write_tiktoken(path, _ranks(6))
    assert read_tiktoken(path) == _ranks(6)
    assert [p.name for p in path.parent.iterdir()] == ["x.tiktoken"]


def _damaged(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"".join(lines))
    return path


GOOD = [_line(b"a", 0), _line(b"b", 1), _line(b"ab", 2)]


@pytest.mark.parametrize(
    ("lines", "where", "what"),
    [
        ([GOOD[0], b"YQ==\n", GOOD[2]], ":2:", "expected '<base64 token> <rank>'"),
        ([GOOD[0], b"YQ== 1 extra\n", GOOD[2]], ":2:", "expected '<base64 token> <rank>'"),
        ([GOOD[0], b"\n", GOOD[1], GOOD[2]], ":2:", "expected '<base64 token> <rank>'"),
        ([GOOD[0], b"@@@@ 1\n", GOOD[2]], ":2:", "is not base64"),
        ([GOOD[0], b"YQ 1\n", GOOD[2]], ":2:", "is not base64"),
        ([GOOD[0], b"= 1\n", GOOD[2]], ":2:", "is not base64"),
        ([GOOD[0], b"Yg== x1\n", GOOD[2]], ":2:", "is not a non-negative integer"),
        ([GOOD[0], b"Yg== -1\n", GOOD[2]], ":2:", "is not a non-negative integer"),
        ([GOOD[0], GOOD[1], _line(b"c", 1)], ":3:", "rank 1 was already given at line 2"),
        ([GOOD[0], GOOD[1], _line(b"a", 2)], ":3:", "token b'a' was already given at line 1"),
        ([GOOD[0], GOOD[1], _line(b"ab", 3)], "rank 2 is missing", "line 3"),
        ([GOOD[1], GOOD[2]], "rank 0 is missing", "0..1"),
        ([], "has no tokens", ""),
        ([b"\n\n"], "has no tokens", ""),
    ],
)
def test_damaged_files_name_file_line_and_fix(
    tmp_path: Path, lines: list[bytes], where: str, what: str
) -> None:
    path = _damaged(tmp_path, lines)
    with pytest.raises(ArtifactError) as info:
        read_tiktoken(path)
    message = str(info.value)
    assert str(path) in message
    assert where in message
    assert what in message
    assert "export_tiktoken" in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="not found"):
        read_tiktoken(tmp_path / "nope.tiktoken")


def test_artifact_error_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        read_tiktoken(_damaged(tmp_path, [b"junk\n"]))


@pytest.mark.parametrize(
    ("ranks", "what"),
    [
        ([b"a", b"b", b"a"], "already has rank 0"),
        ([b"a", b""], "non-empty bytes"),
        ([b"a", "b"], "non-empty bytes"),
        ([], "without tokens"),
    ],
)
def test_write_rejects_invalid_ranks(tmp_path: Path, ranks: list[bytes], what: str) -> None:
    path = tmp_path / "x.tiktoken"
    with pytest.raises(ConfigError, match=what):
        write_tiktoken(path, ranks)
    assert not path.exists()
