"""No module but ``core/tokenizer.py`` reads a private attribute of a ``Tokenizer``.

The class's collaborators (the special-token policy, the structured encoder, the token
names) hold their own state and read the tokenizer's public API; every other module does
the same. This walk finds, anywhere in ``python/tokenpact``, a read of one of the
``Tokenizer``'s own private names (its ``_x`` methods, properties and instance
attributes, taken from the class itself) through something that is a tokenizer: a name
``tok``/``tokenizer``, an attribute ``.tok``/``.tokenizer``/``._tok``/``._tokenizer``, a
parameter annotated with ``Tokenizer`` or one of its subclasses, or ``self`` in a
subclass; ``getattr``/``hasattr``/``setattr`` with such a name as a string count too.
Nothing is allowlisted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tokenpact
from tokenpact.core import Tokenizer

PACKAGE = Path(tokenpact.__file__).parent
HOME = PACKAGE / "core" / "tokenizer.py"
# Names a tokenizer goes by, as a variable or as an attribute of its holder.
TOKENIZER_NAMES = {"tok", "tokenizer"}
HOLDER_ATTRS = {"tok", "tokenizer", "_tok", "_tokenizer"}


def _private_names() -> frozenset[str]:
    """The Tokenizer's own private names: class members and ``self._x`` assignments in
    its methods (read from its source, so a new one is covered without a list here)."""
    tree = ast.parse(HOME.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tokenizer")
    names = {n for n in dir(Tokenizer) if n.startswith("_") and not n.startswith("__")}
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            names.add(node.attr)
    return frozenset(names)


PRIVATE = _private_names()


def _annotation_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _subclasses(trees: dict[str, ast.Module]) -> set[str]:
    """``Tokenizer`` and the names of the package's classes derived from it."""
    found = {"Tokenizer"}
    grew = True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in found:
                    bases = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
                    if bases & found:
                        found.add(node.name)
                        grew = True
    return found


class _Walk(ast.NodeVisitor):
    def __init__(self, classes: set[str], private: frozenset[str]) -> None:
        self.classes, self.private = classes, private
        self.scopes: list[set[str]] = [set(TOKENIZER_NAMES)]
        self.found: list[str] = []

    def _is_tokenizer(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.scopes[-1]
        return isinstance(node, ast.Attribute) and node.attr in HOLDER_ATTRS

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
        inner = set(TOKENIZER_NAMES) | ({"self", "cls"} if bases & self.classes else set())
        self.scopes.append(inner)
        self.generic_visit(node)
        self.scopes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        typed = {a.arg for a in args if _annotation_names(a.annotation) & self.classes}
        self.scopes.append(self.scopes[-1] | typed)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.private and self._is_tokenizer(node.value):
            self.found.append(f"{ast.unparse(node)} (line {node.lineno})")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in self.private
            and self._is_tokenizer(node.args[0])
        ):
            self.found.append(f"{ast.unparse(node)} (line {node.lineno})")
        self.generic_visit(node)


def _private_reads(
    source: str, classes: set[str] | None = None, private: frozenset[str] = PRIVATE
) -> list[str]:
    walk = _Walk(classes or {"Tokenizer"}, private)
    walk.visit(ast.parse(source))
    return walk.found


def test_the_private_names_are_the_classes() -> None:
    assert {"_core", "_spec", "_special", "_structured", "_role_id", "_names"} <= PRIVATE
    assert "_encoding_provenance" not in PRIVATE  # not the Tokenizer's own
    assert "__init__" not in PRIVATE


def test_the_walk_finds_a_private_read() -> None:
    source = """
def f(tok, t: Tokenizer, u: "Tokenizer | None", v: int):
    a = tok._core
    b = t._special.gated
    c = u._role_id("unk")
    d = v._core
    e = getattr(tok, "_names", None)
    return self._tokenizer._spec, holder.tokenizer._structured

class Sub(Tokenizer):
    def g(self):
        return self._core.normalize(x), self._own

class Other:
    def h(self):
        return self._core, self._spec
"""
    assert _private_reads(source) == [
        "tok._core (line 3)",
        "t._special (line 4)",
        "u._role_id (line 5)",
        "getattr(tok, '_names', None) (line 7)",
        "self._tokenizer._spec (line 8)",
        "holder.tokenizer._structured (line 8)",
        "self._core (line 12)",
    ]
    # Public reads, a non-tokenizer's own privates and dunders are not findings.
    assert _private_reads("tok.engine\nself._core\ntok.__class__\nx._spec\n") == []


def test_no_module_reads_a_private_tokenizer_attribute() -> None:
    paths = sorted(p for p in PACKAGE.rglob("*.py") if p != HOME)
    trees = {str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8")) for p in paths}
    classes = _subclasses(trees)
    assert {"TekkenTokenizer", "UnigramTokenizer", "CharBpeTokenizer"} <= classes
    found = {}
    for name, tree in trees.items():
        walk = _Walk(classes, PRIVATE)
        walk.visit(tree)
        if walk.found:
            found[name] = walk.found
    assert found == {}
