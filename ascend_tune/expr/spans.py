"""Interval spans: bounds on a value over every row, and proofs that no integer leaves int64.

A span is ``[lo, hi]`` covering every element of a value (ints, floats or +-inf). Each node's
``span`` bounds its result by interval arithmetic on its inputs' spans, with no array work, and
raises :class:`MayOverflow` when an integer step could leave int64. With those bounds a whole
batch is proven safe once (:func:`prove`) and then evaluated on the fast path
(:func:`unchecked`); only an expression that could overflow on the ranges at hand pays for the
checked, row-by-row evaluation.

Also here: the spans of the arrays the evaluation returned (:func:`remember_span`), so a
derived value read by later expressions costs no min/max, and array bounds rounded outwards
to powers of two (:func:`value_span`, :func:`outer_span`) so batches of random candidates fall
into few classes and their proofs are cached.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np

Span = tuple[Any, Any]  # [lo, hi] of a node over all rows: ints, floats or +-inf
ANY: Span = (-math.inf, math.inf)


# What the proofs need of a node and of an expression, named here rather than imported:
# nodes build on this module's interval arithmetic, so importing them back would be a circle.
class Spanned(Protocol):
    def span(self, leaves: Mapping[str, Span]) -> Span: ...


class Rooted(Protocol):
    @property
    def root(self) -> Spanned: ...


class MayOverflow(Exception):
    """Raised by ``span`` when an integer node may leave int64."""


# What a span computation may raise where it cannot bound a value.
SPAN_ERRORS = (MayOverflow, OverflowError, ValueError, ZeroDivisionError)


def clean(lo: Any, hi: Any) -> Span:
    """A float span with nan (inf - inf, 0 * inf) widened to everything."""
    if lo != lo or hi != hi:  # nan
        return ANY
    return lo, hi


def corners(fn: Callable[[Any, Any], Any], a: Span, b: Span) -> Span:
    vals = [fn(x, y) for x in a for y in b]
    if any(v != v for v in vals):
        return ANY
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


def quotient(fn: Callable[[Any, Any], Any], a: Span, b: Span, integral: bool) -> Span:
    """The span of a zero-guarded quotient ``fn(a, b)`` (0 where ``b`` is 0)."""
    parts, zero = _divisor_parts(b, integral)
    if zero and not integral and (b[0] < 0 or b[1] > 0):
        return ANY  # a float divisor near 0 makes the quotient unbounded
    spans = [corners(fn, a, part) for part in parts] + ([(0, 0)] if zero else [])
    return min(s[0] for s in spans), max(s[1] for s in spans)


def floordiv(x: Any, y: Any) -> Any:
    return x // y if isinstance(x, int) and isinstance(y, int) else math.floor(x / y) if (
        math.isfinite(x / y)) else x / y


def ceildiv(x: Any, y: Any) -> Any:
    return -((-x) // y) if isinstance(x, int) and isinstance(y, int) else math.ceil(x / y) if (
        math.isfinite(x / y)) else x / y


def pow_span(a: Span, n: int) -> Span:
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


def outer_span(lo: int, hi: int) -> Span:
    """The span :func:`value_span` gives an integer array with this min and max."""
    return _outer_pow2(lo, False), _outer_pow2(hi, True)


# Spans of arrays the evaluation returned, by id (the weak reference tells a reused id apart).
# Such arrays are made read-only, so the span cannot go stale; it saves the min/max of every
# derived value that later expressions read.
KNOWN_SPANS: dict[int, tuple[weakref.ref[np.ndarray], Span]] = {}


_PRUNE_EVERY = 4096
_registered = 0


def remember_span(arr: np.ndarray, span: Span) -> None:
    global _registered
    _registered += 1
    if _registered % _PRUNE_EVERY == 0:  # drop entries of arrays that died
        for key in [k for k, (ref, _s) in KNOWN_SPANS.items() if ref() is None]:
            del KNOWN_SPANS[key]
    KNOWN_SPANS[id(arr)] = (weakref.ref(arr), span)


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
        known = KNOWN_SPANS.get(id(value))
        if known is not None and known[0]() is value:
            return known[1]
        if not value.flags.writeable and value.ndim and _immutable(value):
            span = _array_span(value)
            remember_span(value, span)
            return span
    elif type(value) is int:
        return value, value
    if isinstance(value, (bool, int)):
        return int(value), int(value)
    if isinstance(value, float):
        return (value, value) if math.isfinite(value) else ANY
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
            return ANY
        return _outer_pow2(math.floor(lo), False), _outer_pow2(math.ceil(hi), True)
    return ANY


# ---- proofs ---------------------------------------------------------------------------------

# Set by :func:`unchecked` once :func:`prove` has covered a whole batch.
PROVEN: contextvars.ContextVar[bool] = contextvars.ContextVar("ascend_tune_proven",
                                                             default=False)


def prove(steps: Iterable[tuple[str | None, Rooted]], spans: Mapping[str, Span]) -> bool:
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
    except (*SPAN_ERRORS, KeyError):
        return False
    return True


def node_span(node: Spanned, leaves: Mapping[str, Span]) -> Span | None:
    """[lo, hi] of a node's value over ``leaves``, or None where interval arithmetic cannot
    bound it (a possible int64 overflow, an unknown name)."""
    try:
        return node.span(leaves)
    except (*SPAN_ERRORS, KeyError):
        return None


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Evaluate without the per-expression overflow check: only after :func:`prove`."""
    token = PROVEN.set(True)
    try:
        yield
    finally:
        PROVEN.reset(token)
