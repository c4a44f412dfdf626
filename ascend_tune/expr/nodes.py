"""The checked tree: one node class per construct, each knowing its static kind, with the
numpy evaluations and the interval span.

Three evaluations share one tree (the package docstring states the integer semantics):

* ``span`` bounds every node by interval arithmetic on its inputs' [min, max], with no array
  work. It raises :class:`~.spans.MayOverflow` when an integer node could leave int64.
* ``evaluate`` is the fast path, used when ``span`` proves the expression safe for the
  input ranges at hand (the usual case: tiling quantities are far below 2**63). It skips the
  zero guard of a divisor without zeros and writes into temporaries it built itself
  (``owns_result``); every shortcut gives the bits of the plain formula
  (tests/test_model_fastpaths.py).
* ``checked`` returns the value and a mask of rows whose value is undefined: an integer step
  left int64 on that row. The mask follows C++ evaluation order: only the taken branch of
  ``where`` and the evaluated operands of ``and`` / ``or`` count.

Rendering is not the nodes' business: the C++ (:mod:`.cpp`) and the one-row Python
(:mod:`.python`) renderers walk the same tree from outside. A function call's rules come from
its registry entry (:mod:`.functions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.expr.arith import (
    FOLDS,
    IN_PLACE,
    INT64_MAX,
    INT64_MIN,
    Env,
    Kind,
    any_of,
    as_int,
    fold_into,
    i64,
    mul_overflow,
    reusable,
    safe,
    unguarded_divisor,
)
from ascend_tune.expr.functions import FUNCTIONS, Function
from ascend_tune.expr.spans import MayOverflow, Span, clean, corners, floordiv, pow_span, quotient


@dataclass(frozen=True)
class Node:
    """A node of the checked tree, of static kind ``kind``."""

    kind: Kind

    def evaluate(self, env: Env) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def checked(self, env: Env) -> tuple[Any, Any]:  # pragma: no cover - abstract
        """(value, mask of rows where an integer step overflowed)."""
        raise NotImplementedError

    def span(self, leaves: Mapping[str, Span]) -> Span:  # pragma: no cover - abstract
        """[lo, hi] of the value on every row, given the leaves' spans."""
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
                raise MayOverflow
            return lo, hi
        return clean(lo, hi)


@dataclass(frozen=True)
class Const(Node):
    value: int | float | bool = 0

    def evaluate(self, env: Env) -> Any:
        return self.value

    def checked(self, env: Env) -> tuple[Any, Any]:
        return self.value, False

    def span(self, leaves: Mapping[str, Span]) -> Span:
        return self._result(self.value, self.value)


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


@dataclass(frozen=True)
class Unary(Node):
    op: str = ""
    operand: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def _apply(self, x: Any) -> Any:
        if self.op == "not":
            return np.logical_not(x)
        if self.operand.kind is Kind.BOOL:
            x = as_int(x)  # booleans used as numbers are 0 or 1, as in C++
        return np.negative(x) if self.op == "-" else x

    @property
    def owns_result(self) -> bool:
        return self.op != "+" or self.operand.kind is Kind.BOOL  # unary + passes x through

    def evaluate(self, env: Env) -> Any:
        return self._apply(self.operand.evaluate(env))

    def checked(self, env: Env) -> tuple[Any, Any]:
        x, bad = self.operand.checked(env)
        if self.op == "-" and self.operand.kind is Kind.INT:
            bad = any_of(bad, i64(x) == INT64_MIN)
        return self._apply(x), bad

    def span(self, leaves: Mapping[str, Span]) -> Span:
        lo, hi = self.operand.span(leaves)
        if self.op == "not":
            return 0, 1
        return self._result(-hi, -lo) if self.op == "-" else self._result(lo, hi)



@dataclass(frozen=True)
class Binary(Node):
    op: str = ""
    left: Node = field(default_factory=lambda: Const(Kind.INT, 0))
    right: Node = field(default_factory=lambda: Const(Kind.INT, 0))

    def _apply(self, a: Any, b: Any) -> Any:
        if self.left.kind is Kind.BOOL:
            a = as_int(a)
        if self.right.kind is Kind.BOOL:
            b = as_int(b)
        op = self.op
        if op == "+":
            return np.add(a, b)
        if op == "-":
            return np.subtract(a, b)
        if op == "*":
            return np.multiply(a, b)
        if op in ("/", "//", "%"):  # guarded: the checked path and a divisor with zeros
            return np.where(b == 0, 0 if self.kind is Kind.INT else 0.0,
                            self._quotient(a, b, safe(b)))
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
        ufunc = IN_PLACE.get(op)
        if ufunc is not None:
            out = reusable(a, self.left.owns_result, b, self.right.owns_result)
            return ufunc(a, b) if out is None else ufunc(a, b, out=out)
        if op in ("/", "//", "%"):
            d = unguarded_divisor(a, b)
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
            out = reusable(af, owned, d, d_owned)
            return np.divide(af, d) if out is None else np.divide(af, d, out=out)
        ufunc = np.floor_divide if self.op == "//" else np.mod
        out = reusable(a, self.left.owns_result, d, d_owned)
        return ufunc(a, d) if out is None else ufunc(a, d, out=out)

    def checked(self, env: Env) -> tuple[Any, Any]:
        # Never in place: the overflow check below reads both operands after the operation.
        a, bad_a = self.left.checked(env)
        b, bad_b = self.right.checked(env)
        result = self._apply(a, b)
        if self.kind is not Kind.INT:
            return result, any_of(bad_a, bad_b)
        a64, b64 = i64(a), i64(b)
        op = self.op
        if op == "+":
            r = i64(result)
            over = ((a64 ^ r) & (b64 ^ r)) < 0
        elif op == "-":
            r = i64(result)
            over = ((a64 ^ b64) & (a64 ^ r)) < 0
        elif op == "*":
            over = mul_overflow(a64, b64)
        elif op in ("//", "%"):
            over = (a64 == INT64_MIN) & (b64 == -1)  # a trap in C++ (at_floordiv, at_mod)
        else:  # "**": the same chain of products as at_pow
            over = np.zeros(a64.shape, dtype=bool)
            acc = np.ones_like(a64)
            for _ in range(int(b)):
                over = over | mul_overflow(acc, a64)
                acc = acc * a64
        return result, any_of(bad_a, bad_b, over)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        a = self.left.span(leaves)
        b = self.right.span(leaves)
        op = self.op
        integral = self.right.kind is not Kind.FLOAT
        if op == "+":
            return self._result(*clean(a[0] + b[0], a[1] + b[1]))
        if op == "-":
            return self._result(*clean(a[0] - b[1], a[1] - b[0]))
        if op == "*":
            return self._result(*corners(lambda x, y: x * y, a, b))
        if op == "**":
            return self._result(*pow_span(a, int(getattr(self.right, "value", 0))))
        if op == "/":
            return self._result(*quotient(lambda x, y: x / y, a, b, integral))
        if self.kind is Kind.INT and a[0] <= INT64_MIN and b[0] <= -1 <= b[1]:
            raise MayOverflow  # INT64_MIN // -1 and INT64_MIN % -1 trap in C++
        if op == "//":
            return self._result(*quotient(floordiv, a, b, integral))
        # %: the sign of b, below |b|
        m = max(-b[0], b[1])
        return self._result(-m if b[0] < 0 else 0, m if b[1] > 0 else 0)


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
        return _CMP[self.op](a, b), any_of(bad_a, bad_b)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        self.left.span(leaves)
        self.right.span(leaves)
        return 0, 1


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
                bad = any_of(bad, np.logical_and(reached, bad_here))
            result = fn(result, value)
        return result, bad

    def span(self, leaves: Mapping[str, Span]) -> Span:
        for node in self.operands:
            node.span(leaves)
        return 0, 1


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
            return [vals[0], *(as_int(v) if a.kind is Kind.BOOL else v
                               for v, a in zip(vals[1:], self.args[1:], strict=True))]
        return [as_int(v) if a.kind is Kind.BOOL else v
                for v, a in zip(vals, self.args, strict=True)]

    def evaluate(self, env: Env) -> Any:
        vals = self._values([a.evaluate(env) for a in self.args])
        ufunc = FOLDS.get(self.fn)
        if ufunc is not None:  # min / max: the same fold as their apply, in place when it can
            return fold_into(ufunc, vals, [a.owns_result and a.kind is not Kind.BOOL
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
            return result, any_of(bads[0], taken)
        over: Any = False
        if function.overflow is not None:
            ints = [i64(v) if a.kind is not Kind.FLOAT else v
                    for v, a in zip(vals, self.args, strict=True)]
            over = function.overflow(ints, self.kind)
        return result, any_of(*bads, over)

    def span(self, leaves: Mapping[str, Span]) -> Span:
        return self._result(*self.function.span([a.span(leaves) for a in self.args]))
