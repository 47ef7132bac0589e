"""``corpus.json`` is checked as a stream: the document IDs walked out of it block by
block are exactly ``json.loads``'s, in bounded memory, and a tampered record is refused
whether or not the attacker resealed the corpus hash."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenpact.contract import canonical_bytes
from tokenpact.contract.hashing import CORPUS, framed_digest
from tokenpact.data import dataset_manifest
from tokenpact.data.corpus_stream import document_ids
from tokenpact.data.dataset_manifest import check_corpus_file
from tokenpact.errors import ContractError


def _blocks(data: bytes, cuts: list[int]) -> list[bytes]:
    at = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *at], [*at, len(data)], strict=True)]


def _ids(data: bytes, cuts: list[int]) -> list[str]:
    return list(document_ids(iter(_blocks(data, cuts)), "corpus.json"))


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
_RECORDS = st.fixed_dictionaries(
    {"document_id": st.text(max_size=12)}, optional={"x": _VALUES, '\u00e9\\"': _SCALARS}
)


@settings(max_examples=80, deadline=None)
@given(
    records=st.lists(_RECORDS, max_size=8),
    others=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "documents"), _VALUES),
    indent=st.sampled_from([None, 1]),
    cuts=st.lists(st.integers(0, 600), max_size=40),
)
def test_streamed_ids_are_json_loads_ids_at_every_block_split(
    records: list[dict[str, Any]], others: dict[str, Any], indent: int | None, cuts: list[int]
) -> None:
    """Numbers, escapes, multi-byte characters and nested values cut anywhere by the
    block boundaries decode as json.loads decodes them."""
    document = {**others, "documents": records}
    text = json.dumps(document, indent=indent, ensure_ascii=indent is None)
    data = text.encode("utf-8")
    expected = [r["document_id"] for r in json.loads(text)["documents"]]
    assert _ids(data, cuts) == expected
    assert _ids(data, list(range(1, len(data)))) == expected  # one byte at a time


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"documents":{}}',
        '{"documents":[{"document_id":1}]}',
        '{"documents":[{"id":"a"}]}',
        '{"documents":["a"]}',
        '{"documents":[{"document_id":"a"}',
        '{"documents":[{"document_id":"a"},]}',
        '{"documents":[{"document_id":"a"}]} x',
        '{"documents":[],"documents":[{"document_id":"a"}]}',
        '{"version":1}',
        '{"version":1.}',
        '{"documents":[{"document_id":"a\\x"}]}',
        '{"a":' + "[" * 100 + "]" * 100 + ',"documents":[]}',
        '{"a":' + "[" * 64 + "]" * 64 + ',"documents":[]}',
        '{"documents":[' + '{"document_id":"a","x":' * 5000 + "1" + "}" * 5000 + "]}",
        '{"documents":[{"document_id":"\xff"}]}',
    ],
)
def test_what_is_not_a_corpus_manifest_is_a_contract_error(text: str) -> None:
    data = text.encode("latin-1") if "\xff" in text else text.encode("utf-8")
    for cuts in ([], list(range(1, len(data), 3))):
        with pytest.raises(ContractError, match="corpus.json is not a corpus manifest"):
            _ids(data, cuts)


def _manifest(n: int) -> tuple[dict[str, Any], list[str]]:
    """A corpus manifest of ``n`` documents in shuffled order, with cleaning records
    before the documents (as canonical key order puts them), and its sorted IDs."""
    rng = random.Random(n)
    ids = [f"doc-{i:09d}-{rng.getrandbits(32):08x}" for i in range(n)]
    listed = ids[:]
    rng.shuffle(listed)
    documents = [
        {
            "clean_sha256": "sha256:" + f"{i:064x}",
            "document_id": d,
            "license_class": "permissive",
            "raw_sha256": "sha256:" + f"{i + 1:064x}",
            "source_id": "src-\u00e9t\u00e9",
            "split": "train",
        }
        for i, d in enumerate(listed)
    ]
    dropped = [{"document_id": f"gone-{i}", "reason": "short"} for i in range(n // 10)]
    manifest = {
        "cleaning": {"dropped": dropped, "steps": [{"name": "quality", "seed": -1234567890123}]},
        "documents": documents,
        "fit_digest": None,
        "kind": "tokenpact.corpus",
        "revision": "r1",
        "version": 1,
    }
    return manifest, sorted(ids)


def _write(root: Path, manifest: dict[str, Any]) -> str:
    """``corpus.json`` as encode_dataset writes it; returns its corpus hash (what an
    attacker who reseals the dataset manifest would record)."""
    body = canonical_bytes(manifest)
    (root / "corpus.json").write_bytes(body + b"\n")
    return "sha256:" + framed_digest(CORPUS, body).hex()


N_LARGE = 12_000  # about 3.3 MB of corpus.json: several 1 MiB blocks


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[str]]:
    manifest, ids = _manifest(N_LARGE)
    return tmp_path_factory.mktemp("large-corpus"), manifest, ids


def test_a_large_corpus_is_checked_in_bounded_memory(
    large: tuple[Path, dict[str, Any], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, manifest, ids = large
    good = _write(root, manifest)
    size = (root / "corpus.json").stat().st_size
    assert size > 3 << 20
    check_corpus_file(root, good, ids)  # 1 MiB blocks
    monkeypatch.setattr(dataset_manifest, "_CORPUS_BLOCK", 1 << 16)
    tracemalloc.start()
    try:
        check_corpus_file(root, good, ids)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A few blocks of text and their records, and a byte per document: not the file
    # (json.loads of it holds the text and every record, several times its size).
    assert peak < size // 4


def test_a_tampered_record_of_a_large_corpus_is_refused(
    large: tuple[Path, dict[str, Any], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, manifest, ids = large
    good = _write(root, manifest)
    documents = manifest["documents"]
    middle = len(documents) // 2
    original = documents[middle]
    try:
        # One record's ID changed: refused by the hash, and by the IDs once resealed.
        documents[middle] = {**original, "document_id": original["document_id"] + "x"}
        resealed = _write(root, manifest)
        with pytest.raises(ContractError, match="is not the corpus manifest"):
            check_corpus_file(root, good, ids)
        with pytest.raises(ContractError, match="that the shards do not hold"):
            check_corpus_file(root, resealed, ids)
        # A record listed twice (another dropped) and a record removed, resealed.
        documents[middle] = documents[middle + 1]
        with pytest.raises(ContractError, match="twice"):
            check_corpus_file(root, _write(root, manifest), ids)
        del documents[middle]
        with pytest.raises(ContractError, match=f"lists {N_LARGE - 1} documents"):
            check_corpus_file(root, _write(root, manifest), ids)
        documents.insert(middle, original)
        # Small blocks: the same answers with every record cut across blocks.
        monkeypatch.setattr(dataset_manifest, "_CORPUS_BLOCK", 4093)
        check_corpus_file(root, _write(root, manifest), ids)
        documents[-1] = {**documents[-1], "document_id": "doc-"}
        with pytest.raises(ContractError, match="'doc-' that the shards do not hold"):
            check_corpus_file(root, _write(root, manifest), ids)
    finally:
        documents[:] = _manifest(N_LARGE)[0]["documents"]


def test_a_corpus_file_that_is_not_json_is_refused_after_its_hash(tmp_path: Path) -> None:
    """Malformed text that the recorded hash names (a resealed attack) is refused as
    malformed; the same text under another hash is refused by the hash."""
    body = b'{"documents":[{"document_id":"a"},{"document_id":'
    (tmp_path / "corpus.json").write_bytes(body + b"\n")
    bound = "sha256:" + framed_digest(CORPUS, body).hex()
    with pytest.raises(ContractError, match="not a corpus manifest we wrote"):
        check_corpus_file(tmp_path, bound, ["a"])
    with pytest.raises(ContractError, match="is not the corpus manifest"):
        check_corpus_file(tmp_path, "sha256:" + "ab" * 32, ["a"])
    (tmp_path / "corpus.json").write_bytes(body)  # no newline: not as written
    with pytest.raises(ContractError, match="is not the corpus manifest"):
        check_corpus_file(tmp_path, bound, ["a"])


def test_nesting_is_refused_where_json_loads_would_refuse_it() -> None:
    """The manifest may nest 64 levels (the object and 63 inside it), as read_json
    allows, whether the deep value fits one block or is walked across many."""
    for cuts in ([], list(range(1, 400))):
        assert _ids(('{"a":' + "[" * 63 + "]" * 63 + ',"documents":[]}').encode(), cuts) == []
