"""Audit corpus readers: JSONL(.gz) and text, slices, typed errors that name the fix."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tokenpact.audit.corpus import MISSING_SLICE, AuditCorpus, load_corpus
from tokenpact.audit.premium import load_parallel
from tokenpact.errors import ConfigError, InvalidInputError


def test_jsonl_gz_with_slices(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "a", "lang": "en"}) + "\n\n")
        handle.write(json.dumps({"text": "b"}) + "\n")
    corpus = load_corpus(path)
    assert corpus.texts == ["a", "b"]
    names, codes = corpus.slice_codes("lang")
    assert names == sorted(["en", MISSING_SLICE])
    assert [names[c] for c in codes] == ["en", MISSING_SLICE]
    assert load_corpus(path, limit=1).texts == ["a"]


def test_text_file_is_one_record_per_line(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("one\ntwo\n", encoding="utf-8")
    assert load_corpus(path).texts == ["one", "two"]


@pytest.mark.parametrize(
    ("content", "error", "match"),
    [
        ('{"text": "a"}\nnot json\n', InvalidInputError, ":2: not valid JSON"),
        ('["a"]\n', InvalidInputError, "JSON object"),
        ('{"body": "a"}\n', InvalidInputError, "--text-field"),
    ],
)
def test_bad_records_name_the_fix(tmp_path: Path, content: str, error: type, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=match):
        load_corpus(path)


def test_missing_file_and_bad_bytes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_corpus(tmp_path / "nope.jsonl")
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(InvalidInputError, match="UTF-8"):
        load_corpus(path)


def test_field_length_mismatch_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="one value per text"):
        AuditCorpus(["a", "b"], {"lang": ["en"]})


def test_parallel_reader_keeps_items_with_the_reference(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    rows = [{"id": 1, "domain": "x", "en": "Hi", "de": "Hallo"}, {"de": "nur deutsch"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    corpus = load_parallel(path)
    assert corpus.items == [{"en": "Hi", "de": "Hallo"}]
    assert corpus.languages() == ["de"]


def test_parallel_reader_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('["en", "de"]\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match="JSON object"):
        load_parallel(path)
    path.write_bytes(b'{"en": "caf\xe9"}\n')
    with pytest.raises(InvalidInputError, match="UTF-8"):
        load_parallel(path)
