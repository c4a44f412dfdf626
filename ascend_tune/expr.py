"""The spec expression language: parsed once, evaluated with numpy, rendered to C++.

One small, safe language is used everywhere a spec computes something: parameter domains,
derived values, constraints, pipeline volumes, tiling fields. Each expression is parsed with
:mod:`ast` and checked node by node against a whitelist; nothing the user writes is ever passed
to ``eval``. A checked expression compiles twice:

* to a tree of numpy closures, so thousands of candidate configurations are scored in one pass;
* to a C++ expression, so emitted host code recomputes derived fields exactly as the model did.

Integer semantics (identical in numpy and in the emitted C++):

* integers are signed 64-bit; tiling quantities (bytes, elements, counts) stay far below 2**63,
  and results beyond that range are undefined in both back ends;
* ``a // b`` and ``a % b`` follow Python (floor division, result of ``%`` has the sign of ``b``);
* ``a / b`` is true division and always gives a float (C++ ``double``);
* ``ceil_div(a, b)`` rounds towards +infinity; ``align_up(x, a) = ceil_div(x, a) * a``,
  ``align_down(x, a) = (x // a) * a``;
* division, modulo, ``ceil_div`` and the ``align_*`` helpers by zero give 0 instead of trapping,
  so a candidate with a zero divisor is scored (usually as invalid by a constraint) rather than
  crashing a whole batch;
* ``a ** n`` needs a literal exponent ``0 <= n <= 64``;
* ``log2(x)`` is the float base-2 logarithm, defined as 0 for ``x <= 0``;
* ``pow2_ceil(x)`` / ``pow2_floor(x)`` round an integer to a power of two (1 for ``x <= 1``);
* booleans used as numbers are 0 or 1; an int mixed with a float is promoted to float.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Union

import numpy as np

from ascend_tune.errors import ExprError, did_you_mean

MAX_SOURCE_CHARS = 2000
MAX_NESTING = 40
MAX_NODES = 400
MAX_POW_EXPONENT = 64

Value = Union[np.ndarray, int, float, bool, np.generic]
Env = Mapping[str, Value]


class Kind(Enum):
    """Static type of an expression."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"


FUNCTIONS: dict[str, tuple[int, int]] = {
    # name: (min args, max args)
    "ceil_div": (2, 2),
    "align_up": (2, 2),
    "align_down": (2, 2),
    "min": (2, 8),
    "max": (2, 8),
    "clamp": (3, 3),
    "log2": (1, 1),
    "is_pow2": (1, 1),
    "pow2_ceil": (1, 1),
    "pow2_floor": (1, 1),
    "where": (3, 3),
    "abs": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
}

NAMESPACES = ("hw", "sizeof")


# --------------------------------------------------------------------------------------------
# The checked tree. Each node knows its static kind; evaluation and C++ rendering are methods.


@dataclass(frozen=True)
class Node:
    kind: Kind

    def evaluate(self, env: Env) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def cpp(self, names: Callable[[str], str]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _as_int(x: Any) -> Any:
    return np.asarray(x).astype(np.int64) if isinstance(x, np.ndarray) else int(x)


def _cpp_cast(node: Node, to: Kind, names: Callable[[str], str]) -> str:
    text = node.cpp(names)
    if node.kind == to:
        return text
    if to is Kind.FLOAT:
        return f"static_cast<double>({text})"
    if to is Kind.INT:
        return f"static_cast<int64_t>({text})"
    return f"(({text}) != 0)"


def _promote(*kinds: Kind) -> Kind:
    return Kind.FLOAT if Kind.FLOAT in kinds else Kind.INT


@dataclass(frozen=True)
class Const(Node):
    value: int | float | bool = 0

    def evaluate(self, env: Env) -> Any:
        return self.value

    def cpp(self, names: Callable[[str], str]) -> str:
        if self.kind is Kind.BOOL:
            return "true" if self.value else "false"
        if self.kind is Kind.INT:
            return f"INT64_C({int(self.value)})"
        text = repr(float(self.value))
        return text if ("." in text or "e" in text) else text + ".0"


@dataclass(frozen=True)
class Var(Node):
    name: str = ""

    def evaluate(self, env: Env) -> Any:
        return env[self.name]

    def cpp(self, names: Callable[[str], str]) -> str:
        return names(self.name)


@dataclass(frozen=True)
class Unary(Node):
    op: str = ""
    operand: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def evaluate(self, env: Env) -> Any:
        x = self.operand.evaluate(env)
        if self.op == "not":
            return np.logical_not(x)
        if self.op == "-":
            return -_as_int(x) if self.operand.kind is Kind.BOOL else np.negative(x)
        return x

    def cpp(self, names: Callable[[str], str]) -> str:
        if self.op == "not":
            return f"(!{_cpp_cast(self.operand, Kind.BOOL, names)})"
        inner = _cpp_cast(self.operand, self.kind, names)
        return f"({self.op}{inner})"


def _pow2(x: np.ndarray, up: bool) -> Any:
    """Exact integer power-of-two rounding (the float log2 guess is corrected both ways)."""
    xs = np.maximum(x, 1)
    guess = np.left_shift(np.int64(1), np.floor(np.log2(xs.astype(np.float64))).astype(np.int64))
    guess = np.where(guess > xs, guess // 2, guess)
    guess = np.where(guess * 2 <= xs, guess * 2, guess)  # now the largest power <= x
    if up:
        guess = np.where(guess < xs, guess * 2, guess)
    return guess


def _safe(b: Any) -> Any:
    return np.where(b == 0, 1, b)


@dataclass(frozen=True)
class Binary(Node):
    op: str = ""
    left: Node = field(default_factory=lambda: Const(Kind.INT, 0))
    right: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def evaluate(self, env: Env) -> Any:
        a = self.left.evaluate(env)
        b = self.right.evaluate(env)
        if self.left.kind is Kind.BOOL:
            a = _as_int(a)
        if self.right.kind is Kind.BOOL:
            b = _as_int(b)
        op = self.op
        if op == "+":
            return np.add(a, b)
        if op == "-":
            return np.subtract(a, b)
        if op == "*":
            return np.multiply(a, b)
        if op == "/":
            af = np.asarray(a, dtype=np.float64)
            return np.where(b == 0, 0.0, af / _safe(b))
        if op == "//":
            if self.kind is Kind.INT:
                return np.where(b == 0, 0, np.floor_divide(a, _safe(b)))
            return np.where(b == 0, 0.0, np.floor(np.asarray(a, dtype=np.float64) / _safe(b)))
        if op == "%":
            if self.kind is Kind.INT:
                return np.where(b == 0, 0, np.mod(a, _safe(b)))
            af = np.asarray(a, dtype=np.float64)
            return np.where(b == 0, 0.0, af - b * np.floor(af / _safe(b)))
        if op == "**":
            # The exponent is a checked literal, so repeated multiplication is bounded.
            result: Any = np.ones_like(a) if isinstance(a, np.ndarray) else type(a)(1)
            for _ in range(int(b)):
                result = np.multiply(result, a)
            return result
        raise AssertionError(op)  # pragma: no cover

    def cpp(self, names: Callable[[str], str]) -> str:
        k = self.kind
        a = _cpp_cast(self.left, k, names)
        b = _cpp_cast(self.right, k, names)
        op = self.op
        if op in "+-*":
            return f"({a} {op} {b})"
        if op == "/":
            a = _cpp_cast(self.left, Kind.FLOAT, names)
            b = _cpp_cast(self.right, Kind.FLOAT, names)
            return f"at_fdiv({a}, {b})"
        if op == "//":
            return f"at_floordiv({a}, {b})"
        if op == "%":
            return f"at_mod({a}, {b})"
        if op == "**":
            return f"at_pow({a}, {self.right.cpp(names)})"
        raise AssertionError(op)  # pragma: no cover


_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


@dataclass(frozen=True)
class Compare(Node):
    op: str = ""
    left: Node = field(default_factory=lambda: Const(Kind.INT, 0))
    right: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def evaluate(self, env: Env) -> Any:
        return _CMP[self.op](self.left.evaluate(env), self.right.evaluate(env))

    def cpp(self, names: Callable[[str], str]) -> str:
        k = _promote(self.left.kind, self.right.kind)
        if self.left.kind is Kind.BOOL and self.right.kind is Kind.BOOL:
            k = Kind.BOOL
        return f"({_cpp_cast(self.left, k, names)} {self.op} {_cpp_cast(self.right, k, names)})"


@dataclass(frozen=True)
class BoolOp(Node):
    op: str = ""
    operands: tuple[Node, ...] = ()

    def evaluate(self, env: Env) -> Any:
        fn = np.logical_and if self.op == "and" else np.logical_or
        result = self.operands[0].evaluate(env)
        for node in self.operands[1:]:
            result = fn(result, node.evaluate(env))
        return result

    def cpp(self, names: Callable[[str], str]) -> str:
        joiner = " && " if self.op == "and" else " || "
        return "(" + joiner.join(_cpp_cast(n, Kind.BOOL, names) for n in self.operands) + ")"


@dataclass(frozen=True)
class Call(Node):
    fn: str = ""
    args: tuple[Node, ...] = ()

    def evaluate(self, env: Env) -> Any:
        vals = [a.evaluate(env) for a in self.args]
        vals = [_as_int(v) if a.kind is Kind.BOOL and self.fn != "where" else v
                for v, a in zip(vals, self.args, strict=False)]
        fn = self.fn
        if fn == "ceil_div":
            a, b = vals
            return np.where(b == 0, 0, -np.floor_divide(np.negative(a), _safe(b)))
        if fn == "align_up":
            x, a = vals
            return np.where(a == 0, 0, -np.floor_divide(np.negative(x), _safe(a)) * a)
        if fn == "align_down":
            x, a = vals
            return np.where(a == 0, 0, np.floor_divide(x, _safe(a)) * a)
        if fn in ("min", "max"):
            reduce = np.minimum if fn == "min" else np.maximum
            result = vals[0]
            for v in vals[1:]:
                result = reduce(result, v)
            return result
        if fn == "clamp":
            x, lo, hi = vals
            return np.minimum(np.maximum(x, lo), hi)
        if fn == "log2":
            x = np.asarray(vals[0], dtype=np.float64)
            return np.where(x > 0, np.log2(np.where(x > 0, x, 1.0)), 0.0)
        if fn == "is_pow2":
            x = np.asarray(vals[0], dtype=np.int64)
            return np.logical_and(x > 0, np.bitwise_and(x, x - 1) == 0)
        if fn in ("pow2_ceil", "pow2_floor"):
            return _pow2(np.asarray(vals[0], dtype=np.int64), fn == "pow2_ceil")
        if fn == "where":
            return np.where(vals[0], vals[1], vals[2])
        if fn == "abs":
            return np.abs(vals[0])
        if fn in ("floor", "ceil"):
            rounder = np.floor if fn == "floor" else np.ceil
            return rounder(np.asarray(vals[0], dtype=np.float64)).astype(np.int64)
        raise AssertionError(fn)  # pragma: no cover

    def cpp(self, names: Callable[[str], str]) -> str:
        fn = self.fn
        if fn in ("ceil_div", "align_up", "align_down", "is_pow2", "pow2_ceil", "pow2_floor"):
            args = ", ".join(_cpp_cast(a, Kind.INT, names) for a in self.args)
            return f"at_{fn}({args})"
        if fn == "log2":
            return f"at_log2({_cpp_cast(self.args[0], Kind.FLOAT, names)})"
        if fn in ("floor", "ceil"):
            return f"at_{fn}({_cpp_cast(self.args[0], Kind.FLOAT, names)})"
        if fn == "where":
            cond = _cpp_cast(self.args[0], Kind.BOOL, names)
            a = _cpp_cast(self.args[1], self.kind, names)
            b = _cpp_cast(self.args[2], self.kind, names)
            return f"(({cond}) ? ({a}) : ({b}))"
        rendered = [_cpp_cast(a, self.kind, names) for a in self.args]
        if fn in ("min", "max"):
            text = rendered[0]
            for arg in rendered[1:]:
                text = f"at_{fn}({text}, {arg})"
            return text
        if fn == "clamp":
            return f"at_min(at_max({rendered[0]}, {rendered[1]}), {rendered[2]})"
        if fn == "abs":
            return f"at_abs({rendered[0]})"
        raise AssertionError(fn)  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Checking: from a Python AST to the tree above, or an ExprError naming the offending token.


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}
_INT_ONLY = {"ceil_div", "align_up", "align_down", "is_pow2", "pow2_ceil", "pow2_floor"}


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
        return ExprError(f"{prefix}{message}{token} in expression '{_short(self.source)}'")

    def check(self, node: ast.AST, depth: int = 0) -> Node:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(f"expression is too long (more than {MAX_NODES} nodes)")
        if depth > MAX_NESTING:
            raise self.fail(f"expression nests deeper than {MAX_NESTING} levels")
        d = depth + 1
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return Const(Kind.BOOL, v)
            if isinstance(v, int):
                if abs(v) >= 2**62:
                    raise self.fail("integer literal out of range", node)
                return Const(Kind.INT, v)
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise self.fail("float literal must be finite", node)
                return Const(Kind.FLOAT, v)
            raise self.fail(f"literal of type {type(v).__name__} is not allowed", node)
        if isinstance(node, ast.Name):
            return self._name(node.id, node)
        if isinstance(node, ast.Attribute):
            if not isinstance(node.value, ast.Name) or node.value.id not in NAMESPACES:
                raise self.fail("attribute access is only allowed as hw.<field> or "
                                "sizeof.<tensor>", node)
            return self._name(f"{node.value.id}.{node.attr}", node)
        if isinstance(node, ast.UnaryOp):
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
        if isinstance(node, ast.BinOp):
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
            bin_kind = Kind.FLOAT if opname == "/" else _promote(left.kind, right.kind)
            return Binary(bin_kind, opname, left, right)
        if isinstance(node, ast.BoolOp):
            ops = tuple(self.check(v, d) for v in node.values)
            return BoolOp(Kind.BOOL, "and" if isinstance(node.op, ast.And) else "or", ops)
        if isinstance(node, ast.Compare):
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
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.fail("only plain function calls are allowed", node)
            fn = node.func.id
            if fn not in FUNCTIONS:
                raise self.fail(f"unknown function '{fn}'{did_you_mean(fn, FUNCTIONS)}; "
                                f"allowed: {', '.join(sorted(FUNCTIONS))}", node)
            if node.keywords:
                raise self.fail(f"'{fn}' takes no keyword arguments", node)
            lo, hi = FUNCTIONS[fn]
            if not lo <= len(node.args) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise self.fail(f"'{fn}' takes {want} arguments, got {len(node.args)}", node)
            args = tuple(self.check(a, d) for a in node.args)
            return self._call(fn, args, node)
        if isinstance(node, ast.IfExp):
            raise self.fail("'x if c else y' is not allowed; use where(c, x, y)", node)
        if isinstance(node, ast.Lambda):
            raise self.fail("lambda is not allowed", node)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            raise self.fail("comprehensions are not allowed", node)
        if isinstance(node, ast.Subscript):
            raise self.fail("subscripts are not allowed", node)
        raise self.fail(f"{type(node).__name__} is not allowed", node)

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
        if fn in _INT_ONLY and any(a.kind is Kind.FLOAT for a in args):
            raise self.fail(f"'{fn}' needs integer arguments", node)
        if fn == "is_pow2":
            return Call(Kind.BOOL, fn, args)
        if fn in _INT_ONLY:
            return Call(Kind.INT, fn, args)
        if fn == "log2":
            return Call(Kind.FLOAT, fn, args)
        if fn in ("floor", "ceil"):
            return Call(Kind.INT, fn, args)
        if fn == "where":
            return Call(_promote(args[1].kind, args[2].kind), fn, args)
        if fn == "abs":
            return Call(_promote(args[0].kind), fn, args)
        return Call(_promote(*(a.kind for a in args)), fn, args)


def _short(source: str) -> str:
    return source if len(source) <= 80 else source[:77] + "..."


# --------------------------------------------------------------------------------------------
# Public API


@dataclass(frozen=True)
class Expr:
    """A checked expression: evaluate it with numpy or render it as C++."""

    source: str
    root: Node
    names: frozenset[str]

    @property
    def kind(self) -> Kind:
        return self.root.kind

    @property
    def is_constant(self) -> bool:
        return not self.names

    def evaluate(self, env: Env) -> Any:
        """Evaluate over scalars or numpy arrays (broadcast, one element per candidate)."""
        with np.errstate(all="ignore"):  # overflow is outside the language (see module doc)
            return self.root.evaluate(env)

    def to_cpp(self, names: Callable[[str], str]) -> str:
        """Render as a C++17 expression using the helpers in :data:`CPP_RUNTIME`."""
        return self.root.cpp(names)


def scalar_value(value: Any) -> bool | int | float:
    """The Python value of a one-element evaluation result (bool, int or float)."""
    v = np.asarray(value).reshape(-1)[0]
    if v.dtype.kind == "b":
        return bool(v)
    if v.dtype.kind in "iu":
        return int(v)
    return float(v)


def parse(source: object, symbols: Mapping[str, Kind], where: str = "") -> Expr:
    """Check ``source`` against the whitelist and the known ``symbols``.

    ``source`` may be a YAML scalar (int, float, bool) or a string. ``where`` prefixes error
    messages with the spec file and key path.
    """
    prefix = f"{where}: " if where else ""
    if isinstance(source, bool):
        return Expr(str(source), Const(Kind.BOOL, source), frozenset())
    if isinstance(source, int):
        return Expr(str(source), Const(Kind.INT, source), frozenset())
    if isinstance(source, float):
        if not math.isfinite(source):
            raise ExprError(f"{prefix}float value must be finite")
        return Expr(repr(source), Const(Kind.FLOAT, source), frozenset())
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
                        f"in '{_short(text)}'")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ExprError(f"{prefix}syntax error{col} in expression '{_short(text)}'") from None
    except (ValueError, RecursionError, MemoryError):
        raise ExprError(f"{prefix}cannot parse expression '{_short(text)}'") from None
    checker = _Checker(text, symbols, where)
    root = checker.check(tree.body)
    return Expr(text, root, frozenset(checker.names))


CPP_RUNTIME = r"""// Integer semantics of the ascend-tune expression language (ascend_tune/expr.py).
#ifndef ASCEND_TUNE_EXPR_RUNTIME_V1
#define ASCEND_TUNE_EXPR_RUNTIME_V1
#include <cmath>
#include <cstdint>
namespace ascend_tune_rt {
inline int64_t at_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
inline double at_floordiv(double a, double b) { return b == 0.0 ? 0.0 : std::floor(a / b); }
inline int64_t at_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
inline double at_mod(double a, double b) { return b == 0.0 ? 0.0 : a - b * std::floor(a / b); }
inline double at_fdiv(double a, double b) { return b == 0.0 ? 0.0 : a / b; }
inline int64_t at_ceil_div(int64_t a, int64_t b) { return b == 0 ? 0 : -at_floordiv(-a, b); }
inline int64_t at_align_up(int64_t x, int64_t a) { return at_ceil_div(x, a) * a; }
inline int64_t at_align_down(int64_t x, int64_t a) { return at_floordiv(x, a) * a; }
inline int64_t at_min(int64_t a, int64_t b) { return a < b ? a : b; }
inline double at_min(double a, double b) { return a < b ? a : b; }
inline int64_t at_max(int64_t a, int64_t b) { return a > b ? a : b; }
inline double at_max(double a, double b) { return a > b ? a : b; }
inline int64_t at_abs(int64_t a) { return a < 0 ? -a : a; }
inline double at_abs(double a) { return std::fabs(a); }
inline double at_log2(double x) { return x > 0.0 ? std::log2(x) : 0.0; }
inline bool at_is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
inline int64_t at_pow2_floor(int64_t x) {
    int64_t p = 1;
    while (x > 1 && p <= x / 2) p *= 2;
    return p;
}
inline int64_t at_pow2_ceil(int64_t x) {
    int64_t p = at_pow2_floor(x);
    return p < x ? p * 2 : p;
}
inline int64_t at_floor(double x) { return static_cast<int64_t>(std::floor(x)); }
inline int64_t at_ceil(double x) { return static_cast<int64_t>(std::ceil(x)); }
inline int64_t at_pow(int64_t a, int64_t n) { int64_t r = 1; while (n-- > 0) r *= a; return r; }
inline double at_pow(double a, int64_t n) { double r = 1.0; while (n-- > 0) r *= a; return r; }
}  // namespace ascend_tune_rt
#endif  // ASCEND_TUNE_EXPR_RUNTIME_V1
"""
