"""The spec expression language: parsed once, evaluated with numpy, rendered to C++.

One small, safe language is used everywhere a spec computes something: parameter domains,
derived values, constraints, pipeline volumes, tiling fields. Each expression is parsed with
:mod:`ast` and checked node by node against a whitelist; nothing the user writes is ever passed
to ``eval``. A checked expression compiles twice:

* to a tree of numpy closures, so thousands of candidate configurations are scored in one pass;
* to a C++ expression, so emitted host code recomputes derived fields exactly as the model did.

Integer semantics (identical in numpy and in the emitted C++):

* integers are signed 64-bit; a step whose result leaves that range (including the traps
  ``INT64_MIN // -1`` and ``INT64_MIN % -1``) is an error: :meth:`Expr.evaluate` raises
  :class:`ExprError` naming the expression instead of wrapping (only the taken branch of
  ``where`` and the evaluated operands of ``and`` / ``or`` count, as in C++); integer literals
  are below 2**62 in magnitude;
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
* booleans used as numbers are 0 or 1 (an ``int64_t`` in C++): arithmetic, unary ``-`` and
  ``+``, ``abs``, ``min`` / ``max`` / ``clamp`` and the integer helpers on booleans give
  integers; ``where(c, x, y)`` is boolean only when both ``x`` and ``y`` are; an int mixed
  with a float is promoted to float.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Union

import numpy as np

from ascend_tune.base.errors import ExprError, did_you_mean

MAX_SOURCE_CHARS = 2000
MAX_NESTING = 40
MAX_NODES = 400
MAX_POW_EXPONENT = 64
MAX_INT_LITERAL = 2**62

Value = Union[np.ndarray, int, float, bool, np.generic]
Env = Mapping[str, Value]


class Kind(Enum):
    """Static type of an expression."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"


NAMESPACES = ("hw", "sizeof")


# --------------------------------------------------------------------------------------------
# The checked tree. Each node knows its static kind; evaluation and C++ rendering are methods.
#
# Integer overflow. numpy wraps int64 silently and C++ makes it undefined, so a result beyond
# 64 bits must never reach the model or the emitted code. Three evaluations share one tree:
#
# * ``span`` bounds every node by interval arithmetic on its inputs' [min, max], with no array
#   work. It raises :class:`_MayOverflow` when an integer node could leave int64.
# * ``evaluate`` is the fast path, used when ``span`` proves the expression safe for the
#   input ranges at hand (the usual case: tiling quantities are far below 2**63).
# * ``checked`` returns the value and a mask of rows whose value is undefined: an integer step
#   left int64 on that row. The mask follows C++ evaluation order: only the taken branch of
#   ``where`` and the evaluated operands of ``and`` / ``or`` count.

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_TWO63 = 2.0**63
_INF = math.inf
Span = tuple[Any, Any]  # [lo, hi] of a node over all rows: ints, floats or +-inf
_ANY: Span = (-_INF, _INF)


class _MayOverflow(Exception):
    """Raised by ``span`` when an integer node may leave int64."""


def _clean(lo: Any, hi: Any) -> Span:
    """A float span with nan (inf - inf, 0 * inf) widened to everything."""
    if lo != lo or hi != hi:  # nan
        return _ANY
    return lo, hi


def _corners(fn: Callable[[Any, Any], Any], a: Span, b: Span) -> Span:
    vals = [fn(x, y) for x in a for y in b]
    if any(v != v for v in vals):
        return _ANY
    return min(vals), max(vals)


def _divisor_parts(b: Span, integral: bool) -> tuple[list[Span], bool]:
    """The divisor's range without 0, split by sign; and whether 0 (giving 0) is in it."""
    lo, hi = b
    zero = lo <= 0 <= hi
    if not integral:
        return ([] if zero else [b]), zero
    parts = []
    if lo <= -1:
        parts.append((lo, min(hi, -1)))
    if hi >= 1:
        parts.append((max(lo, 1), hi))
    return parts, zero


def _quotient(fn: Callable[[Any, Any], Any], a: Span, b: Span, integral: bool) -> Span:
    parts, zero = _divisor_parts(b, integral)
    if zero and not integral and (b[0] < 0 or b[1] > 0):
        return _ANY  # a float divisor near 0 makes the quotient unbounded
    spans = [_corners(fn, a, part) for part in parts] + ([(0, 0)] if zero else [])
    return min(s[0] for s in spans), max(s[1] for s in spans)


def _floordiv(x: Any, y: Any) -> Any:
    return x // y if isinstance(x, int) and isinstance(y, int) else math.floor(x / y) if (
        math.isfinite(x / y)) else x / y


def _ceildiv(x: Any, y: Any) -> Any:
    return -((-x) // y) if isinstance(x, int) and isinstance(y, int) else math.ceil(x / y) if (
        math.isfinite(x / y)) else x / y


def _round_span(span: Span, down: Callable[[float], int], up: Callable[[float], int]) -> Span:
    lo, hi = span
    return (down(lo) if isinstance(lo, float) and math.isfinite(lo) else lo,
            up(hi) if isinstance(hi, float) and math.isfinite(hi) else hi)


def _pow_span(a: Span, n: int) -> Span:
    if n == 0:
        return 1, 1
    lo, hi = a
    if n % 2 or lo >= 0:
        return lo**n, hi**n
    if hi <= 0:
        return hi**n, lo**n
    return 0, max(-lo, hi) ** n


def _outer_pow2(x: int, up: bool) -> int:
    """Round an integer bound outwards to +-(a power of two) or 0, so that spans of batches of
    random candidates fall into few classes and their proofs are cached."""
    if x == 0:
        return 0
    if (x > 0) == up:
        return (1 << (abs(x) - 1).bit_length()) * (1 if x > 0 else -1)
    return (1 << (abs(x).bit_length() - 1)) * (1 if x > 0 else -1)


@dataclass(frozen=True)
class Node:
    kind: Kind

    def evaluate(self, env: Env) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def checked(self, env: Env) -> tuple[Any, Any]:  # pragma: no cover - abstract
        """(value, mask of rows where an integer step overflowed)."""
        raise NotImplementedError

    def span(self, leaves: Mapping[str, Span]) -> Span:  # pragma: no cover - abstract
        """[lo, hi] of the value on every row, given the leaves' spans."""
        raise NotImplementedError

    def cpp(self, names: Callable[[str], str]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def owns_result(self) -> bool:
        """Whether an array ``evaluate`` returns is always one this node built (not an input
        passed through): a parent may then write its own result into it."""
        return False

    def _result(self, lo: Any, hi: Any) -> Span:
        if self.kind is Kind.INT:
            if not (isinstance(lo, int) and isinstance(hi, int)
                    and lo >= INT64_MIN and hi <= INT64_MAX):
                raise _MayOverflow
            return lo, hi
        return _clean(lo, hi)


def _as_int(x: Any) -> Any:
    return np.asarray(x).astype(np.int64) if isinstance(x, np.ndarray) else int(x)


def _i64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _mul_overflow(a: Any, b: Any) -> Any:
    """Exact mask of rows where the int64 product a * b leaves int64."""
    a64, b64 = _i64(a), _i64(b)
    approx = np.abs(a64.astype(np.float64) * b64.astype(np.float64))
    # The float product is within 2**-50 relative of the exact one: decide the rows clearly
    # inside or outside with it and the few near 2**63 with Python integers.
    out = np.asarray(approx >= _TWO63 * (1 - 2.0**-50))
    near = out & (approx <= _TWO63 * (1 + 2.0**-50))
    if near.any():
        out = out.copy()
        aa, bb = np.broadcast_arrays(a64, b64)
        flat = out.reshape(-1)
        for i in np.flatnonzero(near):
            flat[i] = not INT64_MIN <= int(aa.reshape(-1)[i]) * int(bb.reshape(-1)[i]) <= INT64_MAX
    return out


def _any(*masks: Any) -> Any:
    out: Any = False
    for m in masks:
        if m is not False:
            out = m if out is False else np.logical_or(out, m)
    return out


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


# Spans of arrays this module returned, by id (the weak reference tells a reused id apart).
# Such arrays are made read-only, so the span cannot go stale; it saves the min/max of every
# derived value that later expressions read.
_KNOWN_SPANS: dict[int, tuple[weakref.ref[np.ndarray], Span]] = {}


_PRUNE_EVERY = 4096
_registered = 0


def _remember_span(arr: np.ndarray, span: Span) -> None:
    global _registered
    _registered += 1
    if _registered % _PRUNE_EVERY == 0:  # drop entries of arrays that died
        for key in [k for k, (ref, _s) in _KNOWN_SPANS.items() if ref() is None]:
            del _KNOWN_SPANS[key]
    _KNOWN_SPANS[id(arr)] = (weakref.ref(arr), span)


def _immutable(arr: np.ndarray) -> bool:
    """Read-only all the way down to the memory owner (a broadcast_to view of a writeable
    array is read-only but changes with its base)."""
    node: Any = arr
    while node is not None:
        if not isinstance(node, np.ndarray) or node.flags.writeable:
            return False
        node = node.base
    return True


def value_span(value: Any) -> Span:
    """[lo, hi] covering a scalar or every element of an array (bools count as 0/1); array
    bounds are rounded outwards to powers of two."""
    if type(value) is np.ndarray:
        known = _KNOWN_SPANS.get(id(value))
        if known is not None and known[0]() is value:
            return known[1]
        if not value.flags.writeable and value.ndim and _immutable(value):
            span = _array_span(value)
            _remember_span(value, span)
            return span
    elif type(value) is int:
        return value, value
    if isinstance(value, (bool, int)):
        return int(value), int(value)
    if isinstance(value, float):
        return (value, value) if math.isfinite(value) else _ANY
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if arr.ndim == 0 and kind in "biuf":
        return value_span(arr.item())
    return _array_span(arr)


def _array_span(arr: np.ndarray) -> Span:
    kind = arr.dtype.kind
    if kind == "b":
        return 0, 1
    if arr.size == 0:
        return 0, 0
    if kind in "iu":
        return _outer_pow2(int(arr.min()), False), _outer_pow2(int(arr.max()), True)
    if kind == "f":
        lo, hi = float(arr.min()), float(arr.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return _ANY
        return _outer_pow2(math.floor(lo), False), _outer_pow2(math.ceil(hi), True)
    return _ANY


@dataclass(frozen=True)
class Const(Node):
    value: int | float | bool = 0

    def evaluate(self, env: Env) -> Any:
        return self.value

    def checked(self, env: Env) -> tuple[Any, Any]:
        return self.value, False

    def span(self, leaves: Mapping[str, Span]) -> Span:
        return self._result(self.value, self.value)

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

    def checked(self, env: Env) -> tuple[Any, Any]:
        value = env[self.name]
        if self.kind is Kind.FLOAT or isinstance(value, (bool, np.bool_)):
            return value, False
        if isinstance(value, int):
            if INT64_MIN <= value <= INT64_MAX:
                return value, False
            return 0, True
        arr = np.asarray(value)
        if arr.dtype.kind == "u":
            return arr.astype(np.int64), arr > INT64_MAX
        return value, False

    def span(self, leaves: Mapping[str, Span]) -> Span:
        return self._result(*leaves[self.name])

    def cpp(self, names: Callable[[str], str]) -> str:
        return names(self.name)


@dataclass(frozen=True)
class Unary(Node):
    op: str = ""
    operand: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def _apply(self, x: Any) -> Any:
        if self.op == "not":
            return np.logical_not(x)
        if self.operand.kind is Kind.BOOL:
            x = _as_int(x)  # booleans used as numbers are 0 or 1, as in C++
        return np.negative(x) if self.op == "-" else x

    @property
    def owns_result(self) -> bool:
        return self.op != "+" or self.operand.kind is Kind.BOOL  # unary + passes x through

    def evaluate(self, env: Env) -> Any:
        return self._apply(self.operand.evaluate(env))

    def checked(self, env: Env) -> tuple[Any, Any]:
        x, bad = self.operand.checked(env)
        if self.op == "-" and self.operand.kind is Kind.INT:
            bad = _any(bad, _i64(x) == INT64_MIN)
        return self._apply(x), bad

    def span(self, leaves: Mapping[str, Span]) -> Span:
        lo, hi = self.operand.span(leaves)
        if self.op == "not":
            return 0, 1
        return self._result(-hi, -lo) if self.op == "-" else self._result(lo, hi)

    def cpp(self, names: Callable[[str], str]) -> str:
        if self.op == "not":
            return f"(!{_cpp_cast(self.operand, Kind.BOOL, names)})"
        inner = _cpp_cast(self.operand, self.kind, names)
        return f"({self.op}{inner})"


def _pow2(x: np.ndarray, up: bool) -> Any:
    """Exact integer power-of-two rounding (the float log2 guess is corrected both ways), for
    ``x < 2**62`` (``Call.span`` sends larger inputs to :func:`_pow2_wide`)."""
    xs = np.maximum(x, 1)
    guess = np.left_shift(np.int64(1), np.floor(np.log2(xs.astype(np.float64))).astype(np.int64))
    guess = np.where(guess > xs, guess // 2, guess)
    guess = np.where(guess * 2 <= xs, guess * 2, guess)  # now the largest power <= x
    if up:
        guess = np.where(guess < xs, guess * 2, guess)
    return guess


def _pow2_wide(x: np.ndarray, up: bool) -> Any:
    """:func:`_pow2` for every int64 ``x``; ``pow2_ceil`` of ``x > 2**62`` wraps (the checked
    evaluation reports it)."""
    xs = np.maximum(x, 1)
    shift = np.minimum(np.floor(np.log2(xs.astype(np.float64))), 62).astype(np.int64)
    guess = np.left_shift(np.int64(1), shift)
    guess = np.where(guess > xs, guess // 2, guess)
    guess = np.where(guess <= xs // 2, guess * 2, guess)
    if up:
        guess = np.where(guess < xs, guess * 2, guess)
    return guess


def _safe(b: Any) -> Any:
    return np.where(b == 0, 1, b)


def _unguarded_divisor(a: Any, b: Any) -> Any:
    """What the zero-guarded quotient ``where(b == 0, 0, f(a, _safe(b)))`` divides by, when the
    guard is a no-op and the result is an array: ``b`` has no zero. Else None.

    The guard costs two full passes over the batch (``_safe`` and the outer ``where``); with a
    nonzero divisor both leave every value and dtype as they are, so skipping them is exact. A
    scalar divisor still goes through ``_safe`` (a scalar op) so the quotient sees the same
    divisor type; an array divisor costs one ``any`` instead. Scalar results (no array operand)
    keep the guarded path, which returns 0-d arrays.
    """
    if type(b) is np.ndarray and b.ndim:
        # _safe(b) keeps the dtype of a numeric array; a bool array would become int64.
        if b.dtype.kind not in "iuf" or (b == 0).any():
            return None
        return b
    if type(a) is np.ndarray and a.ndim and b != 0:
        return _safe(b)
    return None


# Binary operators and functions the fast path may run in place (exact: the same ufunc and
# operands as ``Binary._apply`` and the functions' ``apply``).
_IN_PLACE = {"+": np.add, "-": np.subtract, "*": np.multiply}
_FOLDS = {"min": np.minimum, "max": np.maximum}


def _reusable(a: Any, a_owned: bool, b: Any, b_owned: bool) -> np.ndarray | None:
    """An operand array this evaluation built itself (``*_owned``, see ``owns_result``) that
    can take the result of an elementwise operation on ``a`` and ``b``: of the result's shape
    and dtype, so writing into it gives the bits a new array would. At 65 536 rows each
    avoided temporary is a half-megabyte the kernel would otherwise fault in page by page."""
    for x, owned, y in ((a, a_owned, b), (b, b_owned, a)):
        if owned and type(x) is np.ndarray and x.ndim and x.flags.writeable \
                and np.shape(y) in ((), x.shape):
            try:
                same = np.result_type(a, b) == x.dtype
            except (OverflowError, TypeError):  # the operation itself reports it
                return None
            if same:
                return x
    return None


def _fold_into(ufunc: np.ufunc, vals: list[Any], owned: list[bool]) -> Any:
    """``ufunc(ufunc(vals[0], vals[1]), vals[2]) ...`` (min / max), each step written into an
    array the evaluation owns when one fits (:func:`_reusable`)."""
    result, result_owned = vals[0], owned[0]
    for v, v_owned in zip(vals[1:], owned[1:], strict=True):
        out = _reusable(result, result_owned, v, v_owned)
        result = ufunc(result, v) if out is None else ufunc(result, v, out=out)
        result_owned = True
    return result


@dataclass(frozen=True)
class Binary(Node):
    op: str = ""
    left: Node = field(default_factory=lambda: Const(Kind.INT, 0))
    right: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def _apply(self, a: Any, b: Any) -> Any:
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
        if op in ("/", "//", "%"):  # guarded: the checked path and a divisor with zeros
            return np.where(b == 0, 0 if self.kind is Kind.INT else 0.0,
                            self._quotient(a, b, _safe(b)))
        if op == "**":
            # The exponent is a checked literal, so repeated multiplication is bounded.
            result: Any = np.ones_like(a) if isinstance(a, np.ndarray) else type(a)(1)
            for _ in range(int(b)):
                result = np.multiply(result, a)
            return result
        raise AssertionError(op)  # pragma: no cover

    def _quotient(self, a: Any, b: Any, d: Any) -> Any:
        """``a / b``, ``a // b`` or ``a % b`` dividing by ``d``: ``b`` with its zeros replaced
        (the caller puts the 0 results back) or ``b`` itself when it has none."""
        op = self.op
        if op == "/":
            return np.asarray(a, dtype=np.float64) / d
        if self.kind is Kind.INT:
            return np.floor_divide(a, d) if op == "//" else np.mod(a, d)
        af = np.asarray(a, dtype=np.float64)
        if op == "//":
            return np.floor(af / d)
        return af - b * np.floor(af / d)

    @property
    def owns_result(self) -> bool:
        return True

    def evaluate(self, env: Env) -> Any:
        """:meth:`_apply`'s values, skipping the zero guard of a divisor without zeros and
        writing into an operand array this evaluation owns when one fits."""
        a = self.left.evaluate(env)
        b = self.right.evaluate(env)
        if self.left.kind is Kind.BOOL or self.right.kind is Kind.BOOL:
            return self._apply(a, b)  # booleans become new int arrays first
        op = self.op
        ufunc = _IN_PLACE.get(op)
        if ufunc is not None:
            out = _reusable(a, self.left.owns_result, b, self.right.owns_result)
            return ufunc(a, b) if out is None else ufunc(a, b, out=out)
        if op in ("/", "//", "%"):
            d = _unguarded_divisor(a, b)
            if d is not None:
                return self._quotient_in_place(a, b, d)
        return self._apply(a, b)

    def _quotient_in_place(self, a: Any, b: Any, d: Any) -> Any:
        """:meth:`_quotient` by a divisor without zeros, into an operand array this
        evaluation owns when one fits (``/`` and integer ``//`` and ``%``)."""
        if self.op != "/" and self.kind is not Kind.INT:
            return self._quotient(a, b, d)
        d_owned = d is b and self.right.owns_result
        if self.op == "/":
            af = np.asarray(a, dtype=np.float64)
            owned = af is not a or self.left.owns_result  # a conversion is a new array
            out = _reusable(af, owned, d, d_owned)
            return np.divide(af, d) if out is None else np.divide(af, d, out=out)
        ufunc = np.floor_divide if self.op == "//" else np.mod
        out = _reusable(a, self.left.owns_result, d, d_owned)
        return ufunc(a, d) if out is None else ufunc(a, d, out=out)

    def checked(self, env: Env) -> tuple[Any, Any]:
        # Never in place: the overflow check below reads both operands after the operation.
        a, bad_a = self.left.checked(env)
        b, bad_b = self.right.checked(env)
        result = self._apply(a, b)
        if self.kind is not Kind.INT:
            return result, _any(bad_a, bad_b)
        a64, b64 = _i64(a), _i64(b)
        op = self.op
        if op == "+":
            r = _i64(result)
            over = ((a64 ^ r) & (b64 ^ r)) < 0
        elif op == "-":
            r = _i64(result)
            over = ((a64 ^ b64) & (a64 ^ r)) < 0
        elif op == "*":
            over = _mul_overflow(a64, b64)
        elif op in ("//", "%"):
            over = (a64 == INT64_MIN) & (b64 == -1)  # a trap in C++ (at_floordiv, at_mod)
        else:  # "**": the same chain of products as at_pow
            over = np.zeros(a64.shape, dtype=bool)
            acc = np.ones_like(a64)
            for _ in range(int(b)):
                over = over | _mul_overflow(acc, a64)
                acc = acc * a64
        return result, _any(bad_a, bad_b, over)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        a = self.left.span(leaves)
        b = self.right.span(leaves)
        op = self.op
        integral = self.right.kind is not Kind.FLOAT
        if op == "+":
            return self._result(*_clean(a[0] + b[0], a[1] + b[1]))
        if op == "-":
            return self._result(*_clean(a[0] - b[1], a[1] - b[0]))
        if op == "*":
            return self._result(*_corners(lambda x, y: x * y, a, b))
        if op == "**":
            return self._result(*_pow_span(a, int(getattr(self.right, "value", 0))))
        if op == "/":
            return self._result(*_quotient(lambda x, y: x / y, a, b, integral))
        if self.kind is Kind.INT and a[0] <= INT64_MIN and b[0] <= -1 <= b[1]:
            raise _MayOverflow  # INT64_MIN // -1 and INT64_MIN % -1 trap in C++
        if op == "//":
            return self._result(*_quotient(_floordiv, a, b, integral))
        # %: the sign of b, below |b|
        m = max(-b[0], b[1])
        return self._result(-m if b[0] < 0 else 0, m if b[1] > 0 else 0)

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

    @property
    def owns_result(self) -> bool:
        return True

    def evaluate(self, env: Env) -> Any:
        return _CMP[self.op](self.left.evaluate(env), self.right.evaluate(env))

    def checked(self, env: Env) -> tuple[Any, Any]:
        a, bad_a = self.left.checked(env)
        b, bad_b = self.right.checked(env)
        return _CMP[self.op](a, b), _any(bad_a, bad_b)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        self.left.span(leaves)
        self.right.span(leaves)
        return 0, 1

    def cpp(self, names: Callable[[str], str]) -> str:
        k = _promote(self.left.kind, self.right.kind)
        if self.left.kind is Kind.BOOL and self.right.kind is Kind.BOOL:
            k = Kind.BOOL
        return f"({_cpp_cast(self.left, k, names)} {self.op} {_cpp_cast(self.right, k, names)})"


@dataclass(frozen=True)
class BoolOp(Node):
    op: str = ""
    operands: tuple[Node, ...] = ()

    @property
    def owns_result(self) -> bool:
        return True

    def evaluate(self, env: Env) -> Any:
        fn = np.logical_and if self.op == "and" else np.logical_or
        result = self.operands[0].evaluate(env)
        for node in self.operands[1:]:
            result = fn(result, node.evaluate(env))
        return result

    def checked(self, env: Env) -> tuple[Any, Any]:
        # C++ && and || skip the right operand once the result is known: its overflow counts
        # only on rows where it is evaluated.
        fn = np.logical_and if self.op == "and" else np.logical_or
        result, bad = self.operands[0].checked(env)
        result = np.asarray(result, dtype=bool)
        for node in self.operands[1:]:
            value, bad_here = node.checked(env)
            if bad_here is not False:
                reached = result if self.op == "and" else np.logical_not(result)
                bad = _any(bad, np.logical_and(reached, bad_here))
            result = fn(result, value)
        return result, bad

    def span(self, leaves: Mapping[str, Span]) -> Span:
        for node in self.operands:
            node.span(leaves)
        return 0, 1

    def cpp(self, names: Callable[[str], str]) -> str:
        joiner = " && " if self.op == "and" else " || "
        return "(" + joiner.join(_cpp_cast(n, Kind.BOOL, names) for n in self.operands) + ")"


@dataclass(frozen=True)
class Call(Node):
    fn: str = ""
    args: tuple[Node, ...] = ()

    @property
    def owns_result(self) -> bool:
        return True

    @property
    def function(self) -> Function:
        return FUNCTIONS[self.fn]

    def _values(self, vals: list[Any]) -> list[Any]:
        """Arguments as the function sees them: booleans used as numbers become 0 or 1 (the
        condition of ``where`` stays boolean, and so do its branches when both are)."""
        if self.function.condition:
            if self.kind is Kind.BOOL:
                return vals
            return [vals[0], *(_as_int(v) if a.kind is Kind.BOOL else v
                               for v, a in zip(vals[1:], self.args[1:], strict=True))]
        return [_as_int(v) if a.kind is Kind.BOOL else v
                for v, a in zip(vals, self.args, strict=True)]

    def evaluate(self, env: Env) -> Any:
        vals = self._values([a.evaluate(env) for a in self.args])
        ufunc = _FOLDS.get(self.fn)
        if ufunc is not None:  # min / max: the same fold as their apply, in place when it can
            return _fold_into(ufunc, vals, [a.owns_result and a.kind is not Kind.BOOL
                                            for a in self.args])
        return self.function.apply(vals, False)

    def checked(self, env: Env) -> tuple[Any, Any]:
        pairs = [a.checked(env) for a in self.args]
        vals = [v for v, _ in pairs]
        bads = [b for _, b in pairs]
        function = self.function
        result = function.apply(self._values(vals), True)
        if function.condition:
            # Only the branch taken counts, as in C++'s ?:.
            taken = (False if bads[1] is False and bads[2] is False
                     else np.where(vals[0], bads[1], bads[2]))
            return result, _any(bads[0], taken)
        over: Any = False
        if function.overflow is not None:
            ints = [_i64(v) if a.kind is not Kind.FLOAT else v
                    for v, a in zip(vals, self.args, strict=True)]
            over = function.overflow(ints, self.kind)
        return result, _any(*bads, over)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        return self._result(*self.function.span([a.span(leaves) for a in self.args]))

    def cpp(self, names: Callable[[str], str]) -> str:
        casts = self.function.cpp_args(self.kind, len(self.args))
        return self.function.cpp([_cpp_cast(a, k, names) for a, k in zip(self.args, casts,
                                                                         strict=True)])


# --------------------------------------------------------------------------------------------
# Expression functions: one registry entry each, holding everything the checker, the three
# evaluations and the C++ renderer need. tests/test_registries.py holds every entry to the
# same checks (numpy against the compiled C++ runtime, spans containing the values, overflow
# masks); the C++ side is CPP_RUNTIME below.


@dataclass(frozen=True)
class Function:
    name: str
    doc: str
    min_args: int
    max_args: int
    # Static type of the result from the argument kinds (arguments checked already).
    result: Callable[[tuple[Kind, ...]], Kind]
    # (argument values, wide) -> values; ``wide`` is the checked path, which must not wrap.
    apply: Callable[[list[Any], bool], Any]
    # Argument spans -> result span (Call._result then proves it inside int64).
    span: Callable[[list[Span]], Span]
    # Rows whose result leaves int64, from int64 arguments (None: never).
    overflow: Callable[[list[Any], Kind], Any] | None
    # The kinds the arguments are cast to in C++, from the result kind and argument count.
    cpp_args: Callable[[Kind, int], list[Kind]]
    # C++ text from the cast arguments.
    cpp: Callable[[list[str]], str]
    int_args: bool = False  # integer (or boolean) arguments only
    condition: bool = False  # the first argument is a condition choosing between the others


def _int_result(_kinds: tuple[Kind, ...]) -> Kind:
    return Kind.INT


def _promoted(kinds: tuple[Kind, ...]) -> Kind:
    return _promote(*kinds)


def _all_int(_kind: Kind, n: int) -> list[Kind]:
    return [Kind.INT] * n


def _all_float(_kind: Kind, n: int) -> list[Kind]:
    return [Kind.FLOAT] * n


def _all_result(kind: Kind, n: int) -> list[Kind]:
    return [kind] * n


def _runtime_call(fn: str) -> Callable[[list[str]], str]:
    return lambda args: f"at_{fn}({', '.join(args)})"


def _ceil_quotient(a: Any, d: Any) -> Any:
    q = np.floor_divide(np.negative(a), d)
    if type(q) is np.ndarray and q.ndim:
        return np.negative(q, out=q)  # q is ours: negate it in place, as -q would
    return -q


def _ceil_div(vals: list[Any], wide: bool) -> Any:
    a, b = vals
    d = None if wide else _unguarded_divisor(a, b)  # the checked path keeps the guard
    if d is not None:
        return _ceil_quotient(a, d)
    return np.where(b == 0, 0, -np.floor_divide(np.negative(a), _safe(b)))


def _align(up: bool) -> Callable[[list[Any], bool], Any]:
    def apply(vals: list[Any], wide: bool) -> Any:
        x, a = vals
        d = None if wide else _unguarded_divisor(x, a)  # the checked path keeps the guard
        if d is None:
            q = (-np.floor_divide(np.negative(x), _safe(a)) if up
                 else np.floor_divide(x, _safe(a)))
            return np.where(a == 0, 0, q * a)
        q = _ceil_quotient(x, d) if up else np.floor_divide(x, d)
        out = _reusable(q, True, a, False)  # q is ours
        return q * a if out is None else np.multiply(q, a, out=out)
    return apply


def _align_overflow(up: bool) -> Callable[[list[Any], Kind], Any]:
    def overflow(ints: list[Any], _kind: Kind) -> Any:
        x, a = ints
        q = -np.floor_divide(np.negative(x), _safe(a)) if up else np.floor_divide(x, _safe(a))
        trap = (x == INT64_MIN) & ((a != 0) if up else (a == -1))
        return trap | (_mul_overflow(q, a) & (a != 0))
    return overflow


def _align_span(up: bool) -> Callable[[list[Span]], Span]:
    def span(spans: list[Span]) -> Span:
        if spans[0][0] <= INT64_MIN:
            raise _MayOverflow  # INT64_MIN // -1 and -INT64_MIN: the checked path decides
        # align_up(x, a) is in [x, x + a - 1] for a > 0 and in [x + a + 1, x] for a < 0;
        # align_down mirrors it; 0 where a == 0.
        (xl, xh), (al, ah) = spans
        parts: list[Span] = []
        if ah >= 1:
            parts.append((xl, xh + ah - 1) if up else (xl - ah + 1, xh))
        if al <= -1:
            parts.append((xl + al + 1, xh) if up else (xl, xh - al - 1))
        if al <= 0 <= ah:
            parts.append((0, 0))
        return min(p[0] for p in parts), max(p[1] for p in parts)
    return span


def _ceil_div_span(spans: list[Span]) -> Span:
    if spans[0][0] <= INT64_MIN:
        raise _MayOverflow
    return _quotient(_ceildiv, spans[0], spans[1], True)


def _extreme(pick: Callable[..., Any], reduce: Callable[[Any, Any], Any],
             fn: str) -> tuple[Callable[[list[Any], bool], Any], Callable[[list[Span]], Span],
                               Callable[[list[str]], str]]:
    def apply(vals: list[Any], _wide: bool) -> Any:
        result = vals[0]
        for v in vals[1:]:
            result = reduce(result, v)
        return result

    def span(spans: list[Span]) -> Span:
        return pick(s[0] for s in spans), pick(s[1] for s in spans)

    def cpp(args: list[str]) -> str:
        text = args[0]
        for arg in args[1:]:
            text = f"at_{fn}({text}, {arg})"
        return text
    return apply, span, cpp


def _clamp_span(spans: list[Span]) -> Span:
    (xl, xh), (ll, lh), (hl, hh) = spans  # clamp = min(max(x, lo), hi)
    return min(max(xl, ll), hl), min(max(xh, lh), hh)


def _log2(vals: list[Any], _wide: bool) -> Any:
    x = np.asarray(vals[0], dtype=np.float64)
    return np.where(x > 0, np.log2(np.where(x > 0, x, 1.0)), 0.0)


def _is_pow2(vals: list[Any], _wide: bool) -> Any:
    x = np.asarray(vals[0], dtype=np.int64)
    return np.logical_and(x > 0, np.bitwise_and(x, x - 1) == 0)


def _pow2_round(up: bool) -> tuple[Callable[[list[Any], bool], Any],
                                   Callable[[list[Span]], Span]]:
    def apply(vals: list[Any], wide: bool) -> Any:
        return (_pow2_wide if wide else _pow2)(np.asarray(vals[0], dtype=np.int64), up)

    def span(spans: list[Span]) -> Span:
        top = max(spans[0][1], 1)
        if top >= 2**62:
            raise _MayOverflow  # the fast _pow2 doubles past int64 there
        return 1, (1 << (top - 1).bit_length() if up else top)
    return apply, span


def _abs_span(spans: list[Span]) -> Span:
    lo, hi = spans[0]
    if lo >= 0:
        return lo, hi
    return (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))


def _rounding(rounder: Callable[[Any], Any]) -> tuple[Callable[[list[Any], bool], Any],
                                                     Callable[[list[Any], Kind], Any]]:
    def apply(vals: list[Any], _wide: bool) -> Any:
        return rounder(np.asarray(vals[0], dtype=np.float64)).astype(np.int64)

    def overflow(ints: list[Any], _kind: Kind) -> Any:
        y = rounder(np.asarray(ints[0], dtype=np.float64))
        return ~np.isfinite(y) | (y < -_TWO63) | (y >= _TWO63)
    return apply, overflow


def _rounding_span(spans: list[Span]) -> Span:
    """floor and ceil share the outward bound."""
    lo, hi = spans[0]
    if not all(isinstance(v, int) or math.isfinite(v) for v in (lo, hi)):
        raise _MayOverflow
    return math.floor(lo), math.ceil(hi)


def _where_result(kinds: tuple[Kind, ...]) -> Kind:
    both_bool = kinds[1] is Kind.BOOL and kinds[2] is Kind.BOOL
    return Kind.BOOL if both_bool else _promote(kinds[1], kinds[2])


def _registry(*functions: Function) -> dict[str, Function]:
    return {f.name: f for f in functions}


_min = _extreme(min, np.minimum, "min")
_max = _extreme(max, np.maximum, "max")
_pow2_ceil = _pow2_round(True)
_pow2_floor = _pow2_round(False)
_floor = _rounding(np.floor)
_ceil = _rounding(np.ceil)

FUNCTIONS: dict[str, Function] = _registry(
    Function("ceil_div", "a / b rounded towards +infinity; 0 when b is 0", 2, 2, _int_result,
             _ceil_div, _ceil_div_span,
             lambda ints, _k: (ints[0] == INT64_MIN) & (ints[1] != 0),
             _all_int, _runtime_call("ceil_div"), int_args=True),
    Function("align_up", "x rounded up to a multiple of a; 0 when a is 0", 2, 2, _int_result,
             _align(True), _align_span(True), _align_overflow(True), _all_int,
             _runtime_call("align_up"), int_args=True),
    Function("align_down", "x rounded down to a multiple of a; 0 when a is 0", 2, 2,
             _int_result, _align(False), _align_span(False), _align_overflow(False), _all_int,
             _runtime_call("align_down"), int_args=True),
    Function("min", "the smallest argument", 2, 8, _promoted, _min[0], _min[1], None,
             _all_result, _min[2]),
    Function("max", "the largest argument", 2, 8, _promoted, _max[0], _max[1], None,
             _all_result, _max[2]),
    Function("clamp", "clamp(x, lo, hi) = min(max(x, lo), hi)", 3, 3, _promoted,
             lambda vals, _w: np.minimum(np.maximum(vals[0], vals[1]), vals[2]), _clamp_span,
             None, _all_result, lambda args: f"at_min(at_max({args[0]}, {args[1]}), {args[2]})"),
    Function("log2", "base-2 logarithm (float); 0 for x <= 0", 1, 1, lambda _k: Kind.FLOAT,
             _log2, lambda _s: (-1100.0, 1100.0),  # |log2(x)| <= 1075 for a finite x > 0
             None, _all_float, _runtime_call("log2")),
    Function("is_pow2", "x is a positive power of two", 1, 1, lambda _k: Kind.BOOL, _is_pow2,
             lambda _s: (0, 1), None, _all_int, _runtime_call("is_pow2"), int_args=True),
    Function("pow2_ceil", "the smallest power of two >= x (1 for x <= 1)", 1, 1, _int_result,
             _pow2_ceil[0], _pow2_ceil[1], lambda ints, _k: ints[0] > 2**62, _all_int,
             _runtime_call("pow2_ceil"), int_args=True),
    Function("pow2_floor", "the largest power of two <= x (1 for x <= 1)", 1, 1, _int_result,
             _pow2_floor[0], _pow2_floor[1], None, _all_int, _runtime_call("pow2_floor"),
             int_args=True),
    Function("where", "where(c, x, y): x where c holds, else y (only the branch taken is "
             "evaluated in C++)", 3, 3, _where_result,
             lambda vals, _w: np.where(vals[0], vals[1], vals[2]),
             lambda spans: (min(spans[1][0], spans[2][0]), max(spans[1][1], spans[2][1])),
             None, lambda kind, _n: [Kind.BOOL, kind, kind],
             lambda args: f"(({args[0]}) ? ({args[1]}) : ({args[2]}))", condition=True),
    Function("abs", "absolute value", 1, 1, lambda kinds: _promote(*kinds),
             lambda vals, _w: np.abs(vals[0]), _abs_span,
             lambda ints, kind: (ints[0] == INT64_MIN) if kind is Kind.INT else False,
             _all_result, _runtime_call("abs")),
    Function("floor", "x rounded down to an integer", 1, 1, _int_result, _floor[0],
             _rounding_span, _floor[1], _all_float, _runtime_call("floor")),
    Function("ceil", "x rounded up to an integer", 1, 1, _int_result, _ceil[0],
             _rounding_span, _ceil[1], _all_float, _runtime_call("ceil")),
)


# --------------------------------------------------------------------------------------------
# Checking: from a Python AST to the tree above, or an ExprError naming the offending token.


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
                if abs(v) >= MAX_INT_LITERAL:
                    raise self.fail("integer literal out of range (integer literals must be "
                                    "below 2**62 in magnitude)", node)
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
            lo, hi = FUNCTIONS[fn].min_args, FUNCTIONS[fn].max_args
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
        function = FUNCTIONS[fn]
        if function.int_args and any(a.kind is Kind.FLOAT for a in args):
            raise self.fail(f"'{fn}' needs integer arguments", node)
        return Call(function.result(tuple(a.kind for a in args)), fn, args)

def _short(source: str) -> str:
    return source if len(source) <= 80 else source[:77] + "..."


# --------------------------------------------------------------------------------------------
# Public API


_PROOF_CACHE_LIMIT = 4096
# Set by :func:`unchecked` once :func:`prove` has covered a whole batch.
_PROVEN: contextvars.ContextVar[bool] = contextvars.ContextVar("ascend_tune_proven",
                                                              default=False)


def outer_span(lo: int, hi: int) -> Span:
    """The span :func:`value_span` gives an integer array with this min and max."""
    return _outer_pow2(lo, False), _outer_pow2(hi, True)


def prove(steps: Iterable[tuple[str | None, Expr]], spans: Mapping[str, Span]) -> bool:
    """True when every expression stays within int64 for all inputs within ``spans``.

    ``steps`` are evaluated in order; a named step's span becomes an input of the later ones
    (derived values). A caller that proves every expression of a batch this way (two vector
    reductions for the parameter ranges) may evaluate the batch inside :func:`unchecked`.
    """
    known = dict(spans)
    try:
        for name, e in steps:
            span = e.root.span(known)
            if name is not None:
                known[name] = span
    except (_MayOverflow, OverflowError, ValueError, ZeroDivisionError, KeyError):
        return False
    return True


def node_span(node: Node, leaves: Mapping[str, Span]) -> Span | None:
    """[lo, hi] of a node's value over ``leaves``, or None where interval arithmetic cannot
    bound it (a possible int64 overflow, an unknown name)."""
    try:
        return node.span(leaves)
    except (_MayOverflow, OverflowError, ValueError, ZeroDivisionError, KeyError):
        return None


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Evaluate without the per-expression overflow check: only after :func:`prove`."""
    token = _PROVEN.set(True)
    try:
        yield
    finally:
        _PROVEN.reset(token)



@dataclass(frozen=True)
class Expr:
    """A checked expression: evaluate it with numpy or render it as C++."""

    source: str
    root: Node
    names: frozenset[str]
    where: str = ""  # "file:line: key.path" of the spec entry, for run-time errors
    _order: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    # Spans of the inputs -> span of the result when the fast path is proven free of
    # overflow, else None.
    _proofs: dict[tuple[Span, ...], Span | None] = field(default_factory=dict, init=False,
                                                         repr=False, compare=False)

    # Whether an array result is always a new array (not one of the inputs passed through).
    _fresh: bool = field(default=True, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_order", tuple(sorted(self.names)))
        root = self.root
        passthrough = isinstance(root, Var) or (
            isinstance(root, Unary) and root.op == "+" and root.operand.kind is not Kind.BOOL)
        object.__setattr__(self, "_fresh", not passthrough)

    @property
    def kind(self) -> Kind:
        return self.root.kind

    def evaluate(self, env: Env) -> Any:
        """Evaluate over scalars or numpy arrays (broadcast, one element per candidate).

        Raises :class:`ExprError` naming the expression when an integer result on any row
        leaves the signed 64-bit range (numpy would wrap it, the emitted C++ is undefined).
        The check costs one min/max per input array that this module did not compute: interval
        arithmetic on the inputs' ranges bounds every node, and only expressions that could
        overflow on those ranges take the slower checked path.
        """
        with np.errstate(all="ignore"):  # float inf/nan and 0-divisors are handled per node
            if _PROVEN.get():
                return self.root.evaluate(env)
            spans = []
            for name in self._order:
                v = env[name]
                if type(v) is np.ndarray:  # inlined value_span: the hot path
                    known = _KNOWN_SPANS.get(id(v))
                    if known is not None and known[0]() is v:
                        spans.append(known[1])
                        continue
                elif type(v) is int:
                    spans.append((v, v))
                    continue
                spans.append(value_span(v))
            key = tuple(spans)
            span = self._proofs[key] if key in self._proofs else self._prove(key)
            if span is not None:
                result = self.root.evaluate(env)
                if self._fresh and type(result) is np.ndarray and result.ndim:
                    result.flags.writeable = False  # keeps the remembered span true
                    _remember_span(result, span)
                return result
            value, bad = self.root.checked(env)
        if bad is not False and np.any(bad):
            raise ExprError(self._overflow_message(env, bad))
        return value

    def _prove(self, key: tuple[Span, ...]) -> Span | None:
        span: Span | None
        try:
            span = self.root.span(dict(zip(self._order, key, strict=True)))
        except (_MayOverflow, OverflowError, ValueError, ZeroDivisionError):
            span = None  # the checked evaluation decides, row by row
        if len(self._proofs) >= _PROOF_CACHE_LIMIT:
            self._proofs.clear()
        self._proofs[key] = span
        return span

    def _overflow_message(self, env: Env, bad: Any) -> str:
        mask = np.asarray(bad).reshape(-1)
        row = int(np.flatnonzero(mask)[0])
        shown: list[str] = []
        for name in self._order:
            arr = np.asarray(env[name])
            if arr.ndim == 0:
                item = arr.item()
            elif arr.ndim == 1 and mask.size > 1 and row < arr.size:
                item = arr[row].item()
            else:
                continue
            shown.append(f"{name}={item!r}")
        values = ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "")
        prefix = f"{self.where}: " if self.where else ""
        return (f"{prefix}integer overflow: '{_short(self.source)}' leaves the signed 64-bit "
                f"range" + (f" with {values}" if values else ""))

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
        return Expr(str(source), Const(Kind.BOOL, source), frozenset(), where)
    if isinstance(source, int):
        if abs(source) >= MAX_INT_LITERAL:
            raise ExprError(f"{prefix}integer {_short(str(source))} is out of range "
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
    return Expr(text, root, frozenset(checker.names), where)


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
