"""The spec expression language: parsed once, evaluated with numpy, rendered to C++ and Python.

One small, safe language is used everywhere a spec computes something: parameter domains,
derived values, constraints, pipeline volumes, tiling fields. An expression is a string (or a
YAML number or bool) over the names a spec declares, ``hw.<field>`` and ``sizeof.<tensor>``;
:func:`parse` checks it against a whitelist node by node (nothing the user writes is ever
passed to ``eval``) and gives an :class:`Expr`: the source and a tree of typed nodes, each of
static kind int, float or bool (:class:`Kind`). The tree has three renderings, with one
meaning:

* numpy (:meth:`Expr.evaluate`): thousands of candidate configurations scored in one pass,
  one array element per candidate;
* C++ (:meth:`Expr.to_cpp` with the helpers of :data:`CPP_RUNTIME`): emitted host code
  recomputes derived fields exactly as the model did;
* one-row Python (:mod:`.python`): the row kernels score a few configurations at a time in
  generated straight-line code, bit for bit the numpy values.

Integer semantics (identical in numpy, in the emitted C++ and in the row kernels):

* integers are signed 64-bit; a step whose result leaves that range (including the traps
  ``INT64_MIN // -1`` and ``INT64_MIN % -1``) is an error: :meth:`Expr.evaluate` raises
  :class:`~ascend_tune.base.errors.ExprError` naming the expression instead of wrapping
  (only the taken branch of ``where`` and the evaluated operands of ``and`` / ``or`` count,
  as in C++); integer literals are below 2**62 in magnitude. The guarantee costs little:
  interval spans prove most expressions safe for a batch's input ranges (:func:`prove`),
  and only the others take the checked, row-by-row evaluation; a caller that proved a whole
  batch evaluates it inside :func:`unchecked`;
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

Adding a function: its entry in :data:`FUNCTIONS` (:mod:`.functions`: arity, kinds, numpy
forms, span, overflow mask, C++ call), its ``at_<name>`` helper in :data:`CPP_RUNTIME`
(:mod:`.cpp`) and its one-row form in :mod:`.python`; tests/test_registries.py and
tests/test_row_kernel.py then hold it to the same checks as every other function.

The modules, each importing only those listed before it (:mod:`.spans` names the tree's
types in annotations only): :mod:`.arith` (kinds, int64 bounds, the shared numpy arithmetic
and overflow masks), :mod:`.spans` (interval spans and proofs), :mod:`.functions` (the
registry), :mod:`.nodes` (the tree and its numpy evaluations), :mod:`.cpp` (C++ rendering and
runtime), :mod:`.expression` (:class:`Expr`), :mod:`.checker` (:func:`parse`: the whitelist
and the kinds), :mod:`.python` (the one-row Python rendering).
"""

from __future__ import annotations

from ascend_tune.expr.arith import INT64_MAX, INT64_MIN, Kind
from ascend_tune.expr.checker import parse
from ascend_tune.expr.cpp import CPP_RUNTIME
from ascend_tune.expr.expression import Expr, scalar_value
from ascend_tune.expr.functions import FUNCTIONS
from ascend_tune.expr.spans import Span, node_span, outer_span, prove, unchecked, value_span

# Exactly the names the rest of ascend_tune, the tests and the benchmarks use; the parts
# (the node classes, Function, the limits of parse) are imported from their modules.
__all__ = [
    "CPP_RUNTIME",
    "FUNCTIONS",
    "INT64_MAX",
    "INT64_MIN",
    "Expr",
    "Kind",
    "Span",
    "node_span",
    "outer_span",
    "parse",
    "prove",
    "scalar_value",
    "unchecked",
    "value_span",
]
