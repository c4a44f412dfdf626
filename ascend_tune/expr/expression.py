"""The checked expression (:class:`Expr`): a tree with its source, evaluated under the int64
overflow guarantee.

:meth:`Expr.evaluate` is where the guarantee is kept. It bounds the inputs (one min/max per
array the package did not compute itself, see :mod:`.spans`), proves the tree free of int64
overflow on those bounds once per class of inputs (the proof is cached on the expression) and
then runs the fast numpy path; an expression that could overflow runs the checked path and
raises :class:`~ascend_tune.base.errors.ExprError` naming itself and the first offending row.
Inside :func:`~.spans.unchecked` (a caller that proved the whole batch) it goes straight to
the fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.base.errors import ExprError
from ascend_tune.expr import cpp
from ascend_tune.expr.arith import Env, Kind
from ascend_tune.expr.nodes import Node, Unary, Var
from ascend_tune.expr.spans import (
    KNOWN_SPANS,
    PROVEN,
    SPAN_ERRORS,
    Span,
    remember_span,
    value_span,
)

_PROOF_CACHE_LIMIT = 4096


def short(source: str) -> str:
    """``source`` cut to 80 characters for an error message."""
    return source if len(source) <= 80 else source[:77] + "..."


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
            if PROVEN.get():
                return self.root.evaluate(env)
            spans = []
            for name in self._order:
                v = env[name]
                if type(v) is np.ndarray:  # inlined value_span: the hot path
                    known = KNOWN_SPANS.get(id(v))
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
                    remember_span(result, span)
                return result
            value, bad = self.root.checked(env)
        if bad is not False and np.any(bad):
            raise ExprError(self._overflow_message(env, bad))
        return value

    def _prove(self, key: tuple[Span, ...]) -> Span | None:
        span: Span | None
        try:
            span = self.root.span(dict(zip(self._order, key, strict=True)))
        except SPAN_ERRORS:
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
        return (f"{prefix}integer overflow: '{short(self.source)}' leaves the signed 64-bit "
                f"range" + (f" with {values}" if values else ""))

    def to_cpp(self, names: Callable[[str], str]) -> str:
        """Render as a C++17 expression using the helpers in :data:`CPP_RUNTIME`."""
        return cpp.render(self.root, names)


def scalar_value(value: Any) -> bool | int | float:
    """The Python value of a one-element evaluation result (bool, int or float)."""
    v = np.asarray(value).reshape(-1)[0]
    if v.dtype.kind == "b":
        return bool(v)
    if v.dtype.kind in "iu":
        return int(v)
    return float(v)
