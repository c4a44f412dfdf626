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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune import costs, launch, roofline
from ascend_tune import expr as expr_mod
from ascend_tune.errors import SpecError
from ascend_tune.expr import Expr
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import Loop, OperatorSpec, Stage, evaluate_baseline
from ascend_tune.vocabulary import DTYPE_BYTES, PIPE_COLUMN, PIPE_COLUMNS


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


def _arr(value: Any, n: int) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    return out if out.shape == (n,) else np.broadcast_to(out, (n,))


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
        """Map index genomes (n, p) to parameter values (n, p)."""
        cols = [g[indices[:, j]] for j, g in enumerate(self.grids)]
        return np.stack(cols, axis=1) if cols else np.zeros((len(indices), 0), np.int64)

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
        """The search seam: index genomes in, predicted latency (us) out, inf where invalid."""
        return self.evaluate(self.values(indices)).latency_us

    def failure_counts(self, values: np.ndarray) -> dict[str, int]:
        """For each constraint and launch check, how many of ``values`` fail it (all checks
        counted, not only the first that fails)."""
        values = np.asarray(values, dtype=np.int64)
        n = values.shape[0]
        _env, checks = self._env_and_checks(values)
        return {name: int(n - np.count_nonzero(np.broadcast_to(np.asarray(ok, dtype=bool), (n,))))
                for name, ok in zip(self.constraint_names, checks, strict=True)}

    def _env_and_checks(self, values: np.ndarray) -> tuple[dict[str, Any], list[Any]]:
        """Parameters and derived values of each row, and one boolean per constraint and
        launch check (in ``constraint_names`` order)."""
        env: dict[str, Any] = dict(self.base_env)
        for j, p in enumerate(self.spec.params):
            env[p] = values[:, j]
        for name, e in self.spec.derive:
            env[name] = e.evaluate(env)
        checks = [e.evaluate(env) for _, e in self.spec.constraints]
        # Inside the domains, the launch checks proven once per shape are skipped.
        inside = (values.shape[0] > 0 and values.shape[1] == len(self.spec.params)
                  and bool((values.min(axis=0) >= self._grid_lo).all()
                           and (values.max(axis=0) <= self._grid_hi).all()))
        checks += [True if c is None else c.passes(env) for c in
                   (self._launch_in_space if inside else self._launch_all)]
        return env, checks

    def _batch_proven(self, values: np.ndarray) -> bool:
        if values.shape[0] == 0 or values.shape[1] != len(self.spec.params):
            return False
        lo, hi = values.min(axis=0), values.max(axis=0)
        if self._space_proven and (lo >= self._grid_lo).all() and (hi <= self._grid_hi).all():
            return True  # inside the domains the whole-space proof covers
        return self._prove(tuple(expr_mod.outer_span(int(a), int(b))
                                 for a, b in zip(lo, hi, strict=True)))

    def _prove(self, spans: tuple[Any, ...]) -> bool:
        hit = self._proven.get(spans)
        if hit is None:
            hit = self._proven[spans] = expr_mod.prove(
                self._steps, {**self._base_spans, **dict(zip(self.spec.params, spans,
                                                              strict=True))})
        return hit

    def evaluate(self, values: np.ndarray, detail: bool = False) -> Evaluation:
        values = np.asarray(values, dtype=np.int64)
        with expr_mod.unchecked() if self._batch_proven(values) else contextlib.nullcontext():
            return self._evaluate(values, detail)

    def _evaluate(self, values: np.ndarray, detail: bool) -> Evaluation:
        n = values.shape[0]
        env, checks = self._env_and_checks(values)
        valid = np.ones(n, dtype=bool)
        failed = np.full(n, -1, dtype=np.int64)
        for i, ok in enumerate(checks):
            ok = np.broadcast_to(np.asarray(ok, dtype=bool), (n,))
            failed[valid & ~ok] = i
            valid &= ok

        latency = np.full(n, np.inf)
        pipes = {c: np.zeros(n) for c in PIPE_COLUMNS}
        gm_us = np.zeros(n)
        head_us = np.zeros(n)
        bound = np.zeros(n, dtype=np.int64)
        stages: list[StageDetail] = []
        rows = np.flatnonzero(valid)
        if rows.size:
            # Cost only the valid rows; skip the copy when every row is valid (the GA's usual case).
            sub = env if rows.size == n else {
                k: (v[rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                for k, v in env.items()}
            lat, pip, gm, head, st = self._cost(sub, rows.size, detail)
            latency[rows] = lat
            for c in PIPE_COLUMNS:
                pipes[c][rows] = pip[c]
            gm_us[rows] = gm
            head_us[rows] = head
            stack = np.stack([*(pip[c] for c in PIPE_COLUMNS), gm, head], axis=1)
            bound[rows] = np.argmax(stack, axis=1)
            stages = st
        return Evaluation(valid, failed, latency, pipes, gm_us, head_us, bound,
                          self.roofline_us, env, stages)

    def _cost(self, env: Mapping[str, Any], n: int, detail: bool
              ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray,
                         list[StageDetail]]:
        hw = self.hw
        clock_mhz = float(hw["clock_mhz"])
        pipes = {c: np.zeros(n) for c in PIPE_COLUMNS}
        side_us: list[np.ndarray] = []
        gm_us = np.zeros(n)
        head_us = np.zeros(n)
        stages: list[StageDetail] = []
        for side in self.spec.sides:
            cores = _arr(side.cores.evaluate(env), n)
            items = _arr(side.items.evaluate(env), n) if side.items is not None else cores
            per_core = np.ceil(items / np.maximum(cores, 1.0))
            ctx = _Ctx(self, env, side.core, cores, n, detail)
            lat, busy, gm, _rec = self._loop(side.body, per_core, np.ones(n), ctx, np.ones(n))
            side_us.append(lat / clock_mhz)
            for pipe, cycles in busy.items():
                pipes[PIPE_COLUMN[(side.core, pipe)]] += cycles / clock_mhz
            gm_us = np.maximum(gm_us, gm / clock_mhz)
            head_us = np.maximum(head_us, costs.head_us(hw, cores, side.core))
            stages += ctx.stages
        body_us = side_us[0]
        if len(side_us) > 1:
            # Mix kernel: Cube and Vector sides overlap; they pay flag handoffs and a launch cost.
            handoffs = (_arr(self.spec.handoffs.evaluate(env), n)
                        if self.spec.handoffs is not None else np.zeros(n))
            body_us = (np.maximum(side_us[0], side_us[1])
                       + handoffs * float(hw["sync_cycles"]) / clock_mhz
                       + float(hw["mix_extra_us"]))
        return head_us + body_us, pipes, gm_us, head_us, stages

    def _loop(self, body: Sequence[Stage | Loop], trips: np.ndarray, buffers: np.ndarray,
              ctx: _Ctx, mult: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray],
                                                    np.ndarray, np.ndarray]:
        """Latency, per-pipe busy cycles, GM cycles and the serial recurrence of a loop.

        A nested loop is not an opaque block: its pipes' busy time joins this loop's per-pipe
        accounting (the hardware queues of the two levels are the same queues), so only what
        the nested loop cannot overlap -- the chain of its single-buffered iterations -- bounds
        this loop's steady state. The recurrence a loop exports is, with one buffer,
        ``(trips - 1) * sequential trip + steady trip`` (its iterations serialise, the first can
        overlap the stages around the loop), with two or more ``trips * recurrence of its own
        nested loops``. A ``trips: 1`` loop therefore exports no more than its own pipes' busy
        time, and pays no iteration cost: wrapping a body in it changes nothing.
        """
        hw = self.hw
        n = ctx.n
        trips = np.maximum(trips, 0.0)
        # A one-trip loop is straight-line code (no back edge): it pays no iteration cost.
        loop_cycles = np.where(trips > 1.0, float(hw["loop_iteration_cycles"]), 0.0)
        seq = loop_cycles.copy()
        busy: dict[str, np.ndarray] = {"scalar": loop_cycles.copy()}
        gm = np.zeros(n)
        recurrence = np.zeros(n)
        handoffs = 0
        prev: str | None = None
        inner_mult = mult * trips
        for item in body:
            if isinstance(item, Loop):
                t = _arr(item.trips.evaluate(ctx.env), n)
                b = (_arr(item.buffers.evaluate(ctx.env), n) if item.buffers is not None
                     else np.ones(n))
                lat, sub_busy, sub_gm, sub_rec = self._loop(item.body, t, b, ctx, inner_mult)
                seq = seq + lat
                for pipe, cycles in sub_busy.items():
                    busy[pipe] = busy.get(pipe, 0.0) + cycles
                gm = gm + sub_gm
                recurrence = np.maximum(recurrence, sub_rec)
                first, last = _end_pipes(item.body)
            else:
                cycles, stage_gm = self._stage(item, ctx, inner_mult)
                seq = seq + cycles
                busy[item.pipe] = busy.get(item.pipe, 0.0) + cycles
                gm = gm + stage_gm
                first = last = item.pipe
            if prev is not None and first is not None and first != prev:
                handoffs += 1
            prev = last if last is not None else prev
        sync = handoffs * float(hw["sync_cycles"])
        seq = seq + sync
        busy["scalar"] = busy["scalar"] + sync
        steady = np.maximum(np.maximum.reduce([*busy.values(), gm]), recurrence)
        pipelined = seq + np.maximum(trips - 1.0, 0.0) * steady
        double = buffers >= 2
        latency = np.where(trips <= 0, 0.0, np.where(double, pipelined, trips * seq))
        exported = np.where(trips <= 0, 0.0,
                            np.where(double, trips * recurrence,
                                     np.maximum(trips - 1.0, 0.0) * seq + steady))
        return latency, {p: c * trips for p, c in busy.items()}, gm * trips, exported

    def _stage(self, stage: Stage, ctx: _Ctx, mult: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        env, n, hw = ctx.env, ctx.n, self.hw
        count = _arr(stage.count.evaluate(env), n) if stage.count is not None else np.ones(n)
        gm = np.zeros(n)
        extra: dict[str, Any] = {}
        kind = stage.kind  # vocabulary.STAGE_KINDS
        if kind == "transfer":
            assert stage.bytes is not None and stage.path is not None
            nbytes = _arr(stage.bytes.evaluate(env), n)
            rows = _arr(stage.rows.evaluate(env), n) if stage.rows is not None else np.ones(n)
            hit = (_arr(stage.l2_hit.evaluate(env), n) if stage.l2_hit is not None
                   else np.zeros(n))
            aligned = (np.broadcast_to(np.asarray(stage.gm_aligned.evaluate(env), bool), (n,))
                       if stage.gm_aligned is not None else None)
            element = (DTYPE_BYTES[self.spec.stage_dtype(self.spec.dtypes[stage.operand])]
                       if stage.operand is not None else 1)
            t = costs.transfer(hw, stage.path, nbytes, rows, count, hit, ctx.cores, aligned,
                               stage.layout, element)
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



def _end_pipes(body: Sequence[Stage | Loop]) -> tuple[str | None, str | None]:
    """The pipe a body starts and ends on (through nested loops), for flag handoffs: entering a
    nested loop hands off to its first stage's pipe, leaving it from its last stage's."""
    pipes: list[str] = []
    for item in body:
        if isinstance(item, Loop):
            first, last = _end_pipes(item.body)
            pipes += [p for p in (first, last) if p is not None]
        else:
            pipes.append(item.pipe)
    return (pipes[0], pipes[-1]) if pipes else (None, None)

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
