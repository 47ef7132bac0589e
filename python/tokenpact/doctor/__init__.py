"""``tokenpact doctor``: detectors for the known classes of tokenizer-integration failure.

Point it at a tokenizer directory or file, a chat template, a batch file (``.npz`` or
Parquet), a safetensors checkpoint or its declaration, or a dataset manifest; every
finding names the failure, the evidence and the fix. See docs/DOCTOR.md.

>>> from tokenpact.doctor import diagnose
>>> report = diagnose(["artifacts/my-tok", "batch.npz"])   # doctest: +SKIP
>>> report.exit_code                                        # doctest: +SKIP
0
"""

from __future__ import annotations

from .batch_view import BatchView, load_batch
from .findings import DETECTORS, Detector, DoctorReport, Finding, Inspected
from .runner import diagnose, run_detectors
from .subject import Subject, gather

__all__ = [
    "DETECTORS",
    "BatchView",
    "Detector",
    "DoctorReport",
    "Finding",
    "Inspected",
    "Subject",
    "diagnose",
    "gather",
    "load_batch",
    "run_detectors",
]
