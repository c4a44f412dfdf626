"""The shape model: a spec bound to a hardware profile and one shape, evaluated vectorised
over candidates.

``ShapeModel`` binds a spec, a hardware profile and one shape. ``evaluate`` takes a 2-D array
of parameter values (one row per candidate configuration) and returns latency, per-pipe busy
time, the bounding pipe and which constraint ruled a row out, all as arrays. This module owns
the space (domains, index genomes), the checks (the spec's constraints and the launch checks,
:mod:`ascend_tune.spec.launch`), the proofs that a batch cannot overflow int64, and the choice
of evaluator; the cost of the valid rows, loops and overlap, is
:mod:`ascend_tune.model.pipeline`'s, and a few rows at a time go through the row kernel
(:mod:`ascend_tune.model.fastpaths.kernel`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.base.errors import SpecError
from ascend_tune.base.vocabulary import DTYPE_BYTES, PIPE_COLUMNS
from ascend_tune.expr import Expr
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import roofline
from ascend_tune.model.bounds import LatencyBounds
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.model.pipeline import StageDetail, batch_cost, bound
from ascend_tune.spec import Loop, OperatorSpec, Stage, evaluate_baseline, launch

# Batches of at most this many rows are scored by the row kernel (one Python call per row)
# instead of the vectorised engine (a fixed ~2 ms per call): below the crossover (~90 rows) of
# benchmarks/model_speed.py --small.
ROW_KERNEL_MAX_ROWS = 64


@dataclass
class Evaluation:
    valid: np.ndarray
    failed: np.ndarray  # index into ShapeModel.constraint_names, -1 where valid
    latency_us: np.ndarray  # inf where invalid
    pipes_us: dict[str, np.ndarray]
    gm_us: np.ndarray
    head_us: np.ndarray
    bound: np.ndarray  # index into BOUND_NAMES
    roofline_us: float
    env: dict[str, Any]
    stages: list[StageDetail] = field(default_factory=list)


# Per-parameter (min, max) of a batch of parameter values, None for an empty batch.
_Extremes = tuple[np.ndarray, np.ndarray] | None


_FOLD_ROWS = 64  # rows of a batch laid side by side in :func:`_fold`


def _fold(values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    """``ufunc.reduce(values, axis=0)`` for np.minimum / np.maximum over integer rows (exact in
    any order). Reducing a C-contiguous batch viewed as rows of 64 parameter rows side by side
    runs the inner loop along 64 x params elements instead of one short row: several times
    faster, and no batch-sized temporary."""
    rows, cols = values.shape
    whole = rows - rows % _FOLD_ROWS
    if not (whole and values.flags.c_contiguous):
        out: np.ndarray = ufunc.reduce(values, axis=0)
        return out
    wide = values[:whole].reshape(whole // _FOLD_ROWS, _FOLD_ROWS * cols)
    partial = ufunc.reduce(wide, axis=0).reshape(_FOLD_ROWS, cols)
    out = ufunc.reduce(np.concatenate([partial, values[whole:]]), axis=0)
    return out


class ShapeModel:
    """A spec bound to a hardware profile and one shape: the search space and its objective."""

    def __init__(self, spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int]) -> None:
        self.spec = spec
        self.hw = hw
        self.shape = dict(shape)
        self.base_env: dict[str, Any] = {**hw.env(), **spec.sizeof_env(), **spec.attr_env(),
                                         **self.shape}
        self.grids: list[np.ndarray] = [spec.domains[p].values(self.base_env)
                                        for p in spec.params]
        self.sizes = np.array([g.size for g in self.grids], dtype=np.int64)
        self.space_size = int(np.prod(self.sizes.astype(np.float64)))
        # The launch checks of this spec on this chip, shared with every other shape model of
        # it and with the search (search.space.SearchableModel).
        self.launch_rules = launch.rules(spec, hw["cube_cores"], hw["vector_cores"])
        self.constraint_names: list[str] = [n for n, _ in spec.constraints]
        self.constraint_names += self.launch_rules.names
        self._check_profile_covers_spec()
        self.roofline_us = roofline.roofline_us(spec, hw, self.base_env)
        # Overflow: proving once per batch (from the parameters' min/max) that no integer step
        # can leave int64 lets every expression take the unchecked fast path.
        self._steps = list(_expression_steps(spec, self.launch_rules))
        self._base_spans = {k: expr_mod.value_span(v) for k, v in self.base_env.items()}
        self._proven: dict[tuple[Any, ...], bool] = {}
        # Usually the whole space is provably safe: then no batch inside it needs a proof.
        self._grid_lo = np.array([int(g.min()) for g in self.grids], dtype=np.int64)
        self._grid_hi = np.array([int(g.max()) for g in self.grids], dtype=np.int64)
        # Every expression is proven free of int64 overflow over the whole space.
        self.space_proven = bool(self.space_size) and self._prove(
            tuple(expr_mod.outer_span(int(g.min()), int(g.max())) for g in self.grids))
        self._launch_all: list[launch.Check | None] = list(self.launch_rules.checks)
        # The launch checks, None for each one proven to pass everywhere in the domains.
        self.launch_in_space = self.launch_rules.to_run({
            **self._base_spans, **{p: expr_mod.outer_span(int(g.min()), int(g.max()))
                                   for p, g in zip(spec.params, self.grids, strict=True)}})

    def with_profile(self, hw: HardwareProfile) -> ShapeModel:
        """The same shape on another profile (a calibration trial). What construction builds
        (the space, overflow proofs, launch checks) reads the profile only through the hw.*
        symbols the spec's expressions name and the core counts; when those are equal it is
        shared, and only the cost numbers read at evaluation and the roofline change."""
        env = hw.env()
        if any(env[k] != self.base_env[k] for k in self._hw_read):
            return ShapeModel(self.spec, hw, self.shape)
        other = copy.copy(self)
        other.hw = hw
        other.__dict__.pop("_row_latency", None)  # compiled with this profile's numbers
        other.__dict__.pop("_bounds", None)
        other._check_profile_covers_spec()
        other.roofline_us = roofline.roofline_us(self.spec, hw, self.base_env)
        return other

    @functools.cached_property
    def _hw_read(self) -> frozenset[str]:
        """The hw.* symbols construction depends on: every expression a shape model evaluates
        (domains, baseline, the evaluation steps) and the core counts the launch checks use."""
        spec = self.spec
        exprs = [e for _, e in self._steps] + list(spec.baseline.values())
        for d in spec.domains.values():
            exprs += [*d.exprs, *(x for x in (d.step, d.multiple_of) if x is not None)]
        names = {n for e in exprs for n in e.names if n.startswith("hw.")}
        return frozenset(names | {"hw.cube_cores", "hw.vector_cores"})

    # ---- space ------------------------------------------------------------------------------

    def values(self, indices: np.ndarray) -> np.ndarray:
        """Map index genomes (n, p) to parameter values (n, p), column-major: the evaluation
        reads one parameter's column at a time, and contiguous columns make every expression
        over them a contiguous pass."""
        out = np.empty((len(self.grids), len(indices)), dtype=np.int64)
        for j, g in enumerate(self.grids):
            np.take(g, indices[:, j], out=out[j])
        values: np.ndarray = out.T
        return values

    def nearest_indices(self, values: Mapping[str, int]) -> np.ndarray:
        """Index genome of the domain values closest to ``values`` (for seeding the baseline)."""
        out = []
        for p, g in zip(self.spec.params, self.grids, strict=False):
            out.append(int(np.argmin(np.abs(g.astype(np.float64) - float(values[p])))))
        return np.asarray(out, dtype=np.int64)

    def baseline_values(self) -> dict[str, int]:
        return evaluate_baseline(self.spec, self.base_env)

    # ---- evaluation -------------------------------------------------------------------------

    def objective(self, indices: np.ndarray) -> np.ndarray:
        """The search seam: index genomes in, predicted latency (us) out, inf where invalid.
        A few rows go through the row kernel (the same bits, without numpy's per-call cost)."""
        if len(indices) <= ROW_KERNEL_MAX_ROWS and self._row_latency is not None:
            return self._row_objective(indices)
        return self.evaluate(self.values(indices)).latency_us

    @functools.cached_property
    def _row_latency(self) -> Callable[..., float] | None:
        """The row kernel (:mod:`ascend_tune.model.fastpaths.kernel`): only where the whole space is
        proven free of int64 overflow, as the engine's unchecked path is."""
        if not self.space_proven:
            return None
        constraints = [launch.Check(n, e, boolean=True) for n, e in self.spec.constraints]
        return row_kernel.latency_function(self.spec, self.hw, self.base_env, self.grids,
                                           [*constraints, *self.launch_in_space],
                                           inputs=list(self.shape))

    def _row_objective(self, indices: np.ndarray) -> np.ndarray:
        fn = self._row_latency
        assert fn is not None
        out = np.empty(len(indices))
        for i, row in enumerate(np.asarray(indices).tolist()):
            try:
                out[i] = fn(*row)
            except row_kernel.ROW_ERRORS:  # numpy's inf or nan where Python raises
                out[i] = self.evaluate(self.values(np.array([row]))).latency_us[0]
        return out

    def failure_counts(self, values: np.ndarray) -> tuple[dict[str, int], int]:
        """For each constraint and launch check, how many of ``values`` fail it (all checks
        counted, not only the first that fails), and how many pass every check."""
        values = np.asarray(values, dtype=np.int64)
        n = values.shape[0]
        _env, checks = self._env_and_checks(values, self._extremes(values))
        passing = [np.broadcast_to(np.asarray(ok, dtype=bool), (n,)) for ok in checks]
        every = np.logical_and.reduce(passing) if passing else np.ones(n, dtype=bool)
        return ({name: int(n - np.count_nonzero(ok))
                 for name, ok in zip(self.constraint_names, passing, strict=True)},
                int(np.count_nonzero(every)))

    def _env(self, values: np.ndarray) -> dict[str, Any]:
        """Parameters and derived values of each row."""
        return _with_derived(self.spec, dict(self.base_env), values)

    def _env_and_checks(self, values: np.ndarray, extremes: _Extremes
                        ) -> tuple[dict[str, Any], list[Any]]:
        """Parameters and derived values of each row, and one boolean per constraint and
        launch check (in ``constraint_names`` order). ``extremes``: :meth:`_extremes`."""
        env = self._env(values)
        checks = [e.evaluate(env) for _, e in self.spec.constraints]
        # Inside the domains, the launch checks proven once per shape are skipped.
        checks += [True if c is None else c.passes(env) for c in
                   (self.launch_in_space if self._inside(extremes) else self._launch_all)]
        return env, checks

    def _extremes(self, values: np.ndarray) -> _Extremes:
        """Each parameter's (min, max) over the batch; None when it is empty or its columns
        are not the parameters."""
        if values.shape[0] == 0 or values.shape[1] != len(self.spec.params):
            return None
        return _fold(values, np.minimum), _fold(values, np.maximum)

    def _inside(self, extremes: _Extremes) -> bool:
        """Whether every row lies within the parameters' domains."""
        return extremes is not None and bool((extremes[0] >= self._grid_lo).all()
                                             and (extremes[1] <= self._grid_hi).all())

    def _batch_proven(self, extremes: _Extremes) -> bool:
        if extremes is None:
            return False
        if self.space_proven and self._inside(extremes):
            return True  # inside the domains the whole-space proof covers
        return self._prove(tuple(expr_mod.outer_span(int(a), int(b))
                                 for a, b in zip(*extremes, strict=True)))

    def _prove(self, spans: tuple[Any, ...]) -> bool:
        hit = self._proven.get(spans)
        if hit is None:
            hit = self._proven[spans] = expr_mod.prove(
                self._steps, {**self._base_spans, **dict(zip(self.spec.params, spans,
                                                              strict=True))})
        return hit

    def evaluate(self, values: np.ndarray, detail: bool = False,
                 known_valid: bool = False) -> Evaluation:
        """``known_valid``: every row is known to pass every check (rows of the enumerated
        valid set, :mod:`ascend_tune.search.space`, which runs the same checks): the checks
        are not evaluated again."""
        values = np.asarray(values, dtype=np.int64)
        extremes = self._extremes(values)
        with expr_mod.unchecked() if self._batch_proven(extremes) else contextlib.nullcontext():
            return self._evaluate(values, extremes, detail, known_valid)

    def valid_objective(self, indices: np.ndarray) -> np.ndarray:
        """:meth:`objective` of index genomes known to be valid (an enumerated valid set)."""
        return self.evaluate(self.values(indices), known_valid=True).latency_us

    @functools.cached_property
    def _bounds(self) -> LatencyBounds:
        return LatencyBounds(self.spec, self.hw, self.base_env, self.grids, self.space_proven)

    def may_beat(self, indices: np.ndarray, cut_us: float) -> np.ndarray:
        """Which index genomes known to be valid may have a latency of at most ``cut_us``:
        False only where a lower bound of the latency (:mod:`ascend_tune.model.bounds`,
        cheapest first) exceeds it, by more than a relative 1e-9 (a margin against the last
        bit). Lets an exact search skip most of a valid set once it holds a good incumbent."""
        indices = np.asarray(indices)
        keep = np.arange(len(indices))
        limit = cut_us * (1.0 + 1e-9)
        # Index genomes lie inside the domains: the whole-space proof covers them.
        with expr_mod.unchecked() if self.space_proven else contextlib.nullcontext():
            for level in range(len(self._bounds.levels)):
                rows = indices if keep.size == len(indices) else indices[keep]
                keep = keep[self._bounds(level, rows) <= limit]
                if keep.size == 0:
                    break
        out = np.zeros(len(indices), dtype=bool)
        out[keep] = True
        return out

    def _evaluate(self, values: np.ndarray, extremes: _Extremes, detail: bool,
                  known_valid: bool = False) -> Evaluation:
        n = values.shape[0]
        if known_valid and n:
            env = self._env(values)
            lat, pip, gm, head, st = batch_cost(self.spec, self.hw, env, n, detail)
            return Evaluation(np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int64), lat, pip,
                              gm, head, bound(pip, gm, head), self.roofline_us, env, st)
        env, checks = self._env_and_checks(values, extremes)
        valid = np.ones(n, dtype=bool)
        failed = np.full(n, -1, dtype=np.int64)
        for i, ok in enumerate(checks):
            ok = np.asarray(ok, dtype=bool)
            if ok.all():
                continue  # fails no row: nothing to mark (the usual case on filtered batches)
            ok = np.broadcast_to(ok, (n,))
            failed[valid & ~ok] = i
            valid &= ok

        rows = np.flatnonzero(valid)
        if rows.size == n and n:
            # Every row valid (an exhaustive sweep's filtered batch, the GA's usual case): the
            # cost arrays are the results, no scatter into inf/zero-filled copies.
            lat, pip, gm, head, st = batch_cost(self.spec, self.hw, env, n, detail)
            return Evaluation(valid, failed, lat, pip, gm, head, bound(pip, gm, head),
                              self.roofline_us, env, st)
        latency = np.full(n, np.inf)
        pipes = {c: np.zeros(n) for c in PIPE_COLUMNS}
        gm_us = np.zeros(n)
        head_us = np.zeros(n)
        bounds = np.zeros(n, dtype=np.int64)
        stages: list[StageDetail] = []
        if rows.size:
            # Cost only the valid rows.
            sub = {k: (v[rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                   for k, v in env.items()}
            lat, pip, gm, head, st = batch_cost(self.spec, self.hw, sub, rows.size, detail)
            latency[rows] = lat
            for c in PIPE_COLUMNS:
                pipes[c][rows] = pip[c]
            gm_us[rows] = gm
            head_us[rows] = head
            bounds[rows] = bound(pip, gm, head)
            stages = st
        return Evaluation(valid, failed, latency, pipes, gm_us, head_us, bounds,
                          self.roofline_us, env, stages)

    # ---- static checks ----------------------------------------------------------------------

    def _check_profile_covers_spec(self) -> None:
        def walk(body: Sequence[Stage | Loop]) -> None:
            for item in body:
                if isinstance(item, Loop):
                    walk(item.body)
                elif item.kind == "vector":
                    size = DTYPE_BYTES[self.spec.stage_dtype(item.dtype or "")]
                    table = self.hw.vector_cycles_per_repeat.get(item.op or "", {})
                    if size not in table:
                        raise SpecError(f"{item.where}: profile {self.hw.name} has no vector "
                                        f"cost for class '{item.op}' at {size}-byte elements")
                elif item.kind == "cube":
                    dtype = self.spec.stage_dtype(item.dtype or "")
                    if dtype not in self.hw.k0 or dtype not in self.hw.cycles_per_fractal:
                        raise SpecError(f"{item.where}: profile {self.hw.name} has no cube "
                                        f"rate for dtype {dtype}")
        for side in self.spec.sides:
            walk(side.body)


def evaluate_valid_rows(models: Sequence[ShapeModel], values: Sequence[np.ndarray],
                        hw: HardwareProfile | None = None
                        ) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """Latency and per-pipe busy time (us) of configurations of several shapes of one spec in
    one batch: ``values[i]`` holds rows that ``models[i].evaluate`` found valid, evaluated on
    ``hw`` (default: the models' profile) as ``models[i].with_profile(hw).evaluate`` would,
    row for row the same bits (the shape variables become per-row arrays; every step is
    elementwise). One batch instead of one per shape: a calibration trial evaluates a few
    rows of each of dozens of shapes, where the per-call cost is most of the time. None when
    it cannot stand in for the per-shape evaluations (models of other specs or profiles, a
    profile that changes what their construction read and so perhaps validity, an
    evaluation that raises): the caller then evaluates shape by shape."""
    if not models:
        return None
    first = models[0]
    if any(m.spec is not first.spec or m.hw is not first.hw or m.shape.keys() != first.shape.keys()
           for m in models):
        return None
    # with_profile shares the construction (base_env) only when the validity of every
    # configuration is unchanged on hw; it also raises where hw lacks a cost the spec uses.
    trial = first if hw is None or hw is first.hw else first.with_profile(hw)
    if trial.base_env is not first.base_env:
        return None
    spec = first.spec
    counts = [len(v) for v in values]
    n = sum(counts)
    stacked = np.concatenate([np.asarray(v, dtype=np.int64).reshape(-1, len(spec.params))
                              for v in values])
    env: dict[str, Any] = dict(first.base_env)
    for name in first.shape:
        env[name] = np.repeat(np.array([m.shape[name] for m in models], dtype=np.int64),
                              counts)
    try:
        _with_derived(spec, env, stacked)
        if not n:
            return np.zeros(0), {c: np.zeros(0) for c in PIPE_COLUMNS}
        latency, pipes, _gm, _head, _st = batch_cost(spec, trial.hw, env, n, False)
    except Exception:  # any failure at all: the per-shape evaluation decides, as before
        return None
    return latency, pipes


def _with_derived(spec: OperatorSpec, env: dict[str, Any], values: np.ndarray
                  ) -> dict[str, Any]:
    """``env`` with each parameter's column of ``values`` and the derived values of every
    row added (in place; returned)."""
    for j, p in enumerate(spec.params):
        env[p] = values[:, j]
    for name, e in spec.derive:
        env[name] = e.evaluate(env)
    return env


def _expression_steps(spec: OperatorSpec, rules: launch.LaunchRules
                      ) -> Iterator[tuple[str | None, Expr]]:
    """Every expression one evaluation runs, in order; derived values carry their name (later
    steps read their spans)."""
    yield from spec.derive
    yield from ((None, e) for _, e in spec.constraints)
    yield from ((None, e) for _, e, _ in rules.core_limits)
    yield from ((None, r.expr) for r in rules.ranges)
    if spec.handoffs is not None:
        yield None, spec.handoffs

    def walk(body: Sequence[Stage | Loop]) -> Iterator[tuple[str | None, Expr]]:
        for item in body:
            if isinstance(item, Loop):
                yield None, item.trips
                if item.buffers is not None:
                    yield None, item.buffers
                yield from walk(item.body)
            else:
                for e in item.expressions():
                    yield None, e

    for side in spec.sides:
        yield None, side.cores
        if side.items is not None:
            yield None, side.items
        yield from walk(side.body)
