"""Is a spec's baseline valid across its shape domain? (``ascend-tune check``)

The baseline is the configuration emitted code falls back to, so it must pass every check
(the spec's constraints, then the launch checks of :mod:`.launch`, in that order: the order of
``ascend_tune.emit.selection.first_failure``) on every shape of the spec's shape domain that
has any valid configuration at all. The domain is infinite in practice, so it is sampled
deterministically (:func:`sample_shapes`): per shape variable a log grid from ``min`` to
``min(max, 2**20)``, the small values 1..16, a few sizes that are no power of two and both
ends of the range; the cross product of those, with at most :data:`MAX_SHAPES` shapes (a
seeded subsample, every corner of the domain kept). Each sampled shape is checked on the core
counts of :data:`CORE_COUNTS` (the 910B3's 20 AIC / 40 AIV and a smaller part), the other
``hw.*`` values from the 910B3 profile.

The baseline and its checks are evaluated with numpy over all sampled shapes at once. Where
the baseline fails, a depth-first search over the parameters' domains (vectorised over each
level, checks applied as soon as their inputs are bound, the baseline's values tried first)
decides whether the shape has any valid configuration: only a shape that has one counts
against the baseline; the others are reported as a note (no configuration can serve them).
A search that exceeds :data:`MAX_ROWS` leaves the shape undecided (reported in the note).

This module lives in the spec layer, so it re-implements the scalar ``first_failure`` of
``ascend_tune.emit.selection`` over arrays; tests/test_baseline_domain.py holds the two to the
same answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.base.errors import ExprError, SpecError
from ascend_tune.expr import Expr
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import launch
from ascend_tune.spec.model import OperatorSpec

# (AIC, AIV) platforms the baseline must serve: the 910B3 and a smaller part.
CORE_COUNTS: tuple[tuple[int, int], ...] = ((20, 40), (8, 16))
# Shapes sampled per spec at most (the cross product of the axes is subsampled above this).
MAX_SHAPES = 4000
# The log grid stops here (the range's own maximum is still sampled).
GRID_CAP = 1 << 20
# Sizes that are no power of two (and a few model dimensions), sampled where in range.
ODD_SIZES = (3, 7, 77, 131, 168, 333, 777, 4095, 7168, 14336)
# Rows (configurations times prefixes) one existence search evaluates before giving up.
MAX_ROWS = 4_000_000
# Rows per vectorised block in the existence search.
CHUNK = 8192
# Seed of the subsample: fixed, so a check run is reproducible.
SEED = 25


@dataclass(frozen=True)
class Failure:
    """The baseline fails ``check`` on ``shape`` with these core counts; ``valid_exists``:
    True (a valid configuration exists there), False (none does) or None (undecided)."""

    shape: dict[str, int]
    check: str
    aic: int
    aiv: int
    valid_exists: bool | None


@dataclass
class BaselineReport:
    """What the check of one spec found over its sampled shape domain."""

    spec: str  # display name (NAME or NAME:VARIANT)
    sampled: int  # shapes per core count
    failing: dict[tuple[int, int], int] = field(default_factory=dict)  # shapes failing, by cores
    broken: Failure | None = None  # the first failure where a valid configuration exists
    no_valid: list[Failure] = field(default_factory=list)  # shapes with none at all
    undecided: list[Failure] = field(default_factory=list)
    examined_all: bool = True  # False: the search stopped at ``broken``


def shape_text(shape: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def cores_text(aic: int, aiv: int) -> str:
    return f"{aic} AIC / {aiv} AIV"


# ---- the sample --------------------------------------------------------------------------


def axis_values(lo: int, hi: int, grid: int = 14) -> list[int]:
    """The sampled values of one shape variable in [lo, hi]: a log grid of ``grid`` points from
    max(lo, 1) to min(hi, :data:`GRID_CAP`), 1..16, :data:`ODD_SIZES`, and lo and hi."""
    vals = {lo, hi, *range(1, 17), *ODD_SIZES}
    start, top = max(lo, 1), min(hi, GRID_CAP)
    if top >= start:
        vals.update(round(float(x)) for x in np.geomspace(start, top, grid))
    return sorted(v for v in vals if lo <= v <= hi)


def accepted(values: Sequence[int], multiple: int, hi: int) -> list[int]:
    """``values`` rounded up to the multiple the kernel accepts (those past ``hi`` dropped):
    the check samples only shapes the kernel takes."""
    if multiple == 1:
        return list(values)
    return sorted({r for v in values if (r := -(-v // multiple) * multiple) <= hi})


def sample_shapes(spec: OperatorSpec, limit: int = MAX_SHAPES) -> list[dict[str, int]]:
    """The deterministic sample of ``spec``'s shape domain, in lexicographic order of the
    axes (smallest first): the whole cross product of the axes when it has at most ``limit``
    shapes, else every corner of the domain and a seeded subsample of the rest."""
    names = spec.shape_vars
    # Fewer variables: a denser grid (one variable: 2048 points, two: 40, more: 14).
    grid = {1: 2048, 2: 40}.get(len(names), 14)
    axes = [accepted(axis_values(int(spec.shape_min[v]), int(spec.shape_max[v]), grid),
                     spec.shape_multiple.get(v, 1), int(spec.shape_max[v])) for v in names]
    sizes = [len(a) for a in axes]
    total = int(np.prod(np.asarray(sizes, dtype=np.float64)))
    if total <= limit:
        flat = np.arange(total, dtype=np.int64)
    else:
        corners = (tuple((size - 1) * bit for size, bit in zip(sizes, bits, strict=True))
                   for bits in itertools.product((0, 1), repeat=len(sizes)))
        picked = {int(np.ravel_multi_index(c, sizes)) for c in corners}
        rng = np.random.default_rng(SEED)
        while len(picked) < limit:
            picked.update(int(i) for i in rng.integers(0, total, size=limit - len(picked)))
        flat = np.asarray(sorted(picked), dtype=np.int64)
    index = np.unravel_index(flat, sizes)
    return [{v: int(axes[j][index[j][i]]) for j, v in enumerate(names)}
            for i in range(flat.size)]


def runtime_env(spec: OperatorSpec, hw: HardwareProfile, aic: int, aiv: int) -> dict[str, Any]:
    """Profile constants with the platform's core counts (as emit.selection.runtime_env)."""
    env: dict[str, Any] = {**hw.env(), **spec.sizeof_env(), **spec.attr_env()}
    env["hw.cube_cores"] = aic
    env["hw.vector_cores"] = aiv
    return env


# ---- evaluation over many rows ------------------------------------------------------------


class _Rows:
    """Evaluates expressions over ``n`` rows, where a row on which an integer step leaves
    int64 is marked (``overflow``) instead of failing the batch (first_failure raises there:
    no configuration is valid on such a row)."""

    def __init__(self, local: dict[str, Any], n: int) -> None:
        self.local = local
        self.n = n
        self.overflow = np.zeros(n, dtype=bool)

    def value(self, e: Expr) -> np.ndarray:
        try:
            return _broadcast(e.evaluate(self.local), self.n)
        except ExprError:
            with np.errstate(all="ignore"):
                value, bad = e.root.checked(self.local)
            self.overflow |= _broadcast(bad, self.n)
            return _broadcast(value, self.n)

    def passes(self, check: launch.Check) -> np.ndarray:
        """``check`` (a constraint when boolean, else a value range) on every row."""
        value = self.value(check.expr)
        if check.boolean:
            return np.asarray(value, dtype=bool)
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.asarray(value, dtype=np.float64)
            return np.isfinite(v) & (v >= check.lo) & (v <= check.hi)


def _broadcast(value: Any, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value), (n,))


def _checks(spec: OperatorSpec, env: Mapping[str, Any]) -> list[launch.Check]:
    """Every check in first_failure's order: the constraints, then the launch checks."""
    cores = {"cube": env["hw.cube_cores"], "vector": env["hw.vector_cores"]}
    return ([launch.Check(name, e, boolean=True) for name, e in spec.constraints]
            + launch.checks(spec, cores))


class _First:
    """The first failure of each row, in the order they are recorded."""

    def __init__(self, n: int) -> None:
        self.names: list[str | None] = [None] * n
        self.pending = np.ones(n, dtype=bool)

    def record(self, fails: np.ndarray, name: str) -> None:
        new = self.pending & fails
        for i in np.flatnonzero(new):
            self.names[int(i)] = name
        self.pending &= ~new


def baseline_first_failures(spec: OperatorSpec, env: Mapping[str, Any],
                            shapes: Sequence[Mapping[str, int]]
                            ) -> list[tuple[str | None, dict[str, int] | None]]:
    """For each shape: the first check its baseline fails (None: valid; an integer overflow
    or a baseline value that is no 64-bit integer are failures too) and the baseline (None
    where it cannot be evaluated). ``env``: :func:`runtime_env`. The numpy counterpart of
    ``evaluate_baseline`` and ``first_failure`` of ascend_tune.emit.selection."""
    n = len(shapes)
    if n == 0:
        return []
    local: dict[str, Any] = {**env}
    for v in spec.shape_vars:
        local[v] = np.asarray([int(s[v]) for s in shapes], dtype=np.int64)
    rows = _Rows(local, n)
    first = _First(n)
    for p, e in spec.baseline.items():
        with np.errstate(all="ignore"):
            x = np.floor(np.asarray(rows.value(e), dtype=np.float64) + 0.5)
            fits = np.isfinite(x) & (x >= -(2.0**63)) & (x < 2.0**63) & ~rows.overflow
        first.record(~fits, f"baseline.{p} (no 64-bit integer)")
        local[p] = np.where(fits, x, 0.0).astype(np.int64)
    no_baseline = ~first.pending.copy()
    for name, e in spec.derive:
        local[name] = rows.value(e)
        first.record(rows.overflow, f"derive.{name} (integer overflow)")
    for check in _checks(spec, env):
        ok = rows.passes(check)
        first.record(rows.overflow, f"{check.name} (integer overflow)")
        first.record(~ok, check.name)
    return [(first.names[i], None if no_baseline[i]
             else {p: int(local[p][i]) for p in spec.params}) for i in range(n)]


# ---- does a shape have any valid configuration? ------------------------------------------


@dataclass(frozen=True)
class _Step:
    """What becomes computable once parameter ``index`` is bound (as emit.walk plans it)."""

    derived: tuple[tuple[str, Expr], ...]
    checks: tuple[launch.Check, ...]


def _plan(spec: OperatorSpec, env: Mapping[str, Any]) -> list[_Step]:
    params = set(spec.params)
    position = {p: i for i, p in enumerate(spec.params)}
    reads: dict[str, frozenset[str]] = {}

    def params_read(e: Expr) -> frozenset[str]:
        return frozenset({n for n in e.names if n in params}
                         | {r for n in e.names if n in reads for r in reads[n]})

    for name, e in spec.derive:
        reads[name] = params_read(e)

    def depth(e: Expr) -> int:
        return max((position[p] for p in params_read(e)), default=0)

    checks = _checks(spec, env)
    return [_Step(tuple((n, e) for n, e in spec.derive if depth(e) == i),
                  tuple(c for c in checks if depth(c.expr) == i))
            for i in range(len(spec.params))]


class _GaveUp(Exception):
    pass


def _nearest_first(values: np.ndarray, base: int | None) -> np.ndarray:
    if base is None:
        return values
    order = sorted(range(values.size), key=lambda i: (abs(int(values[i]) - base),
                                                       int(values[i])))
    return values[np.asarray(order, dtype=np.int64)]


def _model_overflows(spec: OperatorSpec, scalars: Mapping[str, Any]) -> bool:
    """Whether the shape's roofline work leaves int64: the model (and so the search and
    explain) refuses such a shape whatever the configuration."""
    for e in (spec.roofline_cube_flops, spec.roofline_vector_bytes, spec.roofline_gm_bytes):
        if e is not None:
            try:
                e.evaluate(scalars)
            except ExprError:
                return True
    return False


def any_valid(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
              base: Mapping[str, int] | None = None, max_rows: int = MAX_ROWS) -> bool | None:
    """Whether ``shape`` has any configuration in the parameters' domains that passes every
    check (None: undecided within ``max_rows`` rows). Depth-first in spec order, each level
    vectorised over blocks of rows, the baseline's values tried first. A shape whose
    roofline overflows int64, or where a domain is empty, has none."""
    scalars: dict[str, Any] = {**env, **shape}
    if not spec.params or _model_overflows(spec, scalars):
        return False
    try:
        domains = [_nearest_first(spec.domains[p].values(scalars),
                                  None if base is None else int(base[p]))
                   for p in spec.params]
    except SpecError:
        return False
    steps = _plan(spec, env)
    budget = [max_rows]

    def level(i: int, cols: dict[str, np.ndarray], n: int
              ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Rows ``cols`` (n of them) crossed with parameter i's domain, with the step's
        derived values, and the mask of the rows passing the step's checks."""
        dom = domains[i]
        m = n * dom.size
        budget[0] -= m
        if budget[0] < 0:
            raise _GaveUp
        out = {k: np.repeat(v, dom.size) for k, v in cols.items()}
        out[spec.params[i]] = np.tile(dom, n)
        rows = _Rows({**scalars, **out}, m)
        for name, e in steps[i].derived:
            rows.local[name] = out[name] = rows.value(e)
        ok = np.ones(m, dtype=bool)
        for check in steps[i].checks:
            ok &= rows.passes(check)
        return out, ok & ~rows.overflow

    def dfs(i: int, cols: dict[str, np.ndarray], n: int) -> bool:
        out, ok = level(i, cols, n)
        keep = np.flatnonzero(ok)
        if i + 1 == len(spec.params) or keep.size == 0:
            return keep.size > 0
        kept = {k: v[keep] for k, v in out.items()}
        # Blocks growing from a few rows (the baseline's neighbourhood: usually enough) to
        # CHUNK, so a shape with a valid configuration is decided after little work.
        start, size = 0, 4
        while start < keep.size:
            part = {k: v[start:start + size] for k, v in kept.items()}
            if dfs(i + 1, part, min(size, keep.size - start)):
                return True
            start, size = start + size, min(size * 4, CHUNK)
        return False

    try:
        return dfs(0, {}, 1)
    except _GaveUp:
        return None


# ---- the check -----------------------------------------------------------------------------


def check_baseline(spec: OperatorSpec, hw: HardwareProfile,
                   core_counts: Sequence[tuple[int, int]] = CORE_COUNTS,
                   shapes: Sequence[Mapping[str, int]] | None = None,
                   stop_at_first: bool = True) -> BaselineReport:
    """Check ``spec``'s baseline on ``shapes`` (default: :func:`sample_shapes`) for each
    platform of ``core_counts``. With ``stop_at_first``, stop at the first shape where the
    baseline fails though a valid configuration exists."""
    sample = [dict(s) for s in (sample_shapes(spec) if shapes is None else shapes)]
    report = BaselineReport(spec.display_name, len(sample))
    for aic, aiv in core_counts:
        env = runtime_env(spec, hw, aic, aiv)
        results = baseline_first_failures(spec, env, sample)
        report.failing[(aic, aiv)] = sum(f is not None for f, _ in results)
        for shape, (failed, base) in zip(sample, results, strict=True):
            if failed is None:
                continue
            exists = any_valid(spec, env, shape, base)
            found = Failure(shape, failed, aic, aiv, exists)
            if exists is None:
                report.undecided.append(found)
            elif not exists:
                report.no_valid.append(found)
            elif report.broken is None:
                report.broken = found
                if stop_at_first:
                    report.examined_all = False
                    return report
    return report


def messages(report: BaselineReport) -> tuple[list[str], list[str]]:
    """(problems, notes) of one report as ``check`` prints them after the file's name: the
    first shape where the baseline fails though a valid configuration exists (a problem), and
    one line each for the sampled shapes with no valid configuration at all and those left
    undecided (notes)."""
    problems: list[str] = []
    notes: list[str] = []
    b = report.broken
    if b is not None:
        failing = report.failing.get((b.aic, b.aiv), 0)
        problems.append(
            f"baseline breaks '{b.check}' at {shape_text(b.shape)} on "
            f"{cores_text(b.aic, b.aiv)} (a valid configuration exists there); {failing} of "
            f"{report.sampled} sampled shapes fail the baseline on those cores; to fix, make "
            f"the baseline pass '{b.check}' there or state the shapes the kernel accepts ("
            + ", ".join(f"shape.{v}" for v in b.shape) + ": min, max, multiple_of)")
    cut = "" if report.examined_all else "; shapes after the baseline failure not examined"
    for what, found in (("have no valid configuration at all", report.no_valid),
                        (f"are undecided (no valid configuration found within {MAX_ROWS} "
                         "candidate rows)", report.undecided)):
        if not found:
            continue
        count = len({shape_text(f.shape) for f in found})
        by_cores = ", ".join(f"{sum(1 for f in found if (f.aic, f.aiv) == c)} on "
                             f"{cores_text(*c)}" for c in report.failing
                             if any((f.aic, f.aiv) == c for f in found))
        first = found[0]
        notes.append(f"{count} of {report.sampled} sampled shapes {what} "
                     f"({by_cores}), e.g. {shape_text(first.shape)} (the baseline breaks "
                     f"'{first.check}' there){cut}")
    return problems, notes


def iter_variants(data: Mapping[str, Any]) -> Iterator[str | None]:
    """None (the spec itself), then each variant name of a spec's parsed YAML."""
    yield None
    variants = data.get("variants")
    if isinstance(variants, dict):
        yield from (str(v) for v in variants)
