"""Findings, the detector registry and the report ``tokenpact doctor`` prints.

A detector looks at one kind of subject (a tokenizer, a chat template, a batch, a
checkpoint, a dataset manifest, or a pair of them) and yields :class:`Finding` objects,
each naming the failure class, the evidence and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
# Inputs a detector may need; the runner calls it only when all are present.
Need = Literal["tokenizer", "hf_json", "template", "batch", "checkpoint", "manifest"]


@dataclass(frozen=True)
class Finding:
    """One detected failure: what, where, the evidence seen and the fix."""

    code: str
    severity: Severity
    failure: str
    evidence: str
    fix: str
    path: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": self.severity,
            "failure": self.failure,
            "evidence": self.evidence,
            "fix": self.fix,
            "path": self.path,
        }


@dataclass(frozen=True)
class Detector:
    """A registered check: its code, the failure class it detects and its inputs."""

    code: str
    failure: str
    needs: tuple[Need, ...]
    severity: Severity
    run: Callable[[Any], Iterable[tuple[str, str]]]

    def findings(self, subject: Any, path: str) -> Iterator[Finding]:
        for evidence, fix in self.run(subject):
            yield Finding(self.code, self.severity, self.failure, evidence, fix, path)


DETECTORS: dict[str, Detector] = {}


def detector(
    code: str, *, failure: str, needs: tuple[Need, ...], severity: Severity = "error"
) -> Callable[[Callable[[Any], Iterable[tuple[str, str]]]], Callable[[Any], Iterable[Any]]]:
    """Register a function ``subject -> iterable of (evidence, fix)`` as a detector."""

    def register(
        func: Callable[[Any], Iterable[tuple[str, str]]],
    ) -> Callable[[Any], Iterable[Any]]:
        if code in DETECTORS:
            raise RuntimeError(f"detector {code!r} registered twice")
        DETECTORS[code] = Detector(code, failure, needs, severity, func)
        return func

    return register


@dataclass(frozen=True)
class Inspected:
    """One path the doctor read and what it took it to be (or why it could not)."""

    path: str
    kinds: tuple[str, ...]
    problem: str | None = None


@dataclass
class DoctorReport:
    """Everything the doctor saw and found; ``exit_code`` is 0 clean, 1 with findings."""

    inspected: list[Inspected] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        """Errors and warnings (``info`` findings never change the exit code)."""
        return [f for f in self.findings if f.severity != "info"]

    @property
    def exit_code(self) -> int:
        unreadable = any(i.problem for i in self.inspected)
        return 1 if self.problems or unreadable else 0

    def codes(self) -> list[str]:
        return sorted({f.code for f in self.findings})

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "tokenpact.doctor",
            "version": 1,
            "exit_code": self.exit_code,
            "inspected": [
                {"path": i.path, "kinds": list(i.kinds), "problem": i.problem}
                for i in self.inspected
            ],
            "detectors_run": list(self.ran),
            "findings": [f.to_json() for f in self.findings],
        }

    def render(self) -> str:
        lines = []
        for item in self.inspected:
            what = ", ".join(item.kinds) or "nothing recognizable"
            lines.append(f"inspected {item.path}: {what}")
            if item.problem:
                lines.append(f"  cannot inspect: {item.problem}")
        for severity in SEVERITIES:
            for f in (f for f in self.findings if f.severity == severity):
                lines.append(f"\n[{f.severity}] {f.code}: {f.failure}")
                if f.path:
                    lines.append(f"  in: {f.path}")
                lines.append(f"  evidence: {f.evidence}")
                lines.append(f"  fix: {f.fix}")
        n = len(self.problems)
        notes = len(self.findings) - n
        unreadable = sum(1 for i in self.inspected if i.problem)
        lines.append(
            f"\n{len(self.ran)} detectors ran; {n} finding(s)"
            + (f" and {notes} note(s)" if notes else "")
            + (f"; {unreadable} path(s) could not be inspected" if unreadable else "")
            + ("" if self.exit_code else ": clean")
        )
        return "\n".join(lines)
