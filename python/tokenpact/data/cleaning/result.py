"""What a cleaning run produced: kept documents, rejected samples, per-step records.

The step records (name, library and version, configuration hash, documents and bytes
in/out, reasons and counters) go into the corpus manifest's ``cleaning`` section, the
``pipeline`` map (``clean.<k>.<step>`` -> ``<library>==<version> <config hash>``) and,
for decontamination, its ``decontamination`` record; each kept document's entry holds the
digest of its text before and after cleaning, each dropped one is listed with its digest
and the rules that dropped it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...contract import CorpusManifest
from ..corpus_manifest import build_corpus_manifest, write_json_atomic, write_jsonl_atomic
from ..documents import Document, output_record
from .decontam import DecontamConfig, DecontamWorker
from .langid import LangIdConfig
from .quality import QualityConfig
from .step import Worker, hashable_json

if TYPE_CHECKING:
    from .pipeline import CleaningPipeline, DocResult


# Annotations only a cleaning run writes: an input record holding them is an earlier
# run's output, so they are replaced. ``meta`` is a common user field, so an input
# ``meta`` is kept and this run's annotations go to ``clean_meta``.
ANNOTATIONS_OWNED = frozenset({"flags", "raw_sha256", "clean_sha256"})


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CleaningResult:
    """The documents (input order) and the per-step statistics of one pipeline run."""

    def __init__(
        self,
        pipeline: CleaningPipeline,
        workers: Sequence[tuple[str, Worker]],
        documents: list[DocResult],
    ) -> None:
        self.pipeline = pipeline
        self.documents = documents
        self._workers = dict(workers)

    @property
    def kept(self) -> list[Document]:
        """The surviving documents with their cleaned text (IDs, sources, groups kept)."""
        return [
            Document(d.doc_id, d.text, d.source, d.group_id, d.license_class)
            for d in self.documents
            if d.text is not None
        ]

    def drops(self, max_share: float) -> list[dict[str, Any]]:
        """Each (source, step) where the step dropped more than ``max_share`` of the
        source's documents: ``{"source", "step", "dropped", "documents", "share"}``,
        largest share first. A preset that does not fit the content shows up here."""
        totals = Counter(d.source for d in self.documents)
        dropped = Counter((d.source, d.dropped_by) for d in self.documents if d.text is None)
        out = [
            {
                "source": source,
                "step": step,
                "dropped": n,
                "documents": totals[source],
                "share": n / totals[source],
            }
            for (source, step), n in dropped.items()
            if n / totals[source] > max_share
        ]
        return sorted(out, key=lambda r: (-r["share"], r["source"], str(r["step"])))

    @property
    def rejected(self) -> list[DocResult]:
        return [d for d in self.documents if d.text is None]

    def step_records(self) -> list[dict[str, Any]]:
        """One record per step: identity, versions, counts and reasons (manifest form)."""
        records = []
        for config in self.pipeline.steps:
            name = config.NAME
            rec: dict[str, Any] = {
                "step": name,
                "library": config.LIBRARY or "tokenpact",
                "version": config.library_version,
                "step_version": config.STEP_VERSION,
                "config_hash": config.config_hash,
                "config": hashable_json(config.identity()),
                "documents_in": 0,
                "documents_out": 0,
                "bytes_in": 0,
                "bytes_out": 0,
                "modified": 0,
                "dropped": 0,
                "flagged": 0,
            }
            reasons: Counter[str] = Counter()
            counts: Counter[str] = Counter()
            for d in self.documents:
                for step, n_in, n_out, changed, step_counts in d.trace:
                    if step != name:
                        continue
                    rec["documents_in"] += 1
                    rec["bytes_in"] += n_in
                    dropped = d.dropped_by == name
                    if dropped:
                        rec["dropped"] += 1
                    else:
                        rec["documents_out"] += 1
                        rec["bytes_out"] += n_out
                        rec["modified"] += int(changed)
                        rec["flagged"] += int(bool(d.reasons.get(name)))
                    reasons.update(d.reasons.get(name, ()))
                    counts.update(step_counts)
            rec["reasons"] = dict(sorted(reasons.items()))
            rec["counts"] = dict(sorted(counts.items()))
            rec.update(self._extras(config))
            records.append(rec)
        return records

    def _extras(self, config: Any) -> dict[str, Any]:
        if isinstance(config, QualityConfig):
            return {"rules": hashable_json(config.rules())}
        if isinstance(config, LangIdConfig):
            return {"unicode_version": unicodedata.unidata_version}
        if isinstance(config, DecontamConfig):
            worker = self._workers.get(config.NAME)
            too_short = worker.eval_too_short if isinstance(worker, DecontamWorker) else 0
            return {
                "method": self.decontamination_method(config),
                "eval_sets": config.eval_set_digests,
                "eval_too_short": too_short,
            }
        return {}

    @staticmethod
    def decontamination_method(config: DecontamConfig) -> str:
        return f"ngram-overlap-w{config.n}-c{config.char_n}-min{config.min_matches}-{config.policy}"

    def dropped_records(self) -> list[dict[str, Any]]:
        return [
            {
                "document_id": d.doc_id,
                "source_id": d.source,
                "raw_sha256": _sha256(d.raw_text),
                "step": d.dropped_by or "",
                "reasons": list(d.reasons.get(d.dropped_by or "", ())),
            }
            for d in sorted(self.rejected, key=lambda d: d.doc_id)
        ]

    def manifest_fields(self) -> dict[str, Any]:
        """``pipeline``, ``decontamination`` and ``cleaning`` for a corpus manifest."""
        records = self.step_records()
        pipeline = {
            f"clean.{k}.{r['step']}": f"{r['library']}=={r['version']} {r['config_hash']}"
            for k, r in enumerate(records)
        }
        decontamination = None
        for config in self.pipeline.steps:
            if isinstance(config, DecontamConfig):
                decontamination = {
                    "method": self.decontamination_method(config),
                    "eval_sets": config.eval_set_digests,
                }
        cleaning = {"steps": records, "dropped": self.dropped_records()}
        return {"pipeline": pipeline, "decontamination": decontamination, "cleaning": cleaning}

    def corpus_manifest(
        self,
        *,
        revision: str,
        roles: Mapping[str, str] | None = None,
        seed: int | None = None,
        split_names: Mapping[str, str] | None = None,
        pipeline: Mapping[str, str] | None = None,
    ) -> CorpusManifest:
        """The corpus manifest of the kept documents: digests of each one's text as read
        and after cleaning, plus this run's step records (see the module doc)."""
        fields = self.manifest_fields()
        kept = [d for d in self.documents if d.text is not None]
        # Every step is a pure function of the text, so the cleaned text is a function
        # of the raw text and can be looked up by it.
        cleaned = {d.raw_text: d.text or "" for d in kept}
        manifest = build_corpus_manifest(
            [Document(d.doc_id, d.raw_text, d.source, d.group_id, d.license_class) for d in kept],
            revision=revision,
            roles=roles,
            clean=cleaned.__getitem__,
            pipeline={**dict(pipeline or {}), **fields["pipeline"]},
            seed=seed,
            decontamination=fields["decontamination"],
            split_names=split_names,
        )
        result = dataclasses.replace(manifest, cleaning=fields["cleaning"])
        CorpusManifest.from_json({**result.to_json(), "documents": []})
        return result

    def report(self) -> dict[str, Any]:
        """The run's report: steps with counts and reasons, totals, and the languages."""
        records = self.step_records()
        return {
            "steps": records,
            "totals": {
                "documents_in": len(self.documents),
                "documents_out": sum(1 for d in self.documents if d.text is not None),
                "bytes_in": sum(
                    len(d.raw_text.encode("utf-8", "surrogatepass")) for d in self.documents
                ),
                "bytes_out": sum(
                    len(d.text.encode("utf-8", "surrogatepass"))
                    for d in self.documents
                    if d.text is not None
                ),
            },
        }

    def to_markdown(self) -> str:
        """The summary table the CLI prints: one row per step, then the top reasons."""
        lines = [
            "| step | library | config | docs in | docs out | dropped | modified | flagged "
            "| bytes in | bytes out |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        records = self.step_records()
        for r in records:
            lines.append(
                f"| {r['step']} | {r['library']} {r['version']} | {r['config_hash'][7:19]} "
                f"| {r['documents_in']} | {r['documents_out']} | {r['dropped']} | {r['modified']} "
                f"| {r['flagged']} | {r['bytes_in']} | {r['bytes_out']} |"
            )
        for r in records:
            if r["reasons"]:
                top = sorted(r["reasons"].items(), key=lambda kv: (-kv[1], kv[0]))[:8]
                lines.append(f"- {r['step']}: " + ", ".join(f"{k} {v}" for k, v in top))
        return "\n".join(lines)

    def output_records(self, **names: str | None) -> list[dict[str, Any]]:
        """Kept documents as JSON Lines records: the input record's fields unchanged (for
        documents read with ``keep_fields=True``; ``names`` are the reader's
        ``text_field``, ``id_field``, ``source_field`` and ``group_field``), the cleaned
        text and ID, then this step's annotations: ``meta``, ``flags``, ``raw_sha256``,
        ``clean_sha256``. An annotation whose name the input record already uses for
        something else is written as ``clean_<name>`` instead (the input field stays)."""
        out = []
        for d in self.documents:
            if d.text is None:
                continue
            doc = Document(d.doc_id, d.text, d.source, d.group_id, d.license_class, d.fields)
            record = output_record(doc, **names)  # type: ignore[arg-type]
            annotations: dict[str, Any] = {"meta": d.meta}
            if d.reasons:
                annotations["flags"] = d.reasons
            annotations["raw_sha256"] = _sha256(d.raw_text)
            annotations["clean_sha256"] = _sha256(d.text)
            for key, value in annotations.items():
                taken = d.fields is not None and key in d.fields and key not in ANNOTATIONS_OWNED
                record[f"clean_{key}" if taken else key] = value
            out.append(record)
        return out

    def rejected_records(self) -> list[dict[str, Any]]:
        """Rejected samples for review: the text the rejecting step saw and its rules."""
        return [
            {
                "id": d.doc_id,
                "source": d.source,
                "step": d.dropped_by,
                "reasons": d.reasons.get(d.dropped_by or "", []),
                "meta": d.meta,
                "text": d.rejected_text,
            }
            for d in self.documents
            if d.text is None
        ]

    def write(
        self,
        out_path: str | os.PathLike[str],
        *,
        rejected_path: str | os.PathLike[str] | None = None,
        report_path: str | os.PathLike[str] | None = None,
        names: Mapping[str, str | None] | None = None,
    ) -> None:
        """Write kept documents (JSON Lines), rejected samples and the report, atomically;
        ``names`` are the reader's field names (see :meth:`output_records`)."""
        write_jsonl_atomic(out_path, self.output_records(**dict(names or {})))
        if rejected_path is not None:
            write_jsonl_atomic(rejected_path, self.rejected_records())
        if report_path is not None:
            write_json_atomic(report_path, self.report())
