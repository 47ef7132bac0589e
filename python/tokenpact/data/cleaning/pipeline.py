"""The cleaning pipeline: named steps run in order over each document, locally or on Ray.

A document goes through the steps one after the other; the first step that drops it
ends its journey (the rejected-sample side file keeps the text that step saw, with the
rules that fired). Every step is a pure function of the document's text and the
annotations earlier steps added, so splitting the corpus into blocks and running them
on Ray workers gives exactly the local result: blocks are reassembled by index.

>>> result = clean([Document("a", "x")], steps=[PiiConfig()])  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import ConfigError, InvalidInputError
from ..documents import Document
from .decontam import DecontamConfig
from .extract import ExtractConfig
from .langid import LangIdConfig
from .pii import PiiConfig
from .quality import QualityConfig
from .repair import RepairConfig
from .result import CleaningResult
from .step import Outcome, StepConfig, Worker

STEP_TYPES: dict[str, type[StepConfig]] = {
    "extract": ExtractConfig,
    "repair": RepairConfig,
    "langid": LangIdConfig,
    "quality": QualityConfig,
    "pii": PiiConfig,
    "decontam": DecontamConfig,
}
STEP_ORDER = tuple(STEP_TYPES)
DEFAULT_STEPS = ("extract", "langid", "quality", "pii")
DEFAULT_BLOCK_DOCS = 256


@dataclass
class DocResult:
    """One document after the pipeline: its final text (``None`` when dropped), the step
    that dropped it, the rules that fired per step, annotations and per-step sizes."""

    doc_id: str
    source: str
    group_id: str | None
    license_class: str
    raw_text: str
    text: str | None
    dropped_by: str | None = None
    rejected_text: str | None = None
    reasons: dict[str, list[str]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # Per step that saw the document: (bytes in, bytes out, changed, counts).
    trace: list[tuple[str, int, int, bool, dict[str, int]]] = field(default_factory=list)
    # The input record's fields (attached on the driver, never shipped to Ray workers).
    fields: Mapping[str, Any] | None = None

    @property
    def kept(self) -> bool:
        return self.text is not None


def _new_result(doc: Document) -> DocResult:
    return DocResult(
        doc_id=doc.doc_id,
        source=doc.source,
        group_id=doc.group_id,
        license_class=doc.license_class,
        raw_text=doc.text,
        text=doc.text,
    )


def _apply(result: DocResult, name: str, text: str, outcome: Outcome) -> bool:
    """Record one step's ``outcome`` on ``result``; False when the step dropped it."""
    result.meta.update(outcome.meta)
    n_in = len(text.encode("utf-8", "surrogatepass"))
    if outcome.reasons:
        result.reasons[name] = list(outcome.reasons)
    if outcome.text is None:
        result.trace.append((name, n_in, 0, True, dict(outcome.counts)))
        result.text = None
        result.dropped_by = name
        result.rejected_text = text
        return False
    n_out = len(outcome.text.encode("utf-8", "surrogatepass"))
    result.trace.append((name, n_in, n_out, outcome.text != text, dict(outcome.counts)))
    result.text = outcome.text
    return True


def _run_document(workers: Sequence[tuple[str, Worker]], doc: Document) -> DocResult:
    """One document through the steps, one call per step (the reading of
    :func:`clean_block`, which runs each step over the whole block at once)."""
    result = _new_result(doc)
    for name, worker in workers:
        text = result.text or ""
        if not _apply(result, name, text, worker(text, result.meta)):
            break
    return result


def _step_batch(worker: Worker, texts: list[str], metas: list[dict[str, Any]]) -> list[Outcome]:
    batch = getattr(worker, "batch", None)
    if batch is not None:
        outcomes: list[Outcome] = batch(texts, metas)
        return outcomes
    return [worker(t, m) for t, m in zip(texts, metas, strict=True)]


def clean_block(workers: Sequence[tuple[str, Worker]], docs: Sequence[Document]) -> list[DocResult]:
    """Run the prepared ``workers`` over ``docs`` (one engine task); results in order.

    Each step sees the block's surviving documents in one call (``worker.batch`` where
    the step has one: the native language and quality engines); a step's outcome for a
    document depends only on that document's text and annotations, so this is the
    document-at-a-time result (:func:`_run_document`)."""
    results = [_new_result(d) for d in docs]
    alive = list(range(len(results)))
    for name, worker in workers:
        if not alive:
            break
        texts = [results[i].text or "" for i in alive]
        outcomes = _step_batch(worker, texts, [results[i].meta for i in alive])
        alive = [
            i
            for i, text, outcome in zip(alive, texts, outcomes, strict=True)
            if _apply(results[i], name, text, outcome)
        ]
    return results


def _blocks(docs: Sequence[Document], size: int) -> list[Sequence[Document]]:
    return [docs[i : i + size] for i in range(0, len(docs), size)]


class CleaningPipeline:
    """An ordered list of step configurations.

    ``CleaningPipeline([LangIdConfig(keep=("en", "de")), QualityConfig()])``, or from a
    JSON-style configuration: ``CleaningPipeline.from_config({"quality": {...}},
    steps=["langid", "quality"])``.
    """

    def __init__(self, steps: Sequence[StepConfig]) -> None:
        steps = list(steps)
        if not steps:
            raise ConfigError("a cleaning pipeline needs at least one step")
        for s in steps:
            if not isinstance(s, StepConfig):
                raise ConfigError(
                    f"{s!r} is not a step configuration; use one of "
                    + ", ".join(t.__name__ for t in STEP_TYPES.values())
                )
        names = [s.NAME for s in steps]
        if len(set(names)) != len(names):
            raise ConfigError(f"each step may appear once, got {names}")
        self.steps = steps

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | None = None, *, steps: Sequence[str] | None = None
    ) -> CleaningPipeline:
        """Steps named in ``steps`` (default: those ``config`` configures, else
        :data:`DEFAULT_STEPS`), each configured by ``config[name]`` (defaults if absent)."""
        if config is not None and not isinstance(config, Mapping):
            raise ConfigError(
                "the cleaning configuration must be a JSON object of step options, "
                f'e.g. {{"quality": {{"min_words": 20}}}}, got {type(config).__name__}'
            )
        config = dict(config or {})
        unknown = sorted(set(config) - set(STEP_TYPES))
        if unknown:
            raise ConfigError(f"unknown cleaning steps {unknown}; the steps are {list(STEP_TYPES)}")
        if steps is None:
            steps = [s for s in STEP_ORDER if s in config] or list(DEFAULT_STEPS)
        bad = [s for s in steps if s not in STEP_TYPES]
        if bad:
            raise ConfigError(f"unknown cleaning steps {bad}; the steps are {list(STEP_TYPES)}")
        missing = sorted(set(config) - set(steps))
        if missing:
            raise ConfigError(f"{missing} are configured but not in the step list {list(steps)}")
        return cls([STEP_TYPES[s].from_json(config.get(s, {})) for s in steps])

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, steps: Sequence[str] | None = None
    ) -> CleaningPipeline:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(
                f"cleaning config {path} cannot be read ({exc.strerror or exc})"
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cleaning config {path} is not valid UTF-8 JSON ({exc})") from None
        except RecursionError:
            raise ConfigError(f"cleaning config {path} nests too deeply") from None
        return cls.from_config(data, steps=steps)

    def to_json(self) -> dict[str, Any]:
        return {s.NAME: s.to_json() for s in self.steps}

    @property
    def names(self) -> list[str]:
        return [s.NAME for s in self.steps]

    def prepare(self) -> list[tuple[str, Worker]]:
        return [(s.NAME, s.prepare()) for s in self.steps]

    def run(
        self,
        documents: Iterable[Document],
        *,
        engine: str = "local",
        ray_options: Mapping[str, Any] | None = None,
        progress: bool = False,
    ) -> CleaningResult:
        """Clean ``documents``; ``engine="ray"`` spreads blocks of
        ``ray_options["block_docs"]`` documents over Ray workers (same result)."""
        if engine not in ("local", "ray"):
            raise ConfigError(f"engine must be 'local' or 'ray', got {engine!r}")
        docs = _materialize(documents)
        workers = self.prepare()
        options = dict(ray_options or {})
        block_docs = int(options.pop("block_docs", DEFAULT_BLOCK_DOCS))
        if block_docs < 1:
            raise ConfigError(f"block_docs must be >= 1, got {block_docs}")
        results: list[DocResult] = []
        if engine == "local":
            blocks = _blocks(docs, block_docs)
            for block in _progress(blocks, progress, "cleaning", "block", len(blocks)):
                results.extend(clean_block(workers, block))
        else:
            from ..ray_engine import ray_map_blocks

            bare = [replace(d, fields=None) if d.fields is not None else d for d in docs]
            blocks = _blocks(bare, block_docs)
            mapped = ray_map_blocks(clean_block, workers, blocks, **options)
            for block in _progress(mapped, progress, "cleaning (ray)", "block", len(blocks)):
                results.extend(block)
        for result, doc in zip(results, docs, strict=True):
            result.fields = doc.fields
        return CleaningResult(self, workers, results)


def _materialize(documents: Iterable[Document]) -> list[Document]:
    docs: list[Document] = []
    try:
        for i, d in enumerate(documents):
            if not isinstance(d, Document):
                raise InvalidInputError(
                    f"item {i} is a {type(d).__name__}, not a Document; wrap texts with "
                    "Document(doc_id, text) or read them with read_documents()"
                )
            docs.append(d)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"the corpus is not UTF-8 text ({exc.reason} at byte {exc.start}); convert it "
            "(e.g. iconv -f latin1 -t utf-8) or fix the file"
        ) from None
    except PermissionError as exc:
        raise InvalidInputError(
            f"corpus file {exc.filename} cannot be read (permission denied); check its mode"
        ) from None
    seen: set[str] = set()
    for d in docs:
        if d.doc_id in seen:
            raise InvalidInputError(
                f"doc_id {d.doc_id!r} occurs twice; give every document a unique ID (or "
                "read with duplicate_ids='number')"
            )
        seen.add(d.doc_id)
    return docs


def _progress(
    items: Iterable[Any], enabled: bool, desc: str, unit: str, total: int
) -> Iterator[Any]:
    if not enabled:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc=desc, unit=unit, total=total, leave=False)


def clean(
    documents: Iterable[Document],
    *,
    steps: Sequence[StepConfig | str] | None = None,
    config: Mapping[str, Any] | None = None,
    engine: str = "local",
    ray_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> CleaningResult:
    """Clean ``documents`` with the named ``steps`` (configurations or step names
    configured by ``config``); see :class:`CleaningPipeline` and docs/DATA.md."""
    if steps is not None and all(isinstance(s, StepConfig) for s in steps):
        if config:
            raise ConfigError("pass step configurations or config=, not both")
        pipeline = CleaningPipeline([s for s in steps if isinstance(s, StepConfig)])
    else:
        if steps is not None and not all(isinstance(s, str) for s in steps):
            raise ConfigError("steps must be all step names or all step configurations")
        names = None if steps is None else [str(s) for s in steps]
        pipeline = CleaningPipeline.from_config(config, steps=names)
    return pipeline.run(documents, engine=engine, ray_options=ray_options, progress=progress)
