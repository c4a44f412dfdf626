"""Checks every configuration must pass besides the spec's own constraints.

They come from how the kernel is launched and what the TilingData can hold: each side's
cores and the block dim within the chip (counted as the kernel mode counts them), every
non-constant tiling field, the tiling key and the user workspace within their C types. The
search (arrays), the Python run-time selection (scalars) and the emitted C++ ``Derive`` apply
the same list, so the tuner never picks a configuration the host code would reject or
silently wrap.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.base import cann
from ascend_tune.expr import Expr
from ascend_tune.spec import OperatorSpec


@dataclass(frozen=True)
class RangeCheck:
    """``lo <= expr <= hi`` (and finite), named for error reports."""

    name: str
    expr: Expr
    lo: float
    hi: float


def tiling_fields(spec: OperatorSpec) -> Iterator[tuple[str, str, Expr]]:
    """(path, C type, value) of every field, nested ones as ``outer.inner``."""
    for nested in spec.tiling_nested:
        for f in nested.fields:
            yield f"{nested.name}.{f.name}", f.ctype, f.value
    for f in spec.tiling_fields:
        yield f.name, f.ctype, f.value


def core_limit_names(spec: OperatorSpec) -> list[tuple[str, Expr, str]]:
    """(check name, core count expression, core type whose platform count bounds it)."""
    out = [(f"{s.core}_cores_within_chip", s.cores, s.core) for s in spec.sides]
    out.append(("block_dim_within_chip", spec.block_dim, spec.mode.block_core))
    return out


def range_checks(spec: OperatorSpec) -> list[RangeCheck]:
    """Value ranges of tiling fields, tiling key and workspace (constants are checked at
    load time, so only expressions that vary with the configuration appear here)."""
    out = []
    for path, ctype, value in tiling_fields(spec):
        if value.names and not set(value.names) & spec.attr_names:
            # (fields built on attributes are checked where the attributes are read)
            lo, hi = cann.field_range(ctype)
            out.append(RangeCheck(f"{path}_fits_{ctype}", value, lo, hi))
    if spec.tiling_key is not None and spec.tiling_key.names:
        out.append(RangeCheck("tiling_key_fits_uint64_t", spec.tiling_key,
                              *cann.field_range("uint64_t")))
    if spec.workspace_bytes is not None and spec.workspace_bytes.names:
        out.append(RangeCheck("workspace_bytes_fits_int64_t", spec.workspace_bytes,
                              0, cann.field_range("int64_t")[1]))
    return out


def check_names(spec: OperatorSpec) -> list[str]:
    return [n for n, _, _ in core_limit_names(spec)] + [r.name for r in range_checks(spec)]


@dataclass(frozen=True)
class Check:
    """One check as a predicate: a boolean expression (a constraint), or ``lo <= expr <= hi``
    and finite (core counts, C type ranges)."""

    name: str
    expr: Expr
    lo: float = 0.0
    hi: float = 0.0
    boolean: bool = False

    def passes(self, env: Mapping[str, Any]) -> Any:
        value = self.expr.evaluate(env)
        if self.boolean:
            return np.asarray(value, dtype=bool)
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.asarray(value, dtype=np.float64)
            return np.isfinite(v) & (v >= self.lo) & (v <= self.hi)


def checks(spec: OperatorSpec, cores: Mapping[str, Any]) -> list[Check]:
    """The launch checks in :func:`check_names` order; ``cores`` maps "cube"/"vector" to the
    platform's core counts."""
    out = [Check(name, expr, 1, float(cores[core]))
           for name, expr, core in core_limit_names(spec)]
    out += [Check(r.name, r.expr, r.lo, r.hi) for r in range_checks(spec)]
    return out


def evaluate(spec: OperatorSpec, env: Mapping[str, Any], cores: Mapping[str, Any]
             ) -> list[Any]:
    """One boolean (array or scalar) per :func:`check_names` entry."""
    return [check.passes(env) for check in checks(spec, cores)]


def always_pass(check: Check, spans: Mapping[str, Any]) -> bool:
    """True when interval arithmetic proves ``check`` (a range check) holds for every input
    within ``spans`` (parameter, derived and environment names -> [lo, hi])."""
    if check.boolean:
        return False
    span = _span(check.expr, spans)
    lo, hi = float(span[0]), float(span[1])
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo >= check.lo and hi <= check.hi)


def derived_spans(spec: OperatorSpec, spans: Mapping[str, Any]) -> dict[str, Any]:
    """``spans`` extended with the span of every derived value (unbounded where interval
    arithmetic cannot bound it)."""
    known = dict(spans)
    for name, e in spec.derive:
        known[name] = _span(e, known)
    return known


def _span(e: Expr, spans: Mapping[str, Any]) -> Any:
    # prove() says the span computation stays within int64; only then is it meaningful.
    if not all(n in spans for n in e.names) or not expr_mod.prove([(None, e)], spans):
        return (-np.inf, np.inf)
    return e.root.span(spans)


def checks_to_run(spec: OperatorSpec, cores: Mapping[str, Any], spans: Mapping[str, Any]
                  ) -> list[Check | None]:
    """:func:`checks` with ``None`` in place of every check proven to pass for all inputs
    within ``spans`` (typically a shape's whole search space: the C-type ranges of most
    TCubeTiling fields), so the per-batch evaluation skips them."""
    known = derived_spans(spec, spans)
    return [None if always_pass(c, known) else c for c in checks(spec, cores)]


@dataclass(frozen=True)
class LaunchRules:
    """Everything the launch checks of one spec on one chip are, asked of this module once:
    the core limits and value ranges the checks test (:func:`core_limit_names`,
    :func:`range_checks`), the checks themselves in :func:`check_names` order
    (:func:`checks`) and their names. Built by :func:`rules`, shared by every shape model of
    the spec on that chip and by the search's enumeration of its valid set."""

    spec: OperatorSpec = field(repr=False, compare=False)
    cube_cores: float  # the platform's core counts the core limits are checked against
    vector_cores: float
    core_limits: tuple[tuple[str, Expr, str], ...]
    ranges: tuple[RangeCheck, ...]
    checks: tuple[Check, ...]
    names: tuple[str, ...]

    def to_run(self, spans: Mapping[str, Any]) -> list[Check | None]:
        """:func:`checks_to_run` over ``spans``: the checks with ``None`` in place of every
        check proven to pass for all inputs within them."""
        known = derived_spans(self.spec, spans)
        return [None if always_pass(c, known) else c for c in self.checks]


class _Identity:
    """A spec as a cache key by identity (a spec holds mappings, so it has no value hash);
    the key keeps the spec alive while cached, so its id is never reused meanwhile."""

    __slots__ = ("spec",)

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec

    def __hash__(self) -> int:
        return id(self.spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.spec is self.spec


def rules(spec: OperatorSpec, cube_cores: float, vector_cores: float) -> LaunchRules:
    """The :class:`LaunchRules` of ``spec`` on a chip with these core counts, built once per
    (spec, cube cores, vector cores) and then shared."""
    return _rules(_Identity(spec), cube_cores, vector_cores)


@functools.lru_cache(maxsize=64)
def _rules(key: _Identity, cube_cores: float, vector_cores: float) -> LaunchRules:
    spec = key.spec
    every = tuple(checks(spec, {"cube": cube_cores, "vector": vector_cores}))
    return LaunchRules(spec, cube_cores, vector_cores, tuple(core_limit_names(spec)),
                       tuple(range_checks(spec)), every, tuple(c.name for c in every))
