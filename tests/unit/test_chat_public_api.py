"""The chat package uses the tokenizer's public API only: no private attribute of a
tokenizer is read anywhere in ``tokenpact/chat`` (lint-imports keeps it off the core's
internal modules; this walk keeps it off the private attributes)."""

from __future__ import annotations

import ast
from pathlib import Path

import tokenpact

CHAT = Path(tokenpact.__file__).parent / "chat"
# Names a tokenizer goes by in the chat package.
TOKENIZER_NAMES = {"tok", "tokenizer"}


def _private_reads(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in {"getattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and ast.unparse(node.args[0]).split(".")[-1] in TOKENIZER_NAMES
        ):
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__"):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if name in TOKENIZER_NAMES:
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_the_walk_finds_a_private_read() -> None:
    source = "x = template.tokenizer._core\ny = tok._matcher(a)\nz = getattr(tok, '_core', 0)\n"
    assert sorted(_private_reads(source)) == [
        "getattr(tok, '_core', 0) (line 3)",
        "template.tokenizer._core (line 1)",
        "tok._matcher (line 2)",
    ]
    assert _private_reads("x = tok.engine\ny = self._info\n") == []


def test_chat_reads_no_private_tokenizer_attribute() -> None:
    found = {
        path.name: reads
        for path in sorted(CHAT.glob("*.py"))
        if (reads := _private_reads(path.read_text(encoding="utf-8")))
    }
    assert found == {}
