"""``tokenpact.data`` is lazy: every public name resolves, and importing one module (what
a Ray encoding worker does) does not import the cleaning steps, readers or trainers."""

from __future__ import annotations

import subprocess
import sys

import tokenpact.data as data


def test_every_public_name_resolves_to_its_module() -> None:
    assert sorted(data.__all__) == sorted(data._EXPORTS)
    for name, module in data._EXPORTS.items():
        value = getattr(data, name)
        assert getattr(value, "__module__", f"tokenpact.data.{module}").startswith(
            f"tokenpact.data.{module}"
        ), name
    assert set(data.__all__) <= set(dir(data))


def test_the_encoder_worker_imports_little() -> None:
    probe = (
        "import sys, tokenpact.data.ray_encoder;"
        "print(sorted(m for m in sys.modules if m.startswith('tokenpact.data.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    for heavy in ("cleaning", "readers", "train", "near", "dataset"):
        assert f"'tokenpact.data.{heavy}'" not in out, out
