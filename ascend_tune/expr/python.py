"""The one-row Python rendering: a checked tree as straight-line Python on Python numbers.

A local search scores a handful of configurations at a time, where numpy's per-call cost
dominates; the row kernels (:mod:`ascend_tune.model.fastpaths.kernel`) run the model on one
configuration in generated Python instead. This module renders each expression for them,
value for value the numpy fast path (``Node.evaluate`` on proven inputs): integers stay Python
integers, booleans used as numbers become 0 or 1, mixed operands are floats, divisions by zero
give 0, ``min`` / ``max`` keep numpy's nan and signed-zero rules. Only proven trees are
rendered (Python integers do not wrap where numpy's would).

The rendered text calls the helpers of :data:`RUNTIME` (the Python counterpart of
:data:`~.cpp.CPP_RUNTIME`), holds only names the renderer makes and numbers written by
:func:`literal`, and is built with a :class:`Writer` shared with the kernel's own statements.
tests/test_row_kernel.py holds every operator and registry function to numpy, element by
element.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ascend_tune.expr.arith import Kind
from ascend_tune.expr.expression import Expr
from ascend_tune.expr.nodes import Binary, BoolOp, Call, Compare, Const, Node, Unary, Var
from ascend_tune.expr.spans import Span, node_span

# ---- scalar forms of the numpy operations the rendered text calls --------------------------

def _min2(a: Any, b: Any) -> Any:
    """np.minimum on one element: the first operand when it is smaller or nan, else the
    second (so min(0.0, -0.0) is -0.0, as numpy gives)."""
    return a if (a < b or a != a) else b


def _max2(a: Any, b: Any) -> Any:
    """np.maximum on one element (see :func:`_min2`)."""
    return a if (a > b or a != a) else b

def _ffloor(x: float) -> float:
    """np.floor: a float, keeping the sign of a zero x."""
    r = float(math.floor(x))
    return r if r != 0.0 else (0.0 if x > 0.0 else x)


def _fdiv(a: Any, b: Any) -> float:
    """The expression ``/``: float division, 0.0 for a zero divisor."""
    return float(a) / float(b) if b != 0 else 0.0


def _ifloordiv(a: int, b: int) -> int:
    return a // b if b != 0 else 0


def _imod(a: int, b: int) -> int:
    return a % b if b != 0 else 0


def _ffloordiv(a: Any, b: Any) -> float:
    return _ffloor(float(a) / b) if b != 0 else 0.0


def _fmod(a: Any, b: Any) -> float:
    af = float(a)
    return af - b * _ffloor(af / b) if b != 0 else 0.0


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b) if b != 0 else 0


def _align_up(x: int, a: int) -> int:
    return -((-x) // a) * a if a != 0 else 0


def _align_down(x: int, a: int) -> int:
    return (x // a) * a if a != 0 else 0


def _log2(x: float) -> float:
    return float(np.log2(x)) if x > 0 else 0.0


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _pow2_ceil(x: int) -> int:
    return 1 << (x - 1).bit_length() if x > 1 else 1


def _pow2_floor(x: int) -> int:
    return 1 << (x.bit_length() - 1) if x > 1 else 1


# Every name the rendered text reads besides its own temporaries and arguments.
RUNTIME: dict[str, Any] = {
    "math": math, "_min2": _min2, "_max2": _max2, "_ffloor": _ffloor, "_fdiv": _fdiv,
    "_ifloordiv": _ifloordiv, "_imod": _imod, "_ffloordiv": _ffloordiv, "_fmod": _fmod,
    "_ceil_div": _ceil_div, "_align_up": _align_up, "_align_down": _align_down,
    "_log2": _log2, "_is_pow2": _is_pow2, "_pow2_ceil": _pow2_ceil,
    "_pow2_floor": _pow2_floor, "_INF": math.inf, "_NAN": math.nan,
}


def literal(value: Any) -> str:
    """Python source of a number (only ints, floats and bools become code)."""
    if type(value) is bool or isinstance(value, np.bool_):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            return "_NAN"
        if math.isinf(f):
            return "_INF" if f > 0 else "(-_INF)"
        return repr(f)
    raise TypeError(f"not a number: {type(value).__name__}")


# ---- rendering -----------------------------------------------------------------------------

class Writer:
    """Straight-line Python: one statement per node result worth naming."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._n = 0
        # What the temporaries being written compute (a stage, loop or derived value's name),
        # for readers of code generated from them (:mod:`ascend_tune.model.dispatch_cpp`).
        self.label = ""
        self.labels: dict[str, str] = {}

    def tmp(self, text: str) -> str:
        name = f"t{self._n}"
        self._n += 1
        self.lines.append(f"{name} = {text}")
        self.labels[name] = self.label
        return name

    def emit(self, text: str) -> None:
        self.lines.append(text)

    def atom(self, text: str) -> str:
        """``text`` itself when it is a name or a number, else a temporary holding it (so it
        can appear twice in an inline expression)."""
        return text if _ATOM.fullmatch(text) else self.tmp(text)

    def pick(self, a: str, b: str, op: str, floats: bool = True) -> str:
        """np.minimum (``op`` "<") or np.maximum (">") inline: ``a`` when it wins or is nan,
        else ``b`` (so min(0.0, -0.0) is -0.0, as numpy gives)."""
        a, b = self.atom(a), self.atom(b)
        nan = f" or {a} != {a}" if floats and not _NUMBER.fullmatch(a) else ""
        return f"({a} if {a} {op} {b}{nan} else {b})"


_ATOM = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|-?[0-9][0-9.e+-]*|\(-_INF\)")
_NUMBER = re.compile(r"-?[0-9][0-9.e+-]*|\(-_INF\)|_INF|_NAN")


def _number_value(text: str) -> int | float:
    """The value of a finite literal this module rendered (:func:`literal`)."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else float(text)


def _as_float(text: str, kind: Kind) -> str:
    """A number's text as a float: an integer literal rewritten, anything else converted."""
    if kind is Kind.FLOAT:
        return text
    if re.fullmatch(r"-?[0-9]+", text):
        return literal(float(int(text)))
    return f"float({text})"


def _cast(text: str, have: Kind, to: Kind) -> str:
    if have is to:
        return text
    if to is Kind.FLOAT:
        return f"float({text})"
    if to is Kind.INT:
        if have is Kind.BOOL:
            return f"int({text})"
        raise AssertionError("a float is never cast to an integer implicitly")
    return f"({text} != 0)"


class PythonRenderer:
    """Expression trees to Python source, value for value the numpy fast path
    (``Node.evaluate`` on proven inputs): integers stay integers, booleans used as numbers
    become 0 or 1, mixed operands are floats, divisions by zero give 0."""

    def __init__(self, w: Writer, names: Callable[[str], tuple[str, Kind]],
                 spans: Mapping[str, Span] | None = None) -> None:
        self.w = w
        self.names = names
        # Each name's [lo, hi] over the space (None: unknown): a divisor whose span excludes
        # 0 needs no zero guard, and its division is written inline.
        self.spans = spans

    def _nonzero(self, n: Node) -> bool:
        """Whether ``n`` is never 0: a literal, or a span over the space without 0."""
        span = node_span(n, self.spans or {})
        return span is not None and (span[0] > 0 or span[1] < 0)

    def expr(self, e: Expr, to: Kind | None = None) -> str:
        text, kind = self.node(e.root)
        return text if to is None else _cast(text, kind, to)

    def node(self, n: Node) -> tuple[str, Kind]:
        if isinstance(n, Const):
            value = n.value
            if n.kind is Kind.FLOAT:
                value = float(value)
            elif n.kind is Kind.INT:
                value = int(value)
            return literal(value), n.kind
        if isinstance(n, Var):
            return self.names(n.name)
        if isinstance(n, Unary):
            x, k = self.node(n.operand)
            if n.op == "not":
                return f"(not {_cast(x, k, Kind.BOOL)})", Kind.BOOL
            if k is Kind.BOOL:
                x, k = f"int({x})", Kind.INT
            return (f"(-{x})" if n.op == "-" else x), k
        if isinstance(n, Binary):
            return self._binary(n)
        if isinstance(n, Compare):
            a, ka = self.node(n.left)
            b, kb = self.node(n.right)
            to = Kind.BOOL if ka is Kind.BOOL and kb is Kind.BOOL else (
                Kind.FLOAT if Kind.FLOAT in (ka, kb) else Kind.INT)
            return f"({_cast(a, ka, to)} {n.op} {_cast(b, kb, to)})", Kind.BOOL
        if isinstance(n, BoolOp):
            parts = [_cast(*self.node(x), Kind.BOOL) for x in n.operands]
            return "(" + f" {n.op} ".join(parts) + ")", Kind.BOOL
        if isinstance(n, Call):
            return self._call(n)
        raise AssertionError(type(n).__name__)  # pragma: no cover

    def _number(self, n: Node) -> tuple[str, Kind]:
        """A node's value as a number (booleans as 0 or 1): a name or a literal."""
        x, k = self.node(n)
        if k is Kind.BOOL:
            x, k = f"int({x})", Kind.INT
        return self.w.atom(x), k

    def _binary(self, n: Binary) -> tuple[str, Kind]:
        a, ka = self._number(n.left)
        b, kb = self._number(n.right)
        op = n.op
        if op in ("+", "-", "*"):
            if _NUMBER.fullmatch(a) and _NUMBER.fullmatch(b) and "_" not in a + b:
                # Both literals: folded now, the same Python arithmetic the row would do.
                x, y = _number_value(a), _number_value(b)
                return literal(x + y if op == "+" else x - y if op == "-" else x * y), n.kind
            return f"({a} {op} {b})", n.kind
        # A divisor that is never 0 needs no zero guard: the operation inline.
        if op == "/":
            if self._nonzero(n.right):
                return f"({_as_float(a, ka)} / {_as_float(b, kb)})", Kind.FLOAT
            return f"_fdiv({a}, {b})", Kind.FLOAT
        if op in ("//", "%"):
            if n.kind is Kind.INT:
                if self._nonzero(n.right):
                    return f"({a} {op} {b})", Kind.INT
                return f"{'_ifloordiv' if op == '//' else '_imod'}({a}, {b})", Kind.INT
            return f"{'_ffloordiv' if op == '//' else '_fmod'}({a}, {b})", Kind.FLOAT
        if op == "**":
            times = int(getattr(n.right, "value", 0))
            if times == 0:
                return ("1.0" if ka is Kind.FLOAT else "1"), ka
            return "(" + " * ".join([a] * times) + ")", ka
        raise AssertionError(op)  # pragma: no cover

    def _call(self, n: Call) -> tuple[str, Kind]:
        fn = n.fn
        if fn == "where":
            c = _cast(*self.node(n.args[0]), Kind.BOOL)
            x, kx = self.node(n.args[1])
            y, ky = self.node(n.args[2])
            if n.kind is not Kind.BOOL:
                x, kx = (f"int({x})", Kind.INT) if kx is Kind.BOOL else (x, kx)
                y, ky = (f"int({y})", Kind.INT) if ky is Kind.BOOL else (y, ky)
                x, y = _cast(x, kx, n.kind), _cast(y, ky, n.kind)
            return f"({x} if {c} else {y})", n.kind
        args = [self._number(a) for a in n.args]
        if fn in ("min", "max", "clamp"):
            # numpy promotes a mixed fold to float before comparing.
            vals = [_cast(x, k, n.kind) for x, k in args]
            floats = n.kind is Kind.FLOAT
            if fn == "clamp":
                return self.w.pick(self.w.pick(vals[0], vals[1], ">", floats), vals[2], "<",
                                   floats), n.kind
            text = vals[0]
            for v in vals[1:]:
                text = self.w.pick(text, v, "<" if fn == "min" else ">", floats)
            return text, n.kind
        if fn == "abs":
            return f"abs({args[0][0]})", n.kind
        if fn in ("floor", "ceil", "log2"):
            x = _cast(*args[0], Kind.FLOAT)
            if fn == "log2":
                return f"_log2({x})", Kind.FLOAT
            return f"math.{fn}({x})", Kind.INT
        a, b = args[0][0], args[-1][0]
        if fn in ("ceil_div", "align_up", "align_down") and self._nonzero(n.args[1]):
            if fn == "ceil_div":
                return f"(-((-{a}) // {b}))", Kind.INT
            if fn == "align_up":
                return f"(-((-{a}) // {b}) * {b})", Kind.INT
            return f"({a} // {b} * {b})", Kind.INT
        simple = {"ceil_div": "_ceil_div", "align_up": "_align_up",
                  "align_down": "_align_down", "is_pow2": "_is_pow2",
                  "pow2_ceil": "_pow2_ceil", "pow2_floor": "_pow2_floor"}
        if fn in simple:
            return f"{simple[fn]}({', '.join(x for x, _k in args)})", n.kind
        raise AssertionError(fn)  # pragma: no cover - tests hold every function to a form
