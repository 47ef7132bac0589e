"""docs/ARCHITECTURE.md maps every Python package and module and every Rust module as
they are: a module added without a line in the map, or a line for one that is gone,
fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGE = ROOT / "python" / "tokenpact"
SRC = ROOT / "src"


def _map(start: str) -> str:
    """The map's part that begins with the line ``start`` (up to the next root line)."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Layers\n```\n(.+?)\n```", text, re.DOTALL)
    assert block, "docs/ARCHITECTURE.md has no map under '## Layers'"
    lines = block.group(1).split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    rest = lines[first + 1 :]
    end = next((i for i, line in enumerate(rest) if line and not line.startswith(" ")), len(rest))
    return "\n".join(rest[:end])


def _named(block: str, name: str) -> bool:
    """Whether ``name`` (``core/``, ``files.py``, ``bpe/``, ``engine.rs``) is named in the
    block: at the start of an entry, or after a path separator or a space."""
    return re.search(rf"(^|[\s/,(]){re.escape(name)}", block, re.MULTILINE) is not None


def _python_entries() -> list[str]:
    entries = []
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix == ".py":
            entries.append(path.name)
        elif path.is_dir() and (path / "__init__.py").exists():
            entries.append(path.name + "/")
            entries.extend(
                f"{path.name}/{sub.name}/"
                for sub in sorted(path.iterdir())
                if sub.is_dir() and (sub / "__init__.py").exists()
            )
    return entries


def _rust_entries() -> list[str]:
    entries = []
    for path in sorted(SRC.iterdir()):
        if path.suffix == ".rs":
            entries.append(path.name)
        elif path.is_dir():
            entries.append(path.name + "/")
            entries.extend(f"{path.name}/{sub.name}" for sub in sorted(path.glob("*.rs")))
    return entries


def test_every_python_package_and_module_is_mapped() -> None:
    block = _map("python/tokenpact/")
    assert [e for e in _python_entries() if not _named(block, e)] == []


def test_every_rust_module_is_mapped() -> None:
    block = _map("src/")
    missing = []
    for entry in _rust_entries():
        name = entry.rsplit("/", 1)[-1] if entry.endswith(".rs") else entry
        # A file in a directory is named by its own name beside the directory's entry.
        if not (_named(block, entry) or ("/" in entry.rstrip("/") and _named(block, name))):
            missing.append(entry)
    assert missing == []


def test_the_map_names_nothing_that_is_gone() -> None:
    python = set(_python_entries())
    block = _map("python/tokenpact/")
    named = set(re.findall(r"^  ([a-z_]+(?:\.py|/))", block, re.MULTILINE))
    assert sorted(named - python) == []
    rust = {e for e in _rust_entries() if e.count("/") <= 1}
    block = _map("src/")
    named = set(re.findall(r"^  ([a-z_]+(?:\.rs|/))", block, re.MULTILINE))
    assert sorted(named - rust) == []
