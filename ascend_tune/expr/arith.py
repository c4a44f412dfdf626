"""Values and their arithmetic: the three kinds, the int64 bounds, and the numpy operations the
evaluations share.

An expression's value is a signed 64-bit integer, a float64 or a bool (:class:`Kind`), as a
scalar or as a numpy array with one element per candidate. numpy wraps int64 silently and C++
makes overflow undefined, so the checked evaluation needs exact masks of the rows where a step
leaves int64 (:func:`mul_overflow`, :func:`any_of`); the fast evaluation needs divisions that
give 0 for a zero divisor without paying for the guard when there is none
(:func:`unguarded_divisor`), and temporaries written in place (:func:`reusable`). They live
here, below the tree that calls them, so the nodes (:mod:`.nodes`) and the function registry
(:mod:`.functions`) share one definition of each.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Union

import numpy as np

Value = Union[np.ndarray, int, float, bool, np.generic]
Env = Mapping[str, Value]


class Kind(Enum):
    """Static type of an expression."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"


def promote(*kinds: Kind) -> Kind:
    """The kind of arithmetic on ``kinds``: float if any is, else integer (bools count as 0/1)."""
    return Kind.FLOAT if Kind.FLOAT in kinds else Kind.INT


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
TWO63 = 2.0**63


def as_int(x: Any) -> Any:
    """A boolean used as a number: 0 or 1 (an int64 array for an array)."""
    return np.asarray(x).astype(np.int64) if isinstance(x, np.ndarray) else int(x)


def i64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def mul_overflow(a: Any, b: Any) -> Any:
    """Exact mask of rows where the int64 product a * b leaves int64."""
    a64, b64 = i64(a), i64(b)
    approx = np.abs(a64.astype(np.float64) * b64.astype(np.float64))
    # The float product is within 2**-50 relative of the exact one: decide the rows clearly
    # inside or outside with it and the few near 2**63 with Python integers.
    out = np.asarray(approx >= TWO63 * (1 - 2.0**-50))
    near = out & (approx <= TWO63 * (1 + 2.0**-50))
    if near.any():
        out = out.copy()
        aa, bb = np.broadcast_arrays(a64, b64)
        flat = out.reshape(-1)
        for i in np.flatnonzero(near):
            flat[i] = not INT64_MIN <= int(aa.reshape(-1)[i]) * int(bb.reshape(-1)[i]) <= INT64_MAX
    return out


def any_of(*masks: Any) -> Any:
    """The union of overflow masks, where ``False`` stands for "no row" (and costs nothing)."""
    out: Any = False
    for m in masks:
        if m is not False:
            out = m if out is False else np.logical_or(out, m)
    return out


def pow2(x: np.ndarray, up: bool) -> Any:
    """Exact integer power-of-two rounding (the float log2 guess is corrected both ways), for
    ``x < 2**62`` (the span of ``pow2_ceil`` / ``pow2_floor`` sends larger inputs to
    :func:`pow2_wide`)."""
    xs = np.maximum(x, 1)
    guess = np.left_shift(np.int64(1), np.floor(np.log2(xs.astype(np.float64))).astype(np.int64))
    guess = np.where(guess > xs, guess // 2, guess)
    guess = np.where(guess * 2 <= xs, guess * 2, guess)  # now the largest power <= x
    if up:
        guess = np.where(guess < xs, guess * 2, guess)
    return guess


def pow2_wide(x: np.ndarray, up: bool) -> Any:
    """:func:`pow2` for every int64 ``x``; ``pow2_ceil`` of ``x > 2**62`` wraps (the checked
    evaluation reports it)."""
    xs = np.maximum(x, 1)
    shift = np.minimum(np.floor(np.log2(xs.astype(np.float64))), 62).astype(np.int64)
    guess = np.left_shift(np.int64(1), shift)
    guess = np.where(guess > xs, guess // 2, guess)
    guess = np.where(guess <= xs // 2, guess * 2, guess)
    if up:
        guess = np.where(guess < xs, guess * 2, guess)
    return guess


def safe(b: Any) -> Any:
    """A divisor with its zeros replaced by 1 (the caller puts the 0 results back)."""
    return np.where(b == 0, 1, b)


def unguarded_divisor(a: Any, b: Any) -> Any:
    """What the zero-guarded quotient ``where(b == 0, 0, f(a, safe(b)))`` divides by, when the
    guard is a no-op and the result is an array: ``b`` has no zero. Else None.

    The guard costs two full passes over the batch (``safe`` and the outer ``where``); with a
    nonzero divisor both leave every value and dtype as they are, so skipping them is exact. A
    scalar divisor still goes through ``safe`` (a scalar op) so the quotient sees the same
    divisor type; an array divisor costs one ``any`` instead. Scalar results (no array operand)
    keep the guarded path, which returns 0-d arrays.
    """
    if type(b) is np.ndarray and b.ndim:
        # safe(b) keeps the dtype of a numeric array; a bool array would become int64.
        if b.dtype.kind not in "iuf" or (b == 0).any():
            return None
        return b
    if type(a) is np.ndarray and a.ndim and b != 0:
        return safe(b)
    return None


# Binary operators and functions the fast path may run in place (exact: the same ufunc and
# operands as ``Binary._apply`` and the functions' ``apply``).
IN_PLACE = {"+": np.add, "-": np.subtract, "*": np.multiply}
FOLDS = {"min": np.minimum, "max": np.maximum}


def reusable(a: Any, a_owned: bool, b: Any, b_owned: bool) -> np.ndarray | None:
    """An operand array this evaluation built itself (``*_owned``, see ``Node.owns_result``)
    that can take the result of an elementwise operation on ``a`` and ``b``: of the result's
    shape and dtype, so writing into it gives the bits a new array would. At 65 536 rows each
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


def fold_into(ufunc: np.ufunc, vals: list[Any], owned: list[bool]) -> Any:
    """``ufunc(ufunc(vals[0], vals[1]), vals[2]) ...`` (min / max), each step written into an
    array the evaluation owns when one fits (:func:`reusable`)."""
    result, result_owned = vals[0], owned[0]
    for v, v_owned in zip(vals[1:], owned[1:], strict=True):
        out = reusable(result, result_owned, v, v_owned)
        result = ufunc(result, v) if out is None else ufunc(result, v, out=out)
        result_owned = True
    return result
