"""The built-in corpus harvested from the interpreter, the digest, and file inputs."""

from __future__ import annotations

import gettext
import gzip
import hashlib
import inspect
import json
import struct
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

import tokenpact.corpus as corpus
from tokenpact.corpus import (
    SLICES,
    Document,
    TextFiles,
    builtin_corpus,
    corpus_digest,
    iter_jsonl_texts,
)
from tokenpact.errors import ConfigError, InvalidInputError

HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"


def write_mo(path: Path, messages: dict[str, str], header: str = HEADER) -> None:
    """Write a GNU ``.mo`` catalog (little-endian, no hash table)."""
    entries = sorted({"": header, **messages}.items())
    ids = [k.encode() for k, _ in entries]
    strs = [v.encode() for _, v in entries]
    n = len(entries)
    table_start = 7 * 4
    data_start = table_start + 2 * n * 8
    blobs, offsets = b"", []
    for s in ids + strs:
        offsets.append((len(s), data_start + len(blobs)))
        blobs += s + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, n, table_start, table_start + n * 8, 0, 0)
    out += b"".join(struct.pack("<2I", *o) for o in offsets)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out + blobs)


@pytest.fixture(scope="module")
def full() -> list[Document]:
    return builtin_corpus()


def test_slices_and_determinism(full: list[Document]) -> None:
    counts = Counter(doc.slice for doc in full)
    assert set(counts) <= set(SLICES)
    # The stdlib is always there; gettext catalogs depend on the machine.
    assert counts["code-py"] > 100
    assert counts["prose-en"] > 100
    assert [doc.slice for doc in full] == sorted((doc.slice for doc in full), key=SLICES.index), (
        "grouped by slice"
    )
    for name in SLICES:
        sources = [doc.source for doc in full if doc.slice == name]
        assert sources == sorted(sources)
    assert builtin_corpus(max_bytes=300_000) == builtin_corpus(max_bytes=300_000)


def test_documents_are_frozen_and_valid_utf8(full: list[Document]) -> None:
    with pytest.raises(AttributeError):
        full[0].text = "x"  # type: ignore[misc]
    for doc in full:
        assert doc.text
        doc.text.encode("utf-8")  # no lone surrogates


def test_code_slice_excludes_tests_and_site_packages(full: list[Document]) -> None:
    code = {doc.source: doc.text for doc in full if doc.slice == "code-py"}
    assert "json/decoder.py" in code
    root = Path(sysconfig.get_paths()["stdlib"])
    assert code["json/decoder.py"] == (root / "json" / "decoder.py").read_text("utf-8")
    for source in code:
        parts = source.split("/")
        assert not {"test", "tests", "site-packages", "dist-packages"} & set(parts), source
        assert not source.startswith("idlelib/idle_test/")


def test_prose_slice_holds_cleaned_docstrings(full: list[Document]) -> None:
    import json.decoder

    prose = {doc.source: doc.text for doc in full if doc.slice == "prose-en"}
    text = prose["json/decoder.py"]
    assert text.startswith(inspect.cleandoc(json.decoder.__doc__ or ""))
    assert inspect.cleandoc(json.decoder.JSONDecoder.__doc__ or "") in text
    assert inspect.cleandoc(json.decoder.JSONDecoder.raw_decode.__doc__ or "") in text
    # Source order: the class docstring comes before its method's.
    assert text.index("Simple JSON") < text.index("Decode a JSON document from ``s``")


def test_max_bytes_caps_round_robin(full: list[Document]) -> None:
    cap = 250_000
    docs = builtin_corpus(max_bytes=cap)
    assert sum(len(d.text.encode()) for d in docs) <= cap
    assert {"code-py", "prose-en"} <= {d.slice for d in docs}
    # Each slice contributes a prefix of its full, sorted document list.
    for name in SLICES:
        part = [d for d in docs if d.slice == name]
        assert part == [d for d in full if d.slice == name][: len(part)]
    assert builtin_corpus(max_bytes=0) == []
    with pytest.raises(ConfigError):
        builtin_corpus(max_bytes=-1)


def test_gettext_slice_reads_catalogs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_mo(
        tmp_path / "de" / "LC_MESSAGES" / "demo.mo",
        {"Hello": "Hallo", "file\0files": "Datei\0Dateien", "Quit": "Beenden"},
    )
    write_mo(tmp_path / "ja" / "LC_MESSAGES" / "demo.mo", {"Hello": "こんにちは"})
    (tmp_path / "fr" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "fr" / "LC_MESSAGES" / "broken.mo").write_bytes(b"not a catalog at all")
    (tmp_path / "xx" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "xx" / "LC_MESSAGES" / "demo.mo").symlink_to(tmp_path / "ja/LC_MESSAGES/demo.mo")
    monkeypatch.setattr(corpus, "_LOCALE_DIRS", (str(tmp_path),))
    monkeypatch.setattr(gettext, "_default_localedir", str(tmp_path / "missing"))

    docs = list(corpus._iter_gettext())
    assert [(d.slice, Path(d.source).relative_to(tmp_path).as_posix()) for d in docs] == [
        ("gettext", "de/LC_MESSAGES/demo.mo"),
        ("gettext", "ja/LC_MESSAGES/demo.mo"),  # its symlinked twin under xx/ is skipped
    ]
    # Messages in msgid order, plural forms expanded, the header left out.
    assert docs[0].text == "Hallo\nBeenden\nDatei\nDateien"
    assert docs[1].text == "こんにちは"


def test_gettext_slice_may_be_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "_LOCALE_DIRS", (str(tmp_path / "none"),))
    monkeypatch.setattr(gettext, "_default_localedir", str(tmp_path / "none"))
    docs = builtin_corpus(max_bytes=100_000)
    assert docs and all(d.slice != "gettext" for d in docs)


def _sha(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def test_corpus_digest_definition() -> None:
    texts = ["abc", "déjà", "abc", "日本"]
    expected = sum(_sha(t) for t in texts) % 2**256
    result = corpus_digest(texts)
    assert result == {
        "documents": 4,
        "bytes": 3 + 6 + 3 + 6,
        "digest": "sha256-multiset:" + format(expected, "064x"),
    }
    assert corpus_digest(reversed(texts)) == result
    assert corpus_digest([Document("s", "x", t) for t in texts]) == result
    # A multiset: duplicates count.
    assert corpus_digest(["abc", "déjà", "日本"])["digest"] != result["digest"]
    assert corpus_digest([]) == {
        "documents": 0,
        "bytes": 0,
        "digest": "sha256-multiset:" + "0" * 64,
    }


def test_corpus_digest_known_value() -> None:
    # Pinned so the Rust trainer's implementation can copy the vector.
    single = corpus_digest(["hello"])["digest"]
    assert single == "sha256-multiset:" + hashlib.sha256(b"hello").hexdigest()
    wrap = corpus_digest(["a", "b"])["digest"]
    assert wrap == "sha256-multiset:" + format((_sha("a") + _sha("b")) % 2**256, "064x")


# --------------------------------------------------------------------------- TextFiles


def test_text_files_plain_and_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "a.txt"
    plain.write_bytes(b"first line\nsecond\r\n\nlast without newline")
    packed = tmp_path / "b.txt.gz"
    packed.write_bytes(gzip.compress("über\n".encode()))
    sneaky = tmp_path / "c.data"  # gzip recognised by magic bytes, not the name
    sneaky.write_bytes(gzip.compress(b"x\ny\n"))
    files = TextFiles([plain, str(packed), sneaky])
    assert files.paths == (str(plain), str(packed), str(sneaky))
    assert files.formats == ("text", "text", "text")
    assert files.compressed == (False, True, True)
    assert list(files) == [
        "first line\n",
        "second\r\n",
        "\n",
        "last without newline",
        "über\n",
        "x\n",
        "y\n",
    ]
    assert list(files) == list(files)  # re-iterable


def test_text_files_jsonl(tmp_path: Path) -> None:
    rows = [{"text": "hello\n", "id": 1}, {"text": "wörld", "body": "ignored"}]
    data = "".join(json.dumps(r) + "\n" for r in rows) + "\n"
    (tmp_path / "a.jsonl").write_text(data, encoding="utf-8")
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(data.encode()))
    (tmp_path / "c.json.gz").write_bytes(gzip.compress(data.encode()))
    files = TextFiles([tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", tmp_path / "c.json.gz"])
    assert files.formats == ("jsonl", "jsonl", "jsonl")
    assert list(files) == ["hello\n", "wörld"] * 3
    body = TextFiles(tmp_path / "a.jsonl", text_field="body", format="jsonl")
    with pytest.raises(ConfigError, match=r"a\.jsonl:1: no field 'body'.*fields here: text, id"):
        list(body)
    assert list(iter_jsonl_texts(tmp_path / "b.jsonl.gz", "text")) == ["hello\n", "wörld"]


def test_text_files_explicit_format_and_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rows.jsonl").write_text('{"text": "a"}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    files = TextFiles("rows.jsonl", format="text")
    assert files.paths == (str(tmp_path / "rows.jsonl"),)
    assert list(files) == ['{"text": "a"}\n']
    assert TextFiles("rows.jsonl") == TextFiles(str(tmp_path / "rows.jsonl"))


@pytest.mark.parametrize(
    ("line", "error", "message"),
    [
        ('{"text": "a"', ConfigError, r":2: invalid JSON"),
        ('["text"]', ConfigError, r":2: expected a JSON object, got list"),
        ('{"body": "a"}', ConfigError, r":2: no field 'text'; pass text_field="),
        ('{"text": 5}', ConfigError, r":2: field 'text' is int, not a string"),
        ('{"text": "\\ud800"}', InvalidInputError, r":2: field 'text' contains a lone surrogate"),
    ],
)
def test_jsonl_errors_name_file_and_line(
    tmp_path: Path, line: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(error, match=r"bad\.jsonl" + message):
        list(TextFiles(path))


def test_invalid_utf8_names_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(gzip.compress(b"fine\nab\xffcd\n"))
    with pytest.raises(InvalidInputError, match=r"bad\.txt\.gz: invalid UTF-8 at byte offset 7"):
        list(TextFiles(path))


def test_text_files_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        TextFiles(tmp_path / "missing.jsonl")
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown format"):
        TextFiles(tmp_path / "a.txt", format="csv")
    with pytest.raises(ConfigError, match="at least one path"):
        TextFiles([])
    with pytest.raises(ConfigError, match="text_field"):
        TextFiles(tmp_path / "a.txt", text_field="")
    files = TextFiles(tmp_path / "a.txt")
    with pytest.raises(AttributeError):
        files.text_field = "body"  # type: ignore[misc]
