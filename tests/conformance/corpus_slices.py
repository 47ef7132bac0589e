"""Held-out comparisons on the shared corpora (../shared/corpus), per language and slice.

``bench_split`` is a shuffled slice of ``bench-mixed.jsonl.gz`` (documents shuffled with
a fixed seed, then cut into non-empty lines; 85% train / 15% held out, held-out lines
grouped by the record's ``slice``). ``multilingual_split`` builds a mix from
``parallel-gettext.jsonl.gz``: up to ``per_language`` bytes of messages in each of
``LANGUAGES``, a record going wholly to training or to the held-out set (by a hash of its
id), so no held-out message has its translation in training. Both skip the test when the
corpus is absent (a fresh clone has no ../shared).
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from functools import cache
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
LANGUAGES = ("ja", "zh_CN", "ko", "ru", "ar", "hi", "de", "en", "fr")
Split = tuple[tuple[str, ...], dict[str, tuple[str, ...]]]


def _path(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared corpora sit beside the checkout)")
    return path


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


@cache
def bench_split(megabytes: float = 4.0, seed: int = 0) -> Split:
    with gzip.open(_path("bench-mixed.jsonl.gz"), "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    random.Random(seed).shuffle(records)
    rows: list[tuple[str, str]] = []
    size = 0
    for record in records:
        for line in _lines(record["text"]):
            rows.append((record["slice"], line))
            size += len(line.encode())
        if size >= megabytes * 1e6:
            break
    cut = int(len(rows) * 0.85)
    held: dict[str, list[str]] = {}
    for name, line in rows[cut:]:
        held.setdefault(name, []).append(line)
    return tuple(line for _, line in rows[:cut]), {k: tuple(v) for k, v in held.items()}


@cache
def multilingual_split(per_language: int = 350_000, held_percent: int = 15) -> Split:
    train: list[str] = []
    held: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    size = dict.fromkeys(LANGUAGES, 0)
    with gzip.open(_path("parallel-gettext.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            is_held = zlib.crc32(record["id"].encode()) % 100 < held_percent
            for lang in LANGUAGES:
                text = record.get(lang)
                if not text or size[lang] > per_language:
                    continue
                size[lang] += len(text.encode())
                (held[lang] if is_held else train).extend(_lines(text))
    return tuple(train), {k: tuple(v) for k, v in held.items()}


def nbytes(lines: tuple[str, ...] | list[str]) -> int:
    return sum(len(line.encode()) for line in lines)
