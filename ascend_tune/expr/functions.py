"""The function registry: every function an expression may call, one entry each.

An entry (:class:`Function`) holds everything the rest of the package needs about its
function, so adding one is one place here plus its two runtime forms: the arity and the kind
rules the checker applies (:mod:`.checker`), the numpy implementation for the fast and the
checked (never wrapping) evaluation, its interval span, its int64 overflow mask, and how the
C++ renderer casts its arguments and calls it (the ``at_<name>`` helper it calls is in
:data:`.cpp.CPP_RUNTIME`). The one-row Python form is in :mod:`.python`.

tests/test_registries.py holds every entry to the same checks (numpy against the compiled C++
runtime, spans containing the values, overflow masks), and tests/test_row_kernel.py requires a
Python form for each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.expr.arith import (
    INT64_MIN,
    TWO63,
    Kind,
    mul_overflow,
    pow2,
    pow2_wide,
    promote,
    reusable,
    safe,
    unguarded_divisor,
)
from ascend_tune.expr.spans import MayOverflow, Span, ceildiv, quotient


@dataclass(frozen=True)
class Function:
    """One function of the language: its checking, evaluation and C++ rules."""

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
    return promote(*kinds)


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
    d = None if wide else unguarded_divisor(a, b)  # the checked path keeps the guard
    if d is not None:
        return _ceil_quotient(a, d)
    return np.where(b == 0, 0, -np.floor_divide(np.negative(a), safe(b)))


def _align(up: bool) -> Callable[[list[Any], bool], Any]:
    def apply(vals: list[Any], wide: bool) -> Any:
        x, a = vals
        d = None if wide else unguarded_divisor(x, a)  # the checked path keeps the guard
        if d is None:
            q = (-np.floor_divide(np.negative(x), safe(a)) if up
                 else np.floor_divide(x, safe(a)))
            return np.where(a == 0, 0, q * a)
        q = _ceil_quotient(x, d) if up else np.floor_divide(x, d)
        out = reusable(q, True, a, False)  # q is ours
        return q * a if out is None else np.multiply(q, a, out=out)
    return apply


def _align_overflow(up: bool) -> Callable[[list[Any], Kind], Any]:
    def overflow(ints: list[Any], _kind: Kind) -> Any:
        x, a = ints
        q = -np.floor_divide(np.negative(x), safe(a)) if up else np.floor_divide(x, safe(a))
        trap = (x == INT64_MIN) & ((a != 0) if up else (a == -1))
        return trap | (mul_overflow(q, a) & (a != 0))
    return overflow


def _align_span(up: bool) -> Callable[[list[Span]], Span]:
    def span(spans: list[Span]) -> Span:
        if spans[0][0] <= INT64_MIN:
            raise MayOverflow  # INT64_MIN // -1 and -INT64_MIN: the checked path decides
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
        raise MayOverflow
    return quotient(ceildiv, spans[0], spans[1], True)


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
        return (pow2_wide if wide else pow2)(np.asarray(vals[0], dtype=np.int64), up)

    def span(spans: list[Span]) -> Span:
        top = max(spans[0][1], 1)
        if top >= 2**62:
            raise MayOverflow  # the fast pow2 doubles past int64 there
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
        return ~np.isfinite(y) | (y < -TWO63) | (y >= TWO63)
    return apply, overflow


def _rounding_span(spans: list[Span]) -> Span:
    """floor and ceil share the outward bound."""
    lo, hi = spans[0]
    if not all(isinstance(v, int) or math.isfinite(v) for v in (lo, hi)):
        raise MayOverflow
    return math.floor(lo), math.ceil(hi)


def _where_result(kinds: tuple[Kind, ...]) -> Kind:
    both_bool = kinds[1] is Kind.BOOL and kinds[2] is Kind.BOOL
    return Kind.BOOL if both_bool else promote(kinds[1], kinds[2])


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
    Function("abs", "absolute value", 1, 1, lambda kinds: promote(*kinds),
             lambda vals, _w: np.abs(vals[0]), _abs_span,
             lambda ints, kind: (ints[0] == INT64_MIN) if kind is Kind.INT else False,
             _all_result, _runtime_call("abs")),
    Function("floor", "x rounded down to an integer", 1, 1, _int_result, _floor[0],
             _rounding_span, _floor[1], _all_float, _runtime_call("floor")),
    Function("ceil", "x rounded up to an integer", 1, 1, _int_result, _ceil[0],
             _rounding_span, _ceil[1], _all_float, _runtime_call("ceil")),
)
