"""The last-resort fallback: a valid configuration for a shape where no tuned candidate and not
the baseline is valid, found by a walk the emitted C++ repeats step for step.

The walk is a depth-first search over the parameters in spec order. Each parameter tries the
baseline's value first (the configuration the spec calls sensible), then its domain for the
real shape nearest that value first (ties to the smaller), so the walk stays close to the
baseline and changes the inner parameters (the core split, last in most specs) before the
outer ones. After a parameter is bound, the derived values that now have all their inputs are
computed and the checks that now have all theirs (constraints, core limits, C type ranges)
are applied, so a failing prefix is dropped with everything below it. The first
:data:`KEEP` complete configurations that pass are ranked by the model; the fastest (ties to
the first found) is the fallback. Python (:func:`walk`) and C++ (the template's
``WalkFallback`` over the steps of :func:`render_steps_cpp`) visit the same values in the
same order and stop after the same number of visits (:data:`MAX_VISITS`), so they agree on
the answer, including "none within the limit".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, SpecError
from ascend_tune.expr import Expr, scalar_value
from ascend_tune.spec import OperatorSpec, launch

# Values tried in all (every depth) before the walk gives up: with pruning a walk that finds
# something takes far fewer; the cap bounds the host time of a shape with no valid
# configuration at all (a few hundred milliseconds of C++ at worst).
MAX_VISITS = 1 << 20
# Valid configurations the walk collects before ranking them by the model.
KEEP = 16


@dataclass(frozen=True)
class Step:
    """What becomes computable once parameter ``index`` is bound."""

    index: int
    derived: tuple[tuple[str, Expr], ...]
    constraints: tuple[tuple[str, Expr], ...]
    core_checks: tuple[tuple[str, Expr, str], ...]  # name, core count, "cube" | "vector"
    range_checks: tuple[launch.RangeCheck, ...]


def _param_reads(spec: OperatorSpec) -> Callable[[Expr], frozenset[str]]:
    params = set(spec.params)
    derived_reads: dict[str, frozenset[str]] = {}
    for name, e in spec.derive:
        derived_reads[name] = frozenset(
            {n for n in e.names if n in params}
            | {r for n in e.names if n in derived_reads for r in derived_reads[n]})

    def reads(e: Expr) -> frozenset[str]:
        return frozenset({n for n in e.names if n in params}
                         | {r for n in e.names if n in derived_reads for r in derived_reads[n]})

    return reads


def _plan(spec: OperatorSpec) -> tuple[Step, ...]:
    reads = _param_reads(spec)
    position = {p: i for i, p in enumerate(spec.params)}

    def depth(e: Expr) -> int:
        return max((position[p] for p in reads(e)), default=0)

    steps = []
    for i in range(len(spec.params)):
        steps.append(Step(
            i,
            tuple((n, e) for n, e in spec.model_derive if depth(e) == i),
            tuple((n, e) for n, e in spec.constraints if depth(e) == i),
            tuple(c for c in launch.core_limit_names(spec) if depth(c[1]) == i),
            tuple(r for r in launch.range_checks(spec) if depth(r.expr) == i)))
    return tuple(steps)


_PLANS: dict[int, tuple[OperatorSpec, tuple[Step, ...]]] = {}


def plan(spec: OperatorSpec) -> tuple[Step, ...]:
    """The walk's steps, one per parameter (specs hold dicts and are not hashable: cached by
    identity, the entry keeping its spec alive so the id is not reused)."""
    hit = _PLANS.get(id(spec))
    if hit is None or hit[0] is not spec:
        if len(_PLANS) >= 64:
            _PLANS.pop(next(iter(_PLANS)))
        hit = _PLANS[id(spec)] = (spec, _plan(spec))
    return hit[1]


def domain_order(values: Sequence[int], base: int) -> list[int]:
    """The baseline's value first, then the domain's other values nearest it first (ties to
    the smaller value)."""
    return [base, *sorted((v for v in values if v != base), key=lambda v: (abs(v - base), v))]


def walk(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
         base: Mapping[str, int], score: Callable[[Sequence[int]], float]
         ) -> dict[str, int] | None:
    """The fastest by ``score`` (the model's latency of a configuration's values in parameter
    order) of the first :data:`KEEP` valid configurations in walk order, or None (none, or none
    within :data:`MAX_VISITS`). ``env`` holds the profile constants with the platform's core
    counts."""
    local: dict[str, Any] = {**env, **shape}
    try:
        domains = [domain_order([int(v) for v in spec.domains[p].values(local)], int(base[p]))
                   for p in spec.params]
    except SpecError:
        return None
    steps = plan(spec)
    cores = {"cube": env["hw.cube_cores"], "vector": env["hw.vector_cores"]}
    visits = 0
    found = 0
    best: tuple[float, list[int]] | None = None

    def passes(step: Step) -> bool:
        for name, e in step.derived:
            local[name] = scalar_value(e.evaluate(local))
        for _name, e in step.constraints:
            if not bool(e.evaluate(local)):
                return False
        for _name, e, core in step.core_checks:
            count = scalar_value(e.evaluate(local))
            if count < 1 or count > cores[core]:
                return False
        for r in step.range_checks:
            value = float(scalar_value(r.expr.evaluate(local)))
            if not (value >= r.lo and value <= r.hi):
                return False
        return True

    def complete() -> bool:
        """Rank one valid configuration; True once enough are found."""
        nonlocal found, best
        values = [int(local[p]) for p in spec.params]
        us = score(values)
        if best is None or us < best[0]:
            best = (us, values)
        found += 1
        return found >= KEEP

    def dfs(i: int) -> bool:
        nonlocal visits
        ok = _prefilter(steps[i], local, spec.params[i], domains[i], cores)
        for j, value in enumerate(domains[i]):
            visits += 1
            if visits > MAX_VISITS:
                raise _GaveUp
            if ok is not None and not ok[j]:
                continue  # fails this step's checks: what the scalar test would find
            local[spec.params[i]] = value
            if passes(steps[i]) and (complete() if i + 1 == len(spec.params) else dfs(i + 1)):
                return True
        return False

    try:
        if spec.params:
            dfs(0)
    except _GaveUp:
        pass
    except (ArithmeticError, ValueError, OverflowError):
        return None
    return None if best is None else dict(zip(spec.params, best[1], strict=True))


def _prefilter(step: Step, local: Mapping[str, Any], param: str, values: Sequence[int],
               cores: Mapping[str, Any]) -> np.ndarray | None:
    """Which of ``values`` pass ``step``'s checks, evaluated for all of them at once (the
    expressions take arrays, as the search's do): the walk then runs its scalar checks only on
    those, in the same order with the same visit count, so it ends where it ended before and
    the C++ walk still matches it step for step. None (check each value) if an expression
    fails on a value the walk might never reach (an overflow, a domain error)."""
    if len(values) < 2:
        return None
    trial = {**local, param: np.asarray(values, dtype=np.int64)}
    ok = np.ones(len(values), dtype=bool)
    try:
        with np.errstate(all="ignore"):
            for name, e in step.derived:
                trial[name] = e.evaluate(trial)
            for _name, e in step.constraints:
                ok &= np.broadcast_to(np.asarray(e.evaluate(trial), dtype=bool), ok.shape)
            for _name, e, core in step.core_checks:
                count = np.asarray(e.evaluate(trial), dtype=np.float64)
                ok &= np.broadcast_to(~((count < 1) | (count > cores[core])), ok.shape)
            for r in step.range_checks:
                value = np.asarray(r.expr.evaluate(trial), dtype=np.float64)
                ok &= np.broadcast_to((value >= r.lo) & (value <= r.hi), ok.shape)
    except (AscendTuneError, ArithmeticError, ValueError, OverflowError, TypeError):
        return None
    return ok


class _GaveUp(Exception):
    pass


def _int_cpp(e: Expr, cpp: Callable[[Expr], str]) -> str:
    """An integer domain bound in C++: a literal when it is a constant (folded), else the
    expression converted to int64_t as :meth:`ascend_tune.spec.model.Domain.values` does."""
    if not e.names:
        value = scalar_value(e.evaluate({}))
        if isinstance(value, int) and not isinstance(value, bool) \
                and -(1 << 63) < value < (1 << 63):
            return f"INT64_C({value})"
    return f"static_cast<int64_t>({cpp(e)})"


def domain_cpp(spec: OperatorSpec, p: str, var: str, cpp: Callable[[Expr], str]) -> str:
    """A C++ statement filling ``std::vector<int64_t> var`` with ``p``'s domain, ascending, as
    :meth:`ascend_tune.spec.model.Domain.values` computes it (``return false`` on an empty or
    bad domain), by the template's ``DomainValues`` / ``DomainPow2`` / ``DomainRange``."""
    d = spec.domains[p]
    vals = [_int_cpp(e, cpp) for e in d.exprs]
    if d.kind == "values":
        call = f"DomainValues({var}, {{{', '.join(vals)}}})"
    elif d.kind == "pow2":
        call = f"DomainPow2({var}, {vals[0]}, {vals[1]})"
    else:
        step = _int_cpp(d.step, cpp) if d.step is not None else "INT64_C(1)"
        mult = _int_cpp(d.multiple_of, cpp) if d.multiple_of is not None else "INT64_C(0)"
        flag = "true" if d.step is not None else "false"
        call = f"DomainRange({var}, {vals[0]}, {vals[1]}, {step}, {mult}, {flag})"
    return f"if (!{call}) return false;  // {p}"


def render_domains_cpp(spec: OperatorSpec, cpp: Callable[[Expr], str]) -> str:
    """The body of ``bool Domains(const Shape&, int64_t aicNum, int64_t aivNum,
    std::vector<int64_t>* doms)`` after the shape and core names are declared: each
    parameter's domain for this shape, ascending (the walk and the descent share them)."""
    return "\n".join(f"    {domain_cpp(spec, p, f'doms[{j}]', cpp)}"
                     for j, p in enumerate(spec.params))


def render_steps_cpp(spec: OperatorSpec, member: Callable[[Expr], str],
                     cpp_name: Callable[[str], str], limits: Mapping[str, str]) -> str:
    """The body of ``bool CheckStep(int32_t step, Values& v, bool rest)``: the derived values
    that parameter ``step`` completes, then the checks that then have all their inputs, in the
    walk's plan (:func:`plan`), and with ``rest`` the steps after it too (each case falls
    through to the next); ``member`` renders an expression reading ``v``, ``limits`` maps
    "cube" / "vector" to the core counts. ``Derive`` runs every step from the first (a
    configuration fails at its first failing check, its later values never computed), the
    walk one step per bound parameter."""
    lines = ["switch (step) {"]
    steps = plan(spec)
    for step in steps or (Step(0, tuple(spec.derive), tuple(spec.constraints),
                               tuple(launch.core_limit_names(spec)),
                               tuple(launch.range_checks(spec))),):
        label = spec.params[step.index] if spec.params else "no parameters"
        lines.append(f"case {step.index}:  // {label}")
        for n, e in step.derived:
            lines.append(f"    v.{cpp_name(n)} = {member(e)};")
        for n, e in step.constraints:
            lines.append(f"    if (!({member(e)})) return false;  // {n}")
        for n, e, core in step.core_checks:
            lines.append(f"    if (!CoresWithin({member(e)}, {limits[core]})) return false;"
                         f"  // {n}")
        for r in step.range_checks:
            lines.append(f"    if (!Within(static_cast<double>({member(r.expr)}), "
                         f"{_double(r.lo)}, {_double(r.hi)})) return false;  // {r.name}")
        lines += ["    if (!rest) return true;", "    // fall through"]
    lines += ["default:", "    return true;", "}"]
    return "\n".join("    " + line for line in lines)


def _double(value: float) -> str:
    return repr(float(value)) if abs(value) < 1e16 else f"{float(value):.17e}"
