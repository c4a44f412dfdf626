"""C++ rendering: a checked tree as one C++17 expression, and the runtime it calls.

Emitted host code recomputes derived tiling fields exactly as the model did, so the C++ text
must have the numpy evaluation's semantics (the package docstring): every operation whose C++
form differs from Python's (floor division and modulo, division by zero, ``**``, the registry
functions) calls an ``at_*`` helper of :data:`CPP_RUNTIME`, which the emitted headers include
once; kinds are made explicit with ``static_cast`` where an operand's kind differs from the
operation's. tests/test_expr.py and tests/test_registries.py compile the text with g++ and
compare it with numpy.
"""

from __future__ import annotations

from collections.abc import Callable

from ascend_tune.expr.arith import Kind, promote
from ascend_tune.expr.nodes import Binary, BoolOp, Call, Compare, Const, Node, Unary, Var


def render(node: Node, names: Callable[[str], str]) -> str:
    """``node`` as a C++ expression; ``names`` maps each variable to its C++ spelling."""
    if isinstance(node, Const):
        if node.kind is Kind.BOOL:
            return "true" if node.value else "false"
        if node.kind is Kind.INT:
            return f"INT64_C({int(node.value)})"
        text = repr(float(node.value))
        return text if ("." in text or "e" in text) else text + ".0"
    if isinstance(node, Var):
        return names(node.name)
    if isinstance(node, Unary):
        if node.op == "not":
            return f"(!{_cast(node.operand, Kind.BOOL, names)})"
        inner = _cast(node.operand, node.kind, names)
        return f"({node.op}{inner})"
    if isinstance(node, Binary):
        return _binary(node, names)
    if isinstance(node, Compare):
        k = promote(node.left.kind, node.right.kind)
        if node.left.kind is Kind.BOOL and node.right.kind is Kind.BOOL:
            k = Kind.BOOL
        return f"({_cast(node.left, k, names)} {node.op} {_cast(node.right, k, names)})"
    if isinstance(node, BoolOp):
        joiner = " && " if node.op == "and" else " || "
        return "(" + joiner.join(_cast(n, Kind.BOOL, names) for n in node.operands) + ")"
    if isinstance(node, Call):
        casts = node.function.cpp_args(node.kind, len(node.args))
        return node.function.cpp([_cast(a, k, names) for a, k in zip(node.args, casts,
                                                                     strict=True)])
    raise AssertionError(type(node).__name__)  # pragma: no cover


def _binary(node: Binary, names: Callable[[str], str]) -> str:
    k = node.kind
    a = _cast(node.left, k, names)
    b = _cast(node.right, k, names)
    op = node.op
    if op in "+-*":
        return f"({a} {op} {b})"
    if op == "/":
        a = _cast(node.left, Kind.FLOAT, names)
        b = _cast(node.right, Kind.FLOAT, names)
        return f"at_fdiv({a}, {b})"
    if op == "//":
        return f"at_floordiv({a}, {b})"
    if op == "%":
        return f"at_mod({a}, {b})"
    if op == "**":
        return f"at_pow({a}, {render(node.right, names)})"
    raise AssertionError(op)  # pragma: no cover


def _cast(node: Node, to: Kind, names: Callable[[str], str]) -> str:
    """``node`` rendered as a value of kind ``to``."""
    text = render(node, names)
    if node.kind == to:
        return text
    if to is Kind.FLOAT:
        return f"static_cast<double>({text})"
    if to is Kind.INT:
        return f"static_cast<int64_t>({text})"
    return f"(({text}) != 0)"


# The integer semantics of the language in C++: every helper the rendered text calls.
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
