"""Fuzz worker functions of the data surfaces (issue 43), dispatched by ``worker.py``.

Each returns an outcome (``ok``, ``resealed``, ``fail_open``) or raises: a
TokenpactError is ``typed``, anything else ``untyped``.

- ``dataset``: ``open_dataset`` with verification on (``verify="open"``) and the
  tokenizer; what it returns must be the original dataset (``fail_open`` otherwise). A
  shard changed *and* re-sealed (its digest recomputed in the manifest) is a different
  dataset with a different ``dataset.json`` hash; it may open (``resealed``) only if
  every declared fact still holds: IDs inside the vocabulary and at most
  ``max_token_id``, doc IDs ascending, the declared record count.
- ``corpus``: read a JSON Lines corpus and build its corpus manifest.
- ``clean_config``: build a cleaning pipeline from a config file and run it.
- ``doctor``: ``diagnose`` a batch or checkpoint file beside the tokenizer; a report
  naming an untyped exception (a detector or loader that fell over) is ``untyped``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

KINDS = ("dataset", "corpus", "clean_config", "doctor")
_TOK: dict[str, Any] = {}
_UNTYPED_NAMES = (
    "KeyError",
    "TypeError",
    "AttributeError",
    "IndexError",
    "OverflowError",
    "RecursionError",
    "MemoryError",
    "ZeroDivisionError",
    "UnboundLocalError",
    "AssertionError",
    "BadZipFile",
    "error:",  # zlib.error, struct.error
)


def _tokenizer(path: str) -> Any:
    import tokenpact as tp

    if path not in _TOK:
        _TOK[path] = tp.Tokenizer.load(path)
    return _TOK[path]


def _digest(ds: Any) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([ds.doc_ids, ds.lengths.tolist(), ds.truncated.tolist()]).encode())
    h.update(np.asarray(ds.input_ids, dtype=np.int64).tobytes())
    return h.hexdigest()


def _facts_hold(ds: Any, vocab: int) -> bool:
    ids = np.asarray(ds.input_ids, dtype=np.int64)
    top = ds.manifest["max_token_id"]
    doc_ids = ds.doc_ids
    return (
        (not ids.size or (int(ids.max()) < vocab and int(ids.max()) == top))
        and all(a < b for a, b in zip(doc_ids, doc_ids[1:], strict=False))
        and len(ds) == ds.declaration.record_count
    )


def run_dataset(path: str, spec: dict[str, Any]) -> str:
    from tokenpact.data import open_dataset

    fmt, op = Path(f"{path}.op").read_text(encoding="utf-8").split()
    tok = _tokenizer(spec["tokenizer"])
    ds = open_dataset(path, tokenizer=tok, verify="open")
    if _digest(ds) == spec["expected"][fmt]:
        return "ok"
    if op == "reseal" and _facts_hold(ds, tok.vocab_size):
        return "resealed"
    return "fail_open"


def run_corpus(path: str, spec: dict[str, Any]) -> str:
    from tokenpact.data import build_corpus_manifest, read_documents

    docs = list(read_documents(path, id_field="id", source_field="source", duplicate_ids="keep"))
    build_corpus_manifest(docs, revision="fuzz").hash  # noqa: B018 - hashing is the probe
    return "ok"


def run_clean_config(path: str, spec: dict[str, Any]) -> str:
    from tokenpact.data import Document
    from tokenpact.data.cleaning import CleaningPipeline

    pipeline = CleaningPipeline.from_file(path)
    docs = [
        Document("a", "The cat sat on the mat, and then it slept. Mail me at a@b.example."),
        Document("b", "<p>Some <b>HTML</b> text &amp; more</p>\n" * 3),
        Document("c", "短い日本語の文です。 ok 1.2.3.4"),
    ]
    result = pipeline.run(docs)
    result.report()
    return "ok"


def run_doctor(path: str, spec: dict[str, Any]) -> str:
    from tokenpact.doctor import diagnose
    from tokenpact.doctor.runner import DETECTORS

    # The detectors of the file's own scope (batch, checkpoint): the tokenizer is there
    # for the range checks, its own detectors would only repeat per mutant.
    only = [c for c, d in DETECTORS.items() if d.needs[0] in ("batch", "checkpoint")]
    report = diagnose([spec["tokenizer"], path], only=only)
    texts = [i.problem or "" for i in report.inspected]
    texts += [f.evidence for f in report.findings if "could not finish" in f.evidence]
    for text in texts:
        for name in _UNTYPED_NAMES:
            if text.startswith(name) or f"could not finish: {name}" in text:
                raise AssertionError(f"untyped in the report: {text[:200]}")
    report.render()
    json.dumps(report.to_json())
    # A file the doctor refused to read (a typed refusal, reported with exit 1).
    return "typed" if any(i.problem for i in report.inspected) else "ok"


def run(kind: str, path: str, spec: dict[str, Any]) -> str:
    return {
        "dataset": run_dataset,
        "corpus": run_corpus,
        "clean_config": run_clean_config,
        "doctor": run_doctor,
    }[kind](path, spec)
