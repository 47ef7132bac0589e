"""Every doctor detector fires on its triggering fixture and stays quiet on its clean one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpact.doctor import DETECTORS, diagnose

from .cases import CLEAN, TRIGGER


def test_every_detector_has_both_fixtures() -> None:
    assert set(TRIGGER) == set(DETECTORS)
    assert set(CLEAN) == set(DETECTORS)


@pytest.mark.parametrize("code", sorted(DETECTORS))
def test_trigger_fixture_fires(code: str, tmp_path: Path) -> None:
    paths, options = TRIGGER[code](tmp_path)
    report = diagnose(paths, **options)
    found = [f for f in report.findings if f.code == code]
    assert found, report.render()
    assert all(f.evidence and f.fix for f in found)
    if DETECTORS[code].severity != "info":
        assert report.exit_code == 1


@pytest.mark.parametrize("code", sorted(DETECTORS))
def test_clean_fixture_is_quiet(code: str, tmp_path: Path) -> None:
    paths, options = CLEAN[code](tmp_path)
    report = diagnose(paths, **options)
    assert not [i for i in report.inspected if i.problem], report.render()
    assert any(r.startswith(f"{code} @") for r in report.ran), report.ran  # it did run
    assert code not in report.codes(), report.render()
