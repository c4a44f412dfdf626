"""The generic pipeline engine: one evaluator for every spec, vectorised over candidates.

``ShapeModel`` binds a spec, a hardware profile and one shape. ``evaluate`` takes a 2-D array
of parameter values (one row per candidate configuration) and returns latency, per-pipe busy
time, the bounding pipe and which constraint ruled a row out, all as arrays.

Loop semantics (docs/model.md "Loops and overlap"): a loop of ``trips`` iterations over its
stages costs, with one buffer, ``trips * sum(stage)``; with two or more buffers, the fill of
one trip plus ``(trips - 1)`` times the steady state per trip: the busiest resource (a pipe or
the shared GM bandwidth, nested loops' busy time counted per pipe, since both levels issue to
the same hardware queues) or the serial chain of a single-buffered nested loop, whichever is
longer (docs/model.md names the sources). Every trip also pays the scalar loop cost and
one flag handoff per change of pipe between consecutive stages (through nested loops).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.base.errors import SpecError
from ascend_tune.base.vocabulary import DTYPE_BYTES, PIPE_COLUMN, PIPE_COLUMNS
from ascend_tune.expr import Expr
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import costs, roofline
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.spec import Loop, OperatorSpec, Stage, end_pipes, evaluate_baseline, launch

# Batches of at most this many rows are scored by the row kernel (one Python call per row)
# instead of the vectorised engine (a fixed ~2 ms per call): below the crossover (~90 rows) of
# benchmarks/model_speed.py --small.
ROW_KERNEL_MAX_ROWS = 64


@dataclass
class StageDetail:
    """Per-core totals of one stage, for `explain` (batch of one)."""

    side: str
    name: str
    pipe: str
    cycles: float
    executions: float
    bytes_per_transfer: float = 0.0
    bandwidth_bytes_per_cycle: float = 0.0
    peak_bytes_per_cycle: float = 0.0
    share_capped: bool = False
    latency_fraction: float = 0.0  # share of each transfer's time spent on fixed latency


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


class _Ctx:
    def __init__(self, model: ShapeModel, env: Mapping[str, Any], side: str, cores: Any,
                 n: int, detail: bool) -> None:
        self.model = model
        self.env = env
        self.side = side
        self.cores = cores
        self.n = n
        self.detail = detail
        self.stages: list[StageDetail] = []
        self.share_cache: costs.ShareCache = {}
        # Shared, read-only: a stage's count, rows and L2 hit when it declares none, and the
        # GM cycles and recurrence of a loop until something adds to them (then the loop
        # takes the addend's array as its own).
        self.zeros = np.zeros(n)
        self.zeros.flags.writeable = False
        self.ones = np.ones(n)
        self.ones.flags.writeable = False


def _arr(value: Any, n: int) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    return out if out.shape == (n,) else np.broadcast_to(out, (n,))


def _owned_arr(value: Any, n: int) -> tuple[np.ndarray, bool]:
    """:func:`_arr`, and whether the result is a new writeable array (a conversion from
    integers) that the caller may overwrite, rather than ``value`` itself or a view."""
    out = _arr(value, n)
    return out, out is not value and out.flags.writeable and out.base is None


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
        self.base_env: dict[str, Any] = {**hw.env(), **spec.sizeof_env(), **self.shape}
        self.grids: list[np.ndarray] = [spec.domains[p].values(self.base_env)
                                        for p in spec.params]
        self.sizes = np.array([g.size for g in self.grids], dtype=np.int64)
        self.space_size = int(np.prod(self.sizes.astype(np.float64)))
        self.constraint_names: list[str] = [n for n, _ in spec.constraints]
        self.constraint_names += launch.check_names(spec)
        self._check_profile_covers_spec()
        self.roofline_us = roofline.roofline_us(spec, hw, self.base_env)
        # Overflow: proving once per batch (from the parameters' min/max) that no integer step
        # can leave int64 lets every expression take the unchecked fast path.
        self._steps = list(_expression_steps(spec))
        self._base_spans = {k: expr_mod.value_span(v) for k, v in self.base_env.items()}
        self._proven: dict[tuple[Any, ...], bool] = {}
        # Usually the whole space is provably safe: then no batch inside it needs a proof.
        self._grid_lo = np.array([int(g.min()) for g in self.grids], dtype=np.int64)
        self._grid_hi = np.array([int(g.max()) for g in self.grids], dtype=np.int64)
        self._space_proven = bool(self.space_size) and self._prove(
            tuple(expr_mod.outer_span(int(g.min()), int(g.max())) for g in self.grids))
        cores = {"cube": hw["cube_cores"], "vector": hw["vector_cores"]}
        self._launch_all: list[launch.Check | None] = list(launch.checks(spec, cores))
        self._launch_in_space = launch.checks_to_run(spec, cores, {
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
        if not self._space_proven:
            return None
        constraints = [launch.Check(n, e, boolean=True) for n, e in self.spec.constraints]
        return row_kernel.latency_function(self.spec, self.hw, self.base_env, self.grids,
                                           [*constraints, *self._launch_in_space])

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
        env: dict[str, Any] = dict(self.base_env)
        for j, p in enumerate(self.spec.params):
            env[p] = values[:, j]
        for name, e in self.spec.derive:
            env[name] = e.evaluate(env)
        return env

    def _env_and_checks(self, values: np.ndarray, extremes: _Extremes
                        ) -> tuple[dict[str, Any], list[Any]]:
        """Parameters and derived values of each row, and one boolean per constraint and
        launch check (in ``constraint_names`` order). ``extremes``: :meth:`_extremes`."""
        env = self._env(values)
        checks = [e.evaluate(env) for _, e in self.spec.constraints]
        # Inside the domains, the launch checks proven once per shape are skipped.
        checks += [True if c is None else c.passes(env) for c in
                   (self._launch_in_space if self._inside(extremes) else self._launch_all)]
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
        if self._space_proven and self._inside(extremes):
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

    def _evaluate(self, values: np.ndarray, extremes: _Extremes, detail: bool,
                  known_valid: bool = False) -> Evaluation:
        n = values.shape[0]
        if known_valid and n:
            env = self._env(values)
            lat, pip, gm, head, st = self._cost(env, n, detail)
            return Evaluation(np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int64), lat, pip,
                              gm, head, _bound(pip, gm, head), self.roofline_us, env, st)
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
            lat, pip, gm, head, st = self._cost(env, n, detail)
            return Evaluation(valid, failed, lat, pip, gm, head, _bound(pip, gm, head),
                              self.roofline_us, env, st)
        latency = np.full(n, np.inf)
        pipes = {c: np.zeros(n) for c in PIPE_COLUMNS}
        gm_us = np.zeros(n)
        head_us = np.zeros(n)
        bound = np.zeros(n, dtype=np.int64)
        stages: list[StageDetail] = []
        if rows.size:
            # Cost only the valid rows.
            sub = {k: (v[rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                   for k, v in env.items()}
            lat, pip, gm, head, st = self._cost(sub, rows.size, detail)
            latency[rows] = lat
            for c in PIPE_COLUMNS:
                pipes[c][rows] = pip[c]
            gm_us[rows] = gm
            head_us[rows] = head
            bound[rows] = _bound(pip, gm, head)
            stages = st
        return Evaluation(valid, failed, latency, pipes, gm_us, head_us, bound,
                          self.roofline_us, env, stages)

    def _cost(self, env: Mapping[str, Any], n: int, detail: bool
              ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray,
                         list[StageDetail]]:
        hw = self.hw
        clock_mhz = float(hw["clock_mhz"])
        pipes: dict[str, np.ndarray] = {}  # the pipes a side uses; zeros for the rest below
        side_us: list[np.ndarray] = []
        gm_us = np.zeros(n)
        head_us = np.zeros(n)
        stages: list[StageDetail] = []
        for side in self.spec.sides:
            cores = _arr(side.cores.evaluate(env), n)
            items = _arr(side.items.evaluate(env), n) if side.items is not None else cores
            per_core = np.maximum(cores, 1.0)  # ceil(items / max(cores, 1)), in place
            np.divide(items, per_core, out=per_core)
            np.ceil(per_core, out=per_core)
            ctx = _Ctx(self, env, side.core, cores, n, detail)
            lat, busy, gm, _rec = self._loop(side.body, per_core, None, ctx,
                                             np.ones(n) if detail else None, trips_owned=True)
            # _loop's arrays are ours: scale them in place.
            side_us.append(np.divide(lat, clock_mhz, out=lat))
            for pipe, cycles in busy.items():
                _accumulate(pipes, PIPE_COLUMN[(side.core, pipe)],
                            np.divide(cycles, clock_mhz, out=cycles))
            np.maximum(gm_us, np.divide(gm, clock_mhz, out=gm), out=gm_us)
            np.maximum(head_us, costs.head_us(hw, cores, side.core), out=head_us)
            stages += ctx.stages
        pipes = {c: pipes[c] if c in pipes else np.zeros(n) for c in PIPE_COLUMNS}
        body_us = side_us[0]
        if len(side_us) > 1:
            # Mix kernel: Cube and Vector sides overlap; they pay flag handoffs and a launch cost.
            handoffs = (_arr(self.spec.handoffs.evaluate(env), n)
                        if self.spec.handoffs is not None else np.zeros(n))
            body_us = (np.maximum(side_us[0], side_us[1])
                       + handoffs * float(hw["sync_cycles"]) / clock_mhz
                       + float(hw["mix_extra_us"]))
        return np.add(head_us, body_us, out=body_us), pipes, gm_us, head_us, stages

    def _loop(self, body: Sequence[Stage | Loop], trips: np.ndarray, buffers: np.ndarray | None,
              ctx: _Ctx, mult: np.ndarray | None, trips_owned: bool = False
              ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Latency, per-pipe busy cycles, GM cycles and the serial recurrence of a loop.

        A nested loop is not an opaque block: its pipes' busy time joins this loop's per-pipe
        accounting (the hardware queues of the two levels are the same queues), so only what
        the nested loop cannot overlap -- the chain of its single-buffered iterations -- bounds
        this loop's steady state. The recurrence a loop exports is, with one buffer,
        ``(trips - 1) * sequential trip + steady trip`` (its iterations serialise, the first can
        overlap the stages around the loop), with two or more ``trips * recurrence of its own
        nested loops``. A ``trips: 1`` loop therefore exports no more than its own pipes' busy
        time, and pays no iteration cost: wrapping a body in it changes nothing.

        ``trips_owned``: ``trips`` is the caller's scratch array, free to overwrite.
        """
        hw = self.hw
        n = ctx.n
        trips = np.maximum(trips, 0.0, out=trips if trips_owned else None)
        # A one-trip loop is straight-line code (no back edge): it pays no iteration cost.
        busy: dict[str, np.ndarray] = {"scalar": _where_more_than_one(
            trips, float(hw["loop_iteration_cycles"]))}
        seq = busy["scalar"].copy()
        gm = recurrence = ctx.zeros  # until the body adds to them
        handoffs = 0
        prev: str | None = None
        # Executions of the body, for `explain` only (detail); None on the batch path.
        inner_mult = mult * trips if mult is not None else None
        # Every array this loop accumulates into (seq, gm, recurrence, busy) is its own, and so
        # are the arrays the nested loops and stages return: add into them in place.
        for item in body:
            if isinstance(item, Loop):
                t, t_owned = _owned_arr(item.trips.evaluate(ctx.env), n)
                b = (_arr(item.buffers.evaluate(ctx.env), n) if item.buffers is not None
                     else None)
                lat, sub_busy, sub_gm, sub_rec = self._loop(item.body, t, b, ctx, inner_mult,
                                                            t_owned)
                seq += lat
                for pipe, cycles in sub_busy.items():
                    _accumulate(busy, pipe, cycles)
                gm = np.add(gm, sub_gm, out=gm if gm is not ctx.zeros else sub_gm)
                recurrence = np.maximum(recurrence, sub_rec, out=(
                    recurrence if recurrence is not ctx.zeros else sub_rec))
                first, last = end_pipes(item.body)
            else:
                cycles, stage_gm = self._stage(item, ctx, inner_mult)
                seq += cycles
                _accumulate(busy, item.pipe, cycles)
                gm = np.add(gm, stage_gm, out=gm if gm is not ctx.zeros else stage_gm)
                first = last = item.pipe
            if prev is not None and first is not None and first != prev:
                handoffs += 1
            prev = last if last is not None else prev
        sync = handoffs * float(hw["sync_cycles"])
        seq += sync
        busy["scalar"] += sync
        steady = _fold_maximum([*busy.values(), gm, recurrence])
        latency, exported = _loop_time(trips, buffers, seq, steady, recurrence)
        for cycles in busy.values():
            cycles *= trips
        gm = np.multiply(gm, trips, out=gm if gm is not ctx.zeros else None)
        return latency, busy, gm, exported

    def _stage(self, stage: Stage, ctx: _Ctx, mult: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        env, n, hw = ctx.env, ctx.n, self.hw
        count = _arr(stage.count.evaluate(env), n) if stage.count is not None else ctx.ones
        gm = np.zeros(n)
        extra: dict[str, Any] = {}
        kind = stage.kind  # vocabulary.STAGE_KINDS
        if kind == "transfer":
            assert stage.bytes is not None and stage.path is not None
            nbytes = _arr(stage.bytes.evaluate(env), n)
            rows = _arr(stage.rows.evaluate(env), n) if stage.rows is not None else ctx.ones
            # Stages without a hit on the same cores and port then share one chip share.
            hit = (_arr(stage.l2_hit.evaluate(env), n) if stage.l2_hit is not None
                   else ctx.zeros)
            aligned = (np.broadcast_to(np.asarray(stage.gm_aligned.evaluate(env), bool), (n,))
                       if stage.gm_aligned is not None else None)
            element = (DTYPE_BYTES[self.spec.stage_dtype(self.spec.dtypes[stage.operand])]
                       if stage.operand is not None else 1)
            t = costs.transfer(hw, stage.path, nbytes, rows, count, hit, ctx.cores, aligned,
                               stage.layout, element, ctx.share_cache)
            cycles, gm = t.cycles, t.gm_cycles
            if ctx.detail:
                extra = {"bytes_per_transfer": float(t.bytes_per_transfer[0]),
                         "bandwidth_bytes_per_cycle": float(t.effective_bandwidth[0]),
                         "peak_bytes_per_cycle": float(t.peak_bandwidth[0]),
                         "share_capped": bool(t.share_capped[0]),
                         "latency_fraction": float(1.0 - t.effective_bandwidth[0]
                                                   / t.bandwidth[0])}
        elif kind == "cube":
            assert stage.m is not None and stage.n is not None and stage.k is not None
            dtype = self.spec.stage_dtype(stage.dtype or "")
            cycles = count * costs.mmad_cycles(hw, dtype, _arr(stage.m.evaluate(env), n),
                                               _arr(stage.n.evaluate(env), n),
                                               _arr(stage.k.evaluate(env), n))
        elif kind == "vector":
            assert stage.elements is not None and stage.op is not None
            size = DTYPE_BYTES[self.spec.stage_dtype(stage.dtype or "")]
            cycles = count * costs.vector_cycles(hw, stage.op, size,
                                                 _arr(stage.elements.evaluate(env), n))
        else:
            assert stage.cycles is not None
            cycles = _arr(stage.cycles.evaluate(env), n) * count
        if ctx.detail:
            assert mult is not None
            execs = float(mult[0])
            ctx.stages.append(StageDetail(ctx.side, stage.name, stage.pipe,
                                          float(cycles[0]) * execs, execs * float(count[0]),
                                          **extra))
        return cycles, gm

    # ---- static checks and the roofline ------------------------------------------------------

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



def _accumulate(busy: dict[str, np.ndarray], pipe: str, cycles: np.ndarray) -> None:
    """busy[pipe] += cycles, taking ``cycles`` (the caller's own array) as the first term."""
    if pipe in busy:
        busy[pipe] += cycles
    else:
        busy[pipe] = np.add(0.0, cycles, out=cycles)  # 0.0 + x, as a sum starting at 0 gives


def _where_more_than_one(trips: np.ndarray, cycles: float) -> np.ndarray:
    """``where(trips > 1, cycles, 0.0)``. A bool times a finite ``cycles >= 0`` gives exactly
    ``cycles`` or +0.0, without where's per-row branch (mispredicted on mixed batches)."""
    more = trips > 1.0
    if math.isfinite(cycles) and cycles >= 0.0:
        return np.multiply(more, cycles)
    return np.where(more, cycles, 0.0)


def _loop_time(trips: np.ndarray, buffers: np.ndarray | None, seq: np.ndarray,
               steady: np.ndarray, recurrence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A loop's latency and exported recurrence from its trips, buffer counts (None: one
    each), sequential trip, steady-state trip and nested recurrence (see ``_loop``)::

        latency  = where(double, seq + later * steady, trips * seq)
        exported = where(double, trips * recurrence, later * seq + steady)

    with ``double = buffers >= 2``, ``later = max(trips - 1, 0)``, both 0 where
    ``trips <= 0``. A batch whose rows agree on ``double`` computes that side only.
    Overwrites ``seq`` (the caller's own array, read last here)."""
    later = np.subtract(trips, 1.0)
    np.maximum(later, 0.0, out=later)
    double = buffers >= 2 if buffers is not None else None
    some_double = double is not None and bool(double.any())
    all_double = double is not None and some_double and bool(double.all())
    if some_double:
        pipelined = np.multiply(later, steady)
        np.add(seq, pipelined, out=pipelined)
        double_exported = trips * recurrence
    if not all_double:
        np.multiply(later, seq, out=later)
        single_exported = np.add(later, steady, out=later)
        single_latency = np.multiply(trips, seq, out=seq)
    if not some_double:
        latency, exported = single_latency, single_exported
    elif all_double:
        latency, exported = pipelined, double_exported
    else:
        assert double is not None
        latency = np.where(double, pipelined, single_latency)
        exported = np.where(double, double_exported, single_exported)
    return _unless_no_trips(trips, latency), _unless_no_trips(trips, exported)


def _unless_no_trips(trips: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``where(trips <= 0, 0.0, value)``; ``value`` itself where every row has a trip."""
    none = trips <= 0
    return np.where(none, 0.0, value) if none.any() else value


def _fold_maximum(arrays: list[np.ndarray]) -> np.ndarray:
    """np.maximum over the arrays, left to right, as ``np.maximum.reduce`` of their stack
    folds them, without the stacked copy."""
    out: np.ndarray = np.maximum(arrays[0], arrays[1])
    for arr in arrays[2:]:
        np.maximum(out, arr, out=out)
    return out


def _bound(pipes: Mapping[str, np.ndarray], gm: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Index into BOUND_NAMES of the largest column: ``argmax`` of the columns stacked, the
    first one on ties, column by column (no stacked copy, and an all-zero pipe column costs
    one pass)."""
    columns = [*(pipes[c] for c in PIPE_COLUMNS), gm, head]
    best = columns[0].copy()
    index = np.zeros(best.shape, dtype=np.int64)
    for i, column in enumerate(columns[1:], 1):
        above = column > best  # strictly: a tie keeps the earlier column, as argmax does
        if above.any():
            index[above] = i
        np.maximum(best, column, out=best)
    if np.isnan(best).any():  # argmax picks a row's first nan, which > never does
        stacked: np.ndarray = np.argmax(np.stack(columns, axis=1), axis=1)
        return stacked
    return index


def _expression_steps(spec: OperatorSpec) -> Iterator[tuple[str | None, Expr]]:
    """Every expression one evaluation runs, in order; derived values carry their name (later
    steps read their spans)."""
    yield from spec.derive
    yield from ((None, e) for _, e in spec.constraints)
    yield from ((None, e) for _, e, _ in launch.core_limit_names(spec))
    yield from ((None, r.expr) for r in launch.range_checks(spec))
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
                for e in (item.bytes, item.rows, item.count, item.l2_hit, item.gm_aligned,
                          item.m, item.n, item.k, item.elements, item.cycles):
                    if e is not None:
                        yield None, e

    for side in spec.sides:
        yield None, side.cores
        if side.items is not None:
            yield None, side.items
        yield from walk(side.body)
