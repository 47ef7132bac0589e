"""Run ``tokenpact doctor`` on every real tokenizer the tests load; print a Markdown list.

    PYTHONPATH=python:tests python scripts/doctor_real_tokenizers.py > /tmp/doctor.md

The output is the "Findings on real tokenizer files" section of docs/DOCTOR.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from doctor.test_doctor_real import real_tokenizers  # noqa: E402
from tokenpact.doctor import diagnose  # noqa: E402


def main() -> None:
    for name, path in real_tokenizers().items():
        report = diagnose([path])
        problem = report.inspected[0].problem
        print(f"- **{name}**: exit {report.exit_code}")
        if problem:
            print(f"  - not inspected: {problem}")
        if not report.findings and not problem:
            print("  - clean")
        for f in report.findings:
            print(f"  - `{f.code}` ({f.severity}): {f.evidence}")


if __name__ == "__main__":
    main()
