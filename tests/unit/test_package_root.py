"""The lazy package root and the lazy CLI: cheap imports, complete registries."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tokenpact
from tokenpact.cli.main import COMMANDS, cli, load_command


def test_all_lists_exactly_the_exports() -> None:
    assert set(tokenpact.__all__) == set(tokenpact._EXPORTS) | {"__version__"}


@pytest.mark.parametrize("name", sorted(tokenpact._EXPORTS))
def test_every_export_resolves(name: str) -> None:
    module_name, attribute = tokenpact._EXPORTS[name]
    module = importlib.import_module(f"tokenpact.{module_name}")
    expected = module if attribute is None else getattr(module, attribute)
    assert getattr(tokenpact, name) is expected


def test_unknown_attribute_is_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = tokenpact.nope  # type: ignore[attr-defined]


def test_version_has_one_source() -> None:
    from importlib.metadata import PackageNotFoundError, version

    from tokenpact import _native

    assert tokenpact.__version__ == _native.__version__
    try:
        installed = version("tokenpact")
    except PackageNotFoundError:  # running from a source tree
        return
    assert installed == tokenpact.__version__


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_tokenpact_loads_no_heavy_module() -> None:
    loaded = _modules_after("import tokenpact")
    for heavy in ("numpy", "jinja2", "tokenpact._native", "tokenpact.core", "click"):
        assert heavy not in loaded, heavy


def test_cli_help_imports_no_command() -> None:
    loaded = _modules_after(
        "from tokenpact.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert "numpy" not in loaded
    assert not any(m.endswith("_cmd") or m.endswith("_cmds") for m in loaded)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_registry_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert COMMANDS[name][2] == command.get_short_help_str(limit=88)


def test_help_lists_every_command() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output


def test_version_option() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"tokenpact, version {tokenpact.__version__}"
