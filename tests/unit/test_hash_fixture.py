"""Every semantic and release hash stays byte-identical (tests/fixtures/hashes.json).

A failure here means a canonical config or a hash changed: if that is intended, it is a
versioned change (CHANGELOG.md) and the fixture is regenerated with
``python scripts/record_hashes.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from hash_cases import FIXTURE, cases, hashes_of

RECORDED: dict[str, dict[str, str]] = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_fixture_covers_every_case(tp: ModuleType) -> None:
    assert sorted(RECORDED) == sorted(cases(tp))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_hashes_unchanged(tp: ModuleType, name: str, tmp_path: Path) -> None:
    got = hashes_of(cases(tp)[name](), tmp_path / "artifact")
    assert got == RECORDED[name]
    # Saving and loading never changes an identity.
    assert got["reloaded_semantic"] == got["semantic"]
    assert got["reloaded_release"] == got["release"]
