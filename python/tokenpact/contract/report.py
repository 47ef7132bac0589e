"""Check reports: every named check with its outcome, never just the first failure."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ContractError, TokenpactError

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One named check: ``pass``, ``fail`` or ``skip`` (could not run), with a message."""

    name: str
    status: Status
    message: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "message": self.message}


@dataclass
class Report:
    """An ordered list of checks; ``ok`` only when nothing failed or was skipped."""

    title: str = "contract"
    checks: list[Check] = field(default_factory=list)

    def passed(self, name: str, message: str = "") -> None:
        self.checks.append(Check(name, "pass", message))

    def failed(self, name: str, message: str) -> None:
        self.checks.append(Check(name, "fail", message))

    def skipped(self, name: str, message: str) -> None:
        self.checks.append(Check(name, "skip", message))

    def expect(self, name: str, ok: bool, message: str, success: str = "") -> bool:
        """Record ``name`` as passed when ``ok``, else as failed with ``message``."""
        if ok:
            self.passed(name, success)
        else:
            self.failed(name, message)
        return ok

    def extend(self, other: Report) -> None:
        self.checks.extend(other.checks)

    def __iter__(self) -> Iterator[Check]:
        return iter(self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def skips(self) -> list[Check]:
        return [c for c in self.checks if c.status == "skip"]

    @property
    def failed_names(self) -> set[str]:
        return {c.name for c in self.failures}

    @property
    def ok(self) -> bool:
        return not self.failures and not self.skips

    def format(self, *, verbose: bool = False) -> str:
        """Return a readable report; passing checks are listed only when ``verbose``."""
        bad = len(self.failures)
        head = (
            f"{self.title}: all {len(self.checks)} checks passed"
            if self.ok
            else f"{self.title}: {bad} of {len(self.checks)} checks failed"
            + (f", {len(self.skips)} skipped" if self.skips else "")
        )
        lines = [head]
        for check in self.checks:
            if check.status == "pass" and not verbose:
                continue
            text = f"  {check.status.upper():4} {check.name}"
            if check.message:
                text += f": {check.message}"
            lines.append(text)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "ok": self.ok,
            "checks": [c.to_json() for c in self.checks],
        }

    def raise_for_failures(self, error: type[TokenpactError] = ContractError) -> None:
        """Raise ``error`` listing every failed (and skipped) check, if any."""
        if not self.ok:
            raise error(self.format())
