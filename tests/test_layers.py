"""The import rules of docs/architecture.md, enforced: each package imports only the packages
below it (its floor), read off every import statement in the source, function-level imports
included. A new import that breaks a rule fails here with the file, line and rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ascend_tune"

# What each package of ascend_tune may import besides itself. Order is the floor plan: base at
# the bottom, the command line at the top. model and results never import each other; search,
# calibrate and emit never import each other, and emit never imports the model or the search.
# (``ascend_tune.__version__`` is a constant in the top __init__, which imports nothing.)
_FLOOR = ("base", "__version__")
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "expr": frozenset(_FLOOR),
    "hardware": frozenset(_FLOOR),
    "spec": frozenset({*_FLOOR, "expr", "hardware"}),
    "model": frozenset({*_FLOOR, "expr", "hardware", "spec"}),
    "results": frozenset({*_FLOOR, "expr", "hardware", "spec"}),
    "search": frozenset({*_FLOOR, "expr", "hardware", "spec", "model"}),
    "calibrate": frozenset({*_FLOOR, "expr", "hardware", "spec", "model", "results"}),
    "emit": frozenset({*_FLOOR, "expr", "hardware", "spec", "results"}),
    # tune judges a range of shapes by the dispatch the emitted code would do (emit.selection).
    "tune": frozenset({*_FLOOR, "expr", "hardware", "spec", "model", "search", "results",
                       "emit"}),
    "hil": frozenset({*_FLOOR, "expr", "hardware", "spec", "model", "search", "results",
                      "tune", "emit", "calibrate"}),
    "report": frozenset({*_FLOOR, "expr", "hardware", "spec", "model", "results", "tune",
                         "emit", "calibrate"}),
    # The tuning database stores plain values: it knows nothing of specs, models or files.
    "db": frozenset(_FLOOR),
    "api": frozenset({*_FLOOR, "expr", "hardware", "spec", "model", "search", "results",
                      "tune", "emit", "calibrate", "hil", "report", "db"}),
    # The command line parses, calls the API and prints: it reaches the core only through it.
    "cli": frozenset({*_FLOOR, "api"}),
    "__main__": frozenset({"cli"}),
    "__init__": frozenset(),
}
# Single modules a package may import beyond its floor: emit renders the model's shape-generic
# form into the host code (run-time dispatch ranks candidates by it), and the only piece of
# the model it may reach is that form, never the engine or the search.
EXTRA_MODULES: dict[str, frozenset[str]] = {
    "emit": frozenset({"ascend_tune.model.dispatch", "ascend_tune.model.dispatch_cpp"}),
}
# Inside search, the strategies see only the search seam (Problem, moves, construct).
STRATEGY_ALLOWED = frozenset({"base", "search"})
# At most this many modules sit flat in ascend_tune/ (the rest live in role packages).
FLAT_MODULES_MAX = 10
MODULE_LINES_MAX = 500


def _package_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _module_name(path: Path) -> list[str]:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = ["ascend_tune", *rel.parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, here: list[str] | None = None) -> list[tuple[int, str]]:
    """Every ``ascend_tune`` module or name a file imports, absolute, with its line (``here``:
    the file's dotted module name, split)."""
    tree = ast.parse(path.read_text(), str(path))
    here = here or _module_name(path)
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "ascend_tune":
                found += [(node.lineno, f"ascend_tune.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
    return [(line, m) for line, m in found if m.split(".")[0] == "ascend_tune"]


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_data" not in p.parts)


def test_every_package_has_a_rule() -> None:
    assert {_package_of(p) for p in _sources()} <= set(ALLOWED)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_stay_on_their_floor(path: Path) -> None:
    own = _package_of(path)
    strategy = path.relative_to(PACKAGE).parts[:2] == ("search", "strategies")
    broken = []
    for line, module in _imports(path):
        target = module.split(".")[1] if "." in module else "__init__"
        if target == own and not strategy:
            continue
        allowed = STRATEGY_ALLOWED if strategy else ALLOWED[own]
        if target not in allowed and module not in EXTRA_MODULES.get(own, ()):
            may = ", ".join(sorted(allowed)) or "nothing of ours"
            broken.append(f"{path.relative_to(PACKAGE)}:{line} imports {module} "
                          f"({own} may import {may})")
    assert not broken, "\n".join(broken)


def test_the_rules_see_an_upward_import(tmp_path: Path) -> None:
    # The walk itself: relative and function-level imports resolve to the module they name.
    fake = tmp_path / "probe.py"
    fake.write_text("import numpy\ndef f():\n    from ..emit import render\n"
                    "    from ascend_tune import cli\n    from .costs import x\n")
    assert _imports(fake, ["ascend_tune", "model", "probe"]) == [
        (3, "ascend_tune.emit"), (4, "ascend_tune.cli"), (5, "ascend_tune.model.costs")]


def test_packages_show_the_architecture() -> None:
    flat = [p.name for p in PACKAGE.glob("*.py")]
    assert len(flat) <= FLAT_MODULES_MAX, flat
    long = {str(p.relative_to(PACKAGE)): n for p in _sources()
            if (n := len(p.read_text().splitlines())) > MODULE_LINES_MAX}
    assert not long, long
    # Each package's face states its contract.
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 20, f"{init.relative_to(PACKAGE)} has no contract"


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports anywhere in its text (top level, inside a
    function, under TYPE_CHECKING); ``from pkg import sub`` counts as importing ``pkg.sub``."""
    names = {".".join(_module_name(p)): p for p in _sources()}
    graph: dict[str, set[str]] = {m: set() for m in names}
    for module, path in names.items():
        here = module.split(".")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here if path.name == "__init__.py" else here[:-1]
                    kept = parent[: len(parent) - node.level + 1]
                    base = ".".join(kept + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base
                           for a in node.names]
            graph[module].update(t for t in targets if t in names and t != module)
    return graph


def test_no_import_circles() -> None:
    """A newcomer reads a package bottom-up: no module imports (even only for types) a module
    that imports it back, directly or round a longer circle."""
    graph = _module_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_the_module_graph_sees_submodule_imports() -> None:
    # ``from ascend_tune.cli import console`` is an edge to cli.console, not to cli.
    graph = _module_graph()
    assert "ascend_tune.cli.app" in graph["ascend_tune.cli.search"]
    assert "ascend_tune.cli.search" in graph["ascend_tune.cli"]
