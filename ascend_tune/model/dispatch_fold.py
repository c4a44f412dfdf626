"""The shape-generic model's statements made readable before they become C++
(:mod:`.dispatch_cpp`): constants folded, dead branches and unused values gone, short
single-use values written where they are used, and every value that stays named for what it
prices (the stage, loop or derived value whose arithmetic wrote it, :attr:`Writer.labels`).

Only the text changes, never the arithmetic: a folded constant is the value Python computes
for it (with the kernel's own helpers), which is the value the C++ computes (the operations
and their order are Python's, :mod:`.dispatch_cpp`); an inlined value is the same expression
computed at its one use instead of before it (the expressions have no side effects, and the
C++ helpers are total). So the compiled model still returns the Python function's bits
(tests/test_dispatch.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Longest expression (as Python text) written into its one use rather than named.
INLINE_CHARS = 72
_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class Statement:
    name: str
    value: ast.expr
    label: str  # what it prices: a stage, loop, side or derived value's name


def names_read(node: ast.AST) -> list[str]:
    """The names ``node`` reads, in order, repeats included."""
    return _names(node)


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)]


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.values.get(node.id, node) if isinstance(node.ctx, ast.Load) else node


class _Fold(ast.NodeTransformer):
    """Every operation whose operands are all constants replaced by its value; a conditional
    with a constant test (or two equal branches) replaced by the branch it takes."""

    def __init__(self, scope: Mapping[str, Any]) -> None:
        self.scope = {"float": float, "int": int, **scope}

    def _value(self, node: ast.expr, as_bool: bool = False) -> ast.expr:
        try:
            value = eval(compile(ast.fix_missing_locations(ast.Expression(node)),
                                 "<fold>", "eval"), dict(self.scope))
        except Exception:  # the C++ computes it at run time, as before
            return node
        if as_bool:
            value = bool(value)
        if isinstance(value, (bool, float)):
            return ast.Constant(value)
        if isinstance(value, int) and _INT64[0] <= value <= _INT64[1]:
            return ast.Constant(value)
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if isinstance(node, ast.IfExp):
            if isinstance(node.test, ast.Constant):
                return node.body if node.test.value else node.orelse
            if ast.dump(node.body) == ast.dump(node.orelse):
                return node.body
            return node
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                    and not (isinstance(node, ast.Call) and c is node.func)]
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Call)) \
                and children and all(isinstance(c, ast.Constant) for c in children):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                                   and node.func.id in self.scope):
                return node
            return self._value(node, as_bool=isinstance(node, (ast.Compare, ast.BoolOp)))
        return node


def simplify(fn: ast.FunctionDef, labels: Mapping[str, str], scope: Mapping[str, Any],
             varying: frozenset[str] = frozenset()) -> tuple[list[Statement], ast.expr]:
    """``fn``'s straight-line body as the statements that remain and the returned value.
    ``varying``: the arguments that change between calls for one shape (the configuration);
    a value that reads none of them is never written into one that does (it stays a
    statement of its own, which the caller computes once per shape, :func:`shape_only`)."""
    fold = _Fold(scope)
    known: dict[str, ast.expr] = {}  # constants and plain copies: written where read
    kept: list[Statement] = []
    result: ast.expr | None = None
    for st in fn.body:
        if isinstance(st, ast.Assign):
            target = st.targets[0]
            assert isinstance(target, ast.Name)
            value = fold.visit(_Substitute(known).visit(st.value))
            if isinstance(value, (ast.Constant, ast.Name)):
                known[target.id] = value
            else:
                kept.append(Statement(target.id, value, labels.get(target.id, "")))
        elif isinstance(st, ast.Return) and st.value is not None:
            result = fold.visit(_Substitute(known).visit(st.value))
    assert result is not None
    # Unused values go (from the end back, so what only they read goes too).
    live = set(_names(result))
    alive: list[Statement] = []
    for s in reversed(kept):
        if s.name in live:
            alive.append(s)
            live.update(_names(s.value))
    alive.reverse()
    alive, same = _common_values(_named_powers(alive))
    result = _Substitute(same).visit(result)
    fixed = shape_only(alive, varying)
    # A short value read once, by the same stage's arithmetic, is written where it is read.
    uses: dict[str, int] = {}
    for node in [*(s.value for s in alive), result]:
        for n in _names(node):
            uses[n] = uses.get(n, 0) + 1
    reader: dict[str, tuple[str, bool]] = {}  # label and tier of the first statement reading it
    for s in alive:
        for n in _names(s.value):
            reader.setdefault(n, (s.label, s.name in fixed))
    inline: dict[str, ast.expr] = {}
    out: list[Statement] = []
    for s in alive:
        value = _Substitute(inline).visit(s.value)
        if uses.get(s.name) == 1 and reader.get(s.name) == (s.label, s.name in fixed) \
                and len(ast.unparse(value)) <= INLINE_CHARS:
            inline[s.name] = value
            continue
        out.append(Statement(s.name, value, s.label))
    return out, _Substitute(inline).visit(result)


def shape_only(statements: list[Statement], varying: frozenset[str]) -> set[str]:
    """The statements whose value reads none of ``varying``, directly or through another
    statement: for one shape they are the same on every call."""
    moving = set(varying)
    fixed: set[str] = set()
    for s in statements:
        if moving.intersection(_names(s.value)):
            moving.add(s.name)
        else:
            fixed.add(s.name)
    return fixed


class _Powers(ast.NodeTransformer):
    """Every ``a ** b`` of one statement (innermost first) taken out as a value of its own."""

    def __init__(self, name: str, label: str) -> None:
        self.name, self.label = name, label
        self.taken: list[Statement] = []

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if not isinstance(node.op, ast.Pow):
            return node
        name = f"{self.name}_pow{len(self.taken)}"
        self.taken.append(Statement(name, node, self.label))
        return ast.Name(name, ast.Load())


def _named_powers(statements: list[Statement]) -> list[Statement]:
    """Each power of a statement as a statement of its own before it, so that equal powers
    (the same ``pow`` in several stages) become one value and a power of the shape alone is
    computed once per shape. A power is a pure function of its operands (libm ``pow``;
    nothing the C++ computes raises), so computing it before its statement, or in a branch
    of a conditional that is not taken, changes no result."""
    out: list[Statement] = []
    for s in statements:
        if isinstance(s.value, ast.BinOp) and isinstance(s.value.op, ast.Pow):
            powers = _Powers(s.name, s.label)
            left = powers.visit(s.value.left)
            right = powers.visit(s.value.right)
            out += powers.taken
            out.append(Statement(s.name, ast.BinOp(left, ast.Pow(), right), s.label))
            continue
        powers = _Powers(s.name, s.label)
        value = powers.visit(s.value)
        out += powers.taken
        out.append(Statement(s.name, value, s.label))
    return out


def _common_values(statements: list[Statement]
                   ) -> tuple[list[Statement], dict[str, ast.expr]]:
    """A statement computing what an earlier one computes (the same expression of the same
    values) replaced by that one: the expressions are pure, so it is the same value."""
    first: dict[str, str] = {}  # expression -> the first statement computing it
    same: dict[str, ast.expr] = {}
    out: list[Statement] = []
    for s in statements:
        value = _Substitute(same).visit(s.value)
        key = ast.dump(value)
        if key in first:
            same[s.name] = ast.Name(first[key], ast.Load())
            continue
        first[key] = s.name
        out.append(Statement(s.name, value, s.label))
    return out, same


def readable_names(statements: list[Statement]) -> dict[str, str]:
    """Each statement's new name: its label (letters, digits, underscores) and a number."""
    count: dict[str, int] = {}
    names: dict[str, str] = {}
    for s in statements:
        label = re.sub(r"[^A-Za-z0-9_]", "_", s.label).strip("_") or "model"
        if label[0].isdigit():
            label = "x" + label
        n = count.get(label, 0)
        count[label] = n + 1
        names[s.name] = f"{label}_{n}"
    return names


def rename(node: ast.expr, names: Mapping[str, str]) -> ast.expr:
    """``node`` reading each name of ``names`` by its new name."""
    out: ast.expr = _Substitute({k: ast.Name(v, ast.Load())
                                 for k, v in names.items()}).visit(node)
    return out
