"""README.md opens with the two commands, and CI runs exactly the second one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _opening_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.+?)\n```", text)[:2]


def test_readme_opens_with_install_and_test_commands() -> None:
    first, second = _opening_commands()
    assert "tokenpact quickstart" in first and "pip install ." in first
    assert '".[test]"' in second and "pytest" in second


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, second = _opening_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert second in ci.splitlines()
