"""Run every applicable detector over what ``gather`` loaded."""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import (  # noqa: F401 - registers the detectors
    batch_checks,
    checkpoint_checks,
    dataset_checks,
    supervision_checks,
    template_checks,
    tokenizer_checks,
)
from .findings import DETECTORS, Detector, DoctorReport, Finding
from .subject import Subject, gather


def _scope(det: Detector) -> str:
    return det.needs[0]


def _run(det: Detector, subject: Subject, path: str, report: DoctorReport) -> None:
    report.ran.append(f"{det.code} @ {path}")
    try:
        report.findings.extend(det.findings(subject, path))
    except Exception as exc:  # noqa: BLE001
        # A detector that cannot finish on odd input (a template raising a Jinja error, a
        # malformed array) reports that as a finding; the doctor never ends in a traceback.
        report.findings.append(
            Finding(
                det.code,
                "warning",
                det.failure,
                f"the check could not finish: {type(exc).__name__}: {exc}",
                "inspect this input by hand (tokenpact inspect)",
                path,
            )
        )


def run_detectors(subject: Subject, report: DoctorReport, *, only: Sequence[str] = ()) -> None:
    """Run each detector once per item of its scope (tokenizer, template, each batch, ...)."""
    for det in DETECTORS.values():
        if only and det.code not in only:
            continue
        scope = _scope(det)
        if scope == "batch":
            for path, batch in subject.batches:
                _run(det, subject.focus(batch=batch), path, report)
        elif scope == "manifest":
            for path, doc in subject.manifests:
                _run(det, subject.focus(manifest=doc, manifest_path=path), path, report)
        elif scope == "checkpoint" and subject.checkpoint is not None:
            _run(det, subject, subject.checkpoint_path, report)
        elif scope == "template" and subject.template is not None:
            _run(det, subject, subject.template_path, report)
        elif scope == "hf_json" and subject.hf_json is not None:
            _run(det, subject, subject.tokenizer_path, report)
        elif scope == "tokenizer" and subject.tokenizer is not None:
            _run(det, subject, subject.tokenizer_path, report)


def diagnose(
    paths: Sequence[str | os.PathLike[str]],
    *,
    eos_id: int | None = None,
    pad_id: int | None = None,
    ignore_index: int = -100,
    only: Sequence[str] = (),
) -> DoctorReport:
    """Inspect tokenizers, templates, batches, checkpoints and manifests together.

    >>> report = diagnose(["my-model/", "batch.npz"])          # doctest: +SKIP
    >>> report.exit_code, [f.code for f in report.findings]    # doctest: +SKIP
    """
    subject, inspected = gather(
        list(paths), eos_id=eos_id, pad_id=pad_id, ignore_index=ignore_index
    )
    report = DoctorReport(inspected=inspected)
    run_detectors(subject, report, only=only)
    return report
