"""Under CI=true a missing pinned peer fails the test instead of skipping it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text(encoding="utf-8")

TESTS = """
import sys
import pytest

def test_missing_required_peer():
    sys.modules["sentencepiece"] = None  # the import now fails like a missing package
    try:
        pytest.importorskip("sentencepiece")
    finally:
        del sys.modules["sentencepiece"]

def test_missing_optional_module():
    pytest.importorskip("torch_is_optional_here")
"""


@pytest.mark.parametrize(("ci", "failed", "skipped"), [("true", 1, 1), ("", 0, 2)])
def test_missing_peer_policy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, failed: int, skipped: int
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_policy=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, skipped=skipped)
