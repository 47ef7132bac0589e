"""Audit corpora: texts plus the per-record fields that define slices.

A slice is the set of records sharing one value of a field (``lang``, ``source``,
``domain``, ``slice``...). Records without the field fall in the ``"(none)"`` slice, so
totals over slices always equal the overall totals. A name starting with ``@`` that is
not a field is a built-in slice computed from the text (:mod:`.builtin_slices`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._text_files import iter_json_objects, open_text
from ..errors import ConfigError, InvalidInputError
from .builtin_slices import slice_values

MISSING_SLICE = "(none)"


@dataclass(frozen=True)
class AuditCorpus:
    """Texts and their slice fields (``fields[name][i]`` belongs to ``texts[i]``)."""

    texts: list[str]
    fields: dict[str, list[str]] = field(default_factory=dict)
    name: str = "corpus"

    def __post_init__(self) -> None:
        for key, values in self.fields.items():
            if len(values) != len(self.texts):
                raise ConfigError(
                    f"field {key!r} has {len(values)} values for {len(self.texts)} texts; "
                    "give one value per text"
                )

    def __len__(self) -> int:
        return len(self.texts)

    def slice_codes(self, field_name: str | None) -> tuple[list[str], np.ndarray]:
        """Sorted slice names and each record's index into them (int64)."""
        if field_name is None:
            return ["all"], np.zeros(len(self.texts), dtype=np.int64)
        if field_name.startswith("@") and field_name not in self.fields:
            return partition(slice_values(field_name, self.texts))
        if field_name not in self.fields:
            known = ", ".join(sorted(self.fields)) or "none"
            raise ConfigError(
                f"slice field {field_name!r} is not in {self.name} (fields: {known}); "
                "pass --slice-field with one of them"
            )
        return partition(self.fields[field_name])

    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping[str, Any]],
        *,
        text_field: str = "text",
        name: str = "corpus",
    ) -> AuditCorpus:
        """Build from dict records: ``text_field`` is the text, other scalar fields slice."""
        texts: list[str] = []
        raw_fields: list[dict[str, str]] = []
        for i, record in enumerate(records):
            text = record.get(text_field)
            if not isinstance(text, str):
                raise InvalidInputError(
                    f"{name}: record {i} has no string field {text_field!r}; "
                    "pass --text-field with the field holding the text"
                )
            texts.append(text)
            raw_fields.append(
                {
                    k: str(v)
                    for k, v in record.items()
                    if k != text_field and isinstance(v, (str, int, bool))
                }
            )
        keys = sorted({k for r in raw_fields for k in r})
        fields = {k: [r.get(k, MISSING_SLICE) for r in raw_fields] for k in keys}
        return cls(texts, fields, name)


def load_corpus(
    path: str | os.PathLike[str],
    *,
    text_field: str = "text",
    limit: int | None = None,
) -> AuditCorpus:
    """Read ``.jsonl`` / ``.jsonl.gz`` (one JSON object a line) or ``.txt`` (one text a line).

    ``limit`` keeps the first records only (deterministic: file order).
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"corpus file {p} does not exist; pass --corpus with a JSONL or text file"
        )
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be >= 1, got {limit}")
    is_json = any(s in (".jsonl", ".json", ".ndjson") for s in p.suffixes)
    try:
        with open_text(p) as handle:
            lines: Iterable[dict[str, Any]] = (
                (record for _, record in iter_json_objects(handle, p))
                if is_json
                else ({text_field: line.rstrip("\r\n")} for line in handle)
            )
            records = list(itertools.islice(lines, limit))
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise InvalidInputError(
            f"cannot read {p}: {exc}; give a UTF-8 (optionally gzipped) file"
        ) from None
    return AuditCorpus.from_records(records, text_field=text_field, name=p.name)


def partition(values: list[str]) -> tuple[list[str], np.ndarray]:
    """Sorted distinct values and each record's index into them (int64)."""
    names = sorted(set(values))
    index = {v: i for i, v in enumerate(names)}
    return names, np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def group_sums(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-slice sums of a per-record array; integers stay exact int64 sums."""
    if values.dtype.kind in "iub":
        out = np.zeros(n_groups, dtype=np.int64)
        np.add.at(out, codes, values.astype(np.int64, copy=False))
        return out
    return np.bincount(codes, weights=values, minlength=n_groups)
