"""docs/ARCHITECTURE.md's worked example (a toy model added end to end) runs as written."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from tokenpact.formats import registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- example: toy-model -->\n```python\n(.+?)\n```", text, re.DOTALL)
    assert found, "the toy-model example block is missing from docs/ARCHITECTURE.md"
    return found.group(1)


def test_toy_model_example_runs() -> None:
    before = [f.name for f in registry.formats()]
    # A real module: dataclasses look their module up in sys.modules.
    module = types.ModuleType("architecture_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(_example(), str(DOC), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    # The example removes its format again; the built-in table is unchanged.
    assert [f.name for f in registry.formats()] == before


def test_registered_format_wins_over_the_native_fallback(tmp_path: Path) -> None:
    import tokenpact as tp

    tok = tp.Tokenizer.from_merges([(104, 105)])
    saved = tok.save(tmp_path / "native")
    calls: list[Path] = []

    def read(path: Path, options: registry.ReadOptions) -> tuple:
        calls.append(path)
        return registry.format_named("tokenpact_json").read(path, options)

    registry.register(registry.Format("probe", sniff=lambda p: p == saved, read=read))
    try:
        again = tp.Tokenizer.load(saved, verify=False)
    finally:
        registry.unregister("probe")
    assert calls == [saved]
    assert again.encode("hi") == tok.encode("hi") == [256]
