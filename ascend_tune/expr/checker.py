"""Parsing and checking: from source text to a checked tree, or an error naming the token.

Each expression is parsed with :mod:`ast` and checked node by node against a whitelist
(literals, names the spec declares, ``hw.<field>`` and ``sizeof.<tensor>``, the arithmetic,
comparison and boolean operators, and the functions of :data:`~.functions.FUNCTIONS`);
nothing the user writes is ever passed to ``eval``. The checker gives every node its static
kind (:class:`~.arith.Kind`) and bounds the input: its length, nesting, node count, literal
magnitudes and ``**`` exponents, so that every later stage (evaluation, the C++ and the
Python renderings) sees only trees it handles.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

from ascend_tune.base.errors import ExprError, did_you_mean
from ascend_tune.expr.arith import Kind, promote
from ascend_tune.expr.expression import Expr, short
from ascend_tune.expr.functions import FUNCTIONS
from ascend_tune.expr.nodes import Binary, BoolOp, Call, Compare, Const, Node, Unary, Var

MAX_SOURCE_CHARS = 2000
MAX_NESTING = 40
MAX_NODES = 400
MAX_POW_EXPONENT = 64
MAX_INT_LITERAL = 2**62

NAMESPACES = ("hw", "sizeof")

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


class _Checker:
    def __init__(self, source: str, symbols: Mapping[str, Kind], where: str) -> None:
        self.source = source
        self.symbols = symbols
        self.where = where
        self.count = 0
        self.names: set[str] = set()

    def fail(self, message: str, node: ast.AST | None = None) -> ExprError:
        token = ""
        if node is not None:
            seg = ast.get_source_segment(self.source, node)
            if seg:
                token = f" at '{seg}'" if len(seg) <= 60 else f" at '{seg[:57]}...'"
        prefix = f"{self.where}: " if self.where else ""
        return ExprError(f"{prefix}{message}{token} in expression '{short(self.source)}'")

    def check(self, node: ast.AST, depth: int = 0) -> Node:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(f"expression is too long (more than {MAX_NODES} nodes)")
        if depth > MAX_NESTING:
            raise self.fail(f"expression nests deeper than {MAX_NESTING} levels")
        build = _BUILDERS.get(type(node))
        if build is not None:
            return build(self, node, depth + 1)
        refused = next((why for kinds, why in _REFUSED if isinstance(node, kinds)), None)
        raise self.fail(refused or f"{type(node).__name__} is not allowed", node)

    def _constant(self, node: ast.Constant, _d: int) -> Node:
        v = node.value
        if isinstance(v, bool):
            return Const(Kind.BOOL, v)
        if isinstance(v, int):
            if abs(v) >= MAX_INT_LITERAL:
                raise self.fail("integer literal out of range (integer literals must be "
                                "below 2**62 in magnitude)", node)
            return Const(Kind.INT, v)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.fail("float literal must be finite", node)
            return Const(Kind.FLOAT, v)
        raise self.fail(f"literal of type {type(v).__name__} is not allowed", node)

    def _plain_name(self, node: ast.Name, _d: int) -> Node:
        return self._name(node.id, node)

    def _attribute(self, node: ast.Attribute, _d: int) -> Node:
        if not isinstance(node.value, ast.Name) or node.value.id not in NAMESPACES:
            raise self.fail("attribute access is only allowed as hw.<field> or "
                            "sizeof.<tensor>", node)
        return self._name(f"{node.value.id}.{node.attr}", node)

    def _unary(self, node: ast.UnaryOp, d: int) -> Node:
        operand = self.check(node.operand, d)
        if isinstance(node.op, ast.Not):
            return Unary(Kind.BOOL, "not", operand)
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            op = "-" if isinstance(node.op, ast.USub) else "+"
            kind = Kind.INT if operand.kind is Kind.BOOL else operand.kind
            if isinstance(operand, Const) and op == "-" and operand.kind is not Kind.BOOL:
                return Const(kind, -operand.value)
            return Unary(kind, op, operand)
        raise self.fail("operator '~' is not allowed", node)

    def _binop(self, node: ast.BinOp, d: int) -> Node:
        opname = _BINOPS.get(type(node.op))
        if opname is None:
            raise self.fail(f"operator {type(node.op).__name__} is not allowed", node)
        left = self.check(node.left, d)
        if opname == "**":
            right_node = node.right
            exp = right_node.value if isinstance(right_node, ast.Constant) else None
            if isinstance(exp, bool) or not isinstance(exp, int) or not (
                0 <= exp <= MAX_POW_EXPONENT
            ):
                raise self.fail("'**' needs a literal integer exponent between 0 and "
                                f"{MAX_POW_EXPONENT}", node)
            pow_kind = Kind.INT if left.kind is Kind.BOOL else left.kind
            return Binary(pow_kind, "**", left, Const(Kind.INT, exp))
        right = self.check(node.right, d)
        bin_kind = Kind.FLOAT if opname == "/" else promote(left.kind, right.kind)
        return Binary(bin_kind, opname, left, right)

    def _boolop(self, node: ast.BoolOp, d: int) -> Node:
        ops = tuple(self.check(v, d) for v in node.values)
        return BoolOp(Kind.BOOL, "and" if isinstance(node.op, ast.And) else "or", ops)

    def _compare(self, node: ast.Compare, d: int) -> Node:
        parts: list[Node] = []
        left = self.check(node.left, d)
        for cmp, comparator in zip(node.ops, node.comparators, strict=False):
            cmpname = _CMPOPS.get(type(cmp))
            if cmpname is None:
                raise self.fail(f"comparison {type(cmp).__name__} is not allowed", node)
            right = self.check(comparator, d)
            parts.append(Compare(Kind.BOOL, cmpname, left, right))
            left = right
        return parts[0] if len(parts) == 1 else BoolOp(Kind.BOOL, "and", tuple(parts))

    def _call_node(self, node: ast.Call, d: int) -> Node:
        if not isinstance(node.func, ast.Name):
            raise self.fail("only plain function calls are allowed", node)
        fn = node.func.id
        if fn not in FUNCTIONS:
            raise self.fail(f"unknown function '{fn}'{did_you_mean(fn, FUNCTIONS)}; "
                            f"allowed: {', '.join(sorted(FUNCTIONS))}", node)
        if node.keywords:
            raise self.fail(f"'{fn}' takes no keyword arguments", node)
        lo, hi = FUNCTIONS[fn].min_args, FUNCTIONS[fn].max_args
        if not lo <= len(node.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise self.fail(f"'{fn}' takes {want} arguments, got {len(node.args)}", node)
        args = tuple(self.check(a, d) for a in node.args)
        return self._call(fn, args, node)

    def _name(self, name: str, node: ast.AST) -> Node:
        if name.startswith("__") or ".__" in name:
            raise self.fail(f"name '{name}' is not allowed", node)
        kind = self.symbols.get(name)
        if kind is None:
            if name in FUNCTIONS:
                raise self.fail(f"'{name}' is a function; call it as {name}(...)", node)
            raise self.fail(f"unknown name '{name}'{did_you_mean(name, self.symbols)}", node)
        self.names.add(name)
        return Var(kind, name)

    def _call(self, fn: str, args: tuple[Node, ...], node: ast.AST) -> Node:
        function = FUNCTIONS[fn]
        if function.int_args and any(a.kind is Kind.FLOAT for a in args):
            raise self.fail(f"'{fn}' needs integer arguments", node)
        return Call(function.result(tuple(a.kind for a in args)), fn, args)


def parse(source: object, symbols: Mapping[str, Kind], where: str = "") -> Expr:
    """Check ``source`` against the whitelist and the known ``symbols``.

    ``source`` may be a YAML scalar (int, float, bool) or a string. ``where`` prefixes error
    messages with the spec file and key path.
    """
    prefix = f"{where}: " if where else ""
    if isinstance(source, bool):
        return Expr(str(source), Const(Kind.BOOL, source), frozenset(), where)
    if isinstance(source, int):
        if abs(source) >= MAX_INT_LITERAL:
            raise ExprError(f"{prefix}integer {short(str(source))} is out of range "
                            f"(integer literals must be below 2**62 in magnitude)")
        return Expr(str(source), Const(Kind.INT, source), frozenset(), where)
    if isinstance(source, float):
        if not math.isfinite(source):
            raise ExprError(f"{prefix}float value must be finite")
        return Expr(repr(source), Const(Kind.FLOAT, source), frozenset(), where)
    if not isinstance(source, str):
        raise ExprError(f"{prefix}expected an expression (string or number), "
                        f"got {type(source).__name__}")
    text = source.strip()
    if not text:
        raise ExprError(f"{prefix}empty expression")
    if len(text) > MAX_SOURCE_CHARS:
        raise ExprError(f"{prefix}expression longer than {MAX_SOURCE_CHARS} characters")
    # Reject runaway nesting before the parser sees it: CPython's parser recurses per level.
    depth = peak = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            peak = max(peak, depth)
        elif ch in ")]}":
            depth -= 1
    if peak > MAX_NESTING:
        raise ExprError(f"{prefix}expression nests deeper than {MAX_NESTING} brackets "
                        f"in '{short(text)}'")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ExprError(f"{prefix}syntax error{col} in expression '{short(text)}'") from None
    except (ValueError, RecursionError, MemoryError):
        raise ExprError(f"{prefix}cannot parse expression '{short(text)}'") from None
    checker = _Checker(text, symbols, where)
    root = checker.check(tree.body)
    return Expr(text, root, frozenset(checker.names), where)


# The node types an expression may hold, each with the method that checks and builds it.
_BUILDERS: dict[type, Callable[[Any, Any, int], Node]] = {
    ast.Constant: _Checker._constant,
    ast.Name: _Checker._plain_name,
    ast.Attribute: _Checker._attribute,
    ast.UnaryOp: _Checker._unary,
    ast.BinOp: _Checker._binop,
    ast.BoolOp: _Checker._boolop,
    ast.Compare: _Checker._compare,
    ast.Call: _Checker._call_node,
}

# Python constructs refused with a hint at what to write instead.
_REFUSED: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (ast.IfExp, "'x if c else y' is not allowed; use where(c, x, y)"),
    (ast.Lambda, "lambda is not allowed"),
    ((ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp), "comprehensions are not allowed"),
    (ast.Subscript, "subscripts are not allowed"),
)
