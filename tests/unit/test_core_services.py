"""The core's file and hash methods reach formats and contract through one binding
(tokenpact.core.services), never by importing them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
import tokenpact.core.services as services
from tokenpact.core import Tokenizer

CORE = Path(tp.__file__).parent / "core"
ABOVE_CORE = ("formats", "train", "contract", "chat", "cli", "_services", "tokenizer")


def _imported_modules(path: Path) -> list[str]:
    """Every module a file imports (inside functions too), resolved to tokenpact.*."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append(node.module or "")
            else:
                base = ["tokenpact", "core"][: 3 - node.level]
                found.append(".".join([*base, *([node.module] if node.module else [])]))
                found.extend(".".join([*base, a.name]) for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_imports_nothing_above_it(path: Path) -> None:
    above = {f"tokenpact.{name}" for name in ABOVE_CORE}
    imported = _imported_modules(path)
    bad = [m for m in imported if any(m == a or m.startswith(a + ".") for a in above)]
    assert bad == []


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "importer",
    ["import tokenpact; Tokenizer = tokenpact.Tokenizer", "from tokenpact.core import Tokenizer"],
)
def test_load_and_save_work_from_either_import(importer: str, tmp_path: Path) -> None:
    # A fresh interpreter: nothing but the import line has run, the binding is found lazily.
    tok = tp.Tokenizer.from_ranks([bytes([b]) for b in range(256)], pattern="gpt2")
    saved = tok.save(tmp_path / "artifact")
    out = _run(
        f"{importer}\n"
        f"tok = Tokenizer.load({str(saved)!r})\n"
        "print(tok.semantic_hash)\n"
        f"print(type(tok).__module__, Tokenizer.load({str(saved)!r}).encode('hé'))"
    )
    assert out.split("\n")[0] == tok.semantic_hash
    assert out.split("\n")[1] == f"tokenpact.core.tokenizer {tok.encode('hé')}"


class _Recording:
    """A services double: records calls, answers the hash."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return "sha256:double"

        return call


def test_a_bound_double_replaces_the_services() -> None:
    double = _Recording()
    real = services.services()
    services.bind(double)  # type: ignore[arg-type]
    try:
        tok = Tokenizer.from_ranks([bytes([b]) for b in range(256)], pattern="gpt2")
        assert tok.semantic_hash == "sha256:double"
        tok.export_tiktoken("unused.tiktoken")
        assert double.calls == ["semantic_hash", "export_tiktoken"]
    finally:
        services.bind(real)
    again = Tokenizer.from_ranks([bytes([b]) for b in range(256)], pattern="gpt2")
    assert again.semantic_hash.startswith("sha256:")


def test_the_old_module_path_still_exports_the_class() -> None:
    from tokenpact.tokenizer import Tokenizer as Old

    assert Old is Tokenizer is tp.Tokenizer
