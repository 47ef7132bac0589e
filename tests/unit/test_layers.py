"""The package's imports go one way down the layers, imports inside functions included.

``lint-imports`` (pyproject's contracts) checks the import graph grimp builds; this test
reads every module with ``ast`` itself, so an import hidden in a function body is an edge
too, and checks the same layer order (read from pyproject.toml) plus the absence of
module-level import cycles. Imports under ``if TYPE_CHECKING:`` are for type checkers
and are not edges.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import tokenpact as tp

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before 3.11
    import tomli as tomllib

PACKAGE = Path(tp.__file__).parent
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# Modules at or below the ``files`` layer that reach the package root (``import
# tokenpact``) at run time. The root is the lazy public facade, so these are upward calls
# by public name: the deprecated file methods of Tokenizer and Pipeline.build (aliases of
# tokenpact.files), and contract.replay's default trainer (tokenpact.train_bpe). A new
# entry here is another upward call: pass what it needs in instead.
ROOT_CALLERS = {"tokenpact.components", "tokenpact.contract.replay", "tokenpact.core.tokenizer"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                stack.extend(child.orelse)
            else:
                stack.append(child)
    return found


def _imports(name: str) -> set[str]:
    """The tokenpact modules ``name`` imports at run time (inside functions too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # ``from . import x`` imports the module x when there is one; a name that is
            # not a module is read from ``module`` itself.
            submodules = {f"{module}.{a.name}" for a in node.names} & MODULES.keys()
            targets.update(submodules)
            if len(submodules) < len(node.names):
                targets.add(module)
    return {t for t in targets if t in MODULES and t != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _layers() -> list[list[str]]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")
    assert "ignore_imports" not in layers, "the layers contract ignores no import"
    return [[p.strip() for p in layer.replace(":", "|").split("|")] for layer in layers["layers"]]


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_top_level_module_has_a_layer() -> None:
    named = {p for layer in _layers() for p in layer}
    tops = {_top(m) for m in MODULES} - {None, "_native"}
    assert sorted(tops - named) == []


def test_imports_go_down_the_layers_inside_functions_too() -> None:
    rank = {p: i for i, layer in enumerate(_layers()) for p in layer}
    upward = []
    for source, targets in GRAPH.items():
        src = _top(source)
        for target in targets:
            dst = _top(target)
            if src is None or dst is None or src == dst or dst == "_native":
                continue
            if rank[dst] <= rank[src]:
                upward.append(f"{source} -> {target}")
    assert sorted(upward) == []


def test_below_the_file_functions_only_the_known_modules_call_the_package_root() -> None:
    rank = {p: i for i, layer in enumerate(_layers()) for p in layer}
    low = {n for n in MODULES if _top(n) in rank and rank[_top(n)] >= rank["files"]}
    callers = {name for name in low if _calls_root(MODULES[name])}
    assert callers == ROOT_CALLERS


def _calls_root(path: Path) -> bool:
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "tokenpact" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "tokenpact":
            return True
    return False


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


# Function-level cycles inside one package that are known and accepted (none today). A
# cycle not inside one of these groups fails the test.
KNOWN_CYCLES: tuple[set[str], ...] = ()


def test_no_import_cycle_beyond_the_known_ones() -> None:
    new = [c for c in _cycles() if not any(set(c) <= known for known in KNOWN_CYCLES)]
    assert new == []


def test_the_walk_sees_imports_inside_functions() -> None:
    # tiktoken_registry reads rank files; tiktoken_file never imports it back (not even
    # inside a function, where it once did for the standard table).
    assert "tokenpact.formats.tiktoken_file" in GRAPH["tokenpact.formats.tiktoken_registry"]
    assert "tokenpact.formats.tiktoken_registry" not in GRAPH["tokenpact.formats.tiktoken_file"]
    # A function-level import is an edge: the deprecated aliases import the root in one.
    assert _calls_root(MODULES["tokenpact.core.tokenizer"])
    assert "tokenpact.formats.registry" in GRAPH["tokenpact.files"]


def test_no_contract_ignores_an_import() -> None:
    """Every import-linter contract holds without exceptions: a coupling a feature needs
    goes through a public function (``tokenpact.files``), never an ignored import."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        assert not contract.get("ignore_imports"), contract["name"]
