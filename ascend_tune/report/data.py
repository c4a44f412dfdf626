"""What the report shows about one results file, recomputed by the model. Pure: no drawing,
no HTML.

The results file is an input like any other: spec and profile are rebuilt from the text it
embeds and every tuned configuration is re-checked (``emit.load_bundle``), then the model
predicts the baseline, the winner and the winner's neighbours from them. The page therefore
never shows a number the model would not give today; shapes whose recorded latency differs
(a file from another version) are counted so the page can say so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import BOUND_NAMES, PIPE_COLUMNS
from ascend_tune.base.yamlio import is_finite_number
from ascend_tune.emit.render import load_bundle
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import roofline as rf
from ascend_tune.model.engine import Evaluation, ShapeModel
from ascend_tune.report.dispatch import DispatchCheck
from ascend_tune.report.dispatch import judge as judge_dispatch
from ascend_tune.report.kernel_view import KernelView
from ascend_tune.report.kernel_view import view as kernel_view
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key

_DIGITS = 6  # as the results file rounds, so the page and `explain` agree to the last digit


@dataclass(frozen=True)
class Prediction:
    """The model's view of one configuration on one shape."""

    config: dict[str, int]
    latency_us: float
    pipes_us: dict[str, float]  # msprof column -> busy us (slowest core)
    bound: str  # engine.BOUND_NAMES
    efficiency: float  # roofline / latency


@dataclass(frozen=True)
class Neighbour:
    """The winner with one parameter moved one step of its search domain."""

    value: int
    latency_us: float | None  # None when the configuration breaks a check
    violates: str | None

    def change(self, winner_us: float) -> float | None:
        """Latency relative to the winner's (+0.05 = 5 % slower)."""
        return None if self.latency_us is None else self.latency_us / winner_us - 1.0


@dataclass(frozen=True)
class Sensitivity:
    param: str
    value: int  # the winner's
    down: Neighbour | None  # None at the low end of the domain
    up: Neighbour | None


@dataclass(frozen=True)
class Roofline:
    """Ceilings of the chip for one operator's work, in the unit of ``work_name``."""

    work_name: str  # "FLOP" (Cube), "vector bytes" or "GM bytes"
    compute_per_s: float | None  # peak work per second; None when the spec has no compute term
    gm_bytes_per_s: float  # HBM bandwidth


@dataclass(frozen=True)
class Measured:
    """What `measure` recorded for a shape: the measured winner's time and, with
    ``measure --baseline``, the baseline configuration's (None: not measured)."""

    winner_us: float | None
    baseline_us: float | None

    @property
    def speedup(self) -> float | None:
        """Baseline over winner, both measured on the device."""
        if self.winner_us is None or self.baseline_us is None:
            return None
        return self.baseline_us / self.winner_us


@dataclass(frozen=True)
class ShapeResult:
    index: int  # position in the results file (sorted by shape)
    shape: dict[str, int]
    key: str
    strategy: str
    evaluations: int
    space_size: int | None
    baseline: Prediction | None  # None when the spec's baseline breaks a check
    baseline_violates: str | None
    tuned: Prediction
    roofline_us: float
    work: float  # roofline work of the shape (Roofline.work_name)
    gm_bytes: float  # compulsory GM traffic
    history: tuple[tuple[int, float], ...]  # (evaluations, best latency so far)
    sensitivity: tuple[Sensitivity, ...]
    recorded_latency_us: float | None  # what the results file says about the winner
    measured: Measured | None = None  # None: nothing of this shape measured

    @property
    def speedup(self) -> float | None:
        return None if self.baseline is None else self.baseline.latency_us / self.tuned.latency_us

    @property
    def changed(self) -> list[tuple[str, int, int]]:
        """(parameter, baseline value, tuned value) for every parameter the tuner moved."""
        if self.baseline is None:
            return []
        return [(p, self.baseline.config[p], v) for p, v in self.tuned.config.items()
                if self.baseline.config[p] != v]

    @property
    def stale(self) -> bool:
        return (self.recorded_latency_us is not None
                and not math.isclose(self.recorded_latency_us, self.tuned.latency_us,
                                     rel_tol=1e-6, abs_tol=1e-6))


@dataclass(frozen=True)
class OperatorResult:
    path: Path
    spec: OperatorSpec
    hw: HardwareProfile
    search: dict[str, Any]  # strategy, seed, budget as recorded
    shapes: tuple[ShapeResult, ...]
    charted: tuple[int, ...]  # indices into shapes that get per-shape charts, in file order
    roofline: Roofline
    dispatch: DispatchCheck | None  # the run-time dispatch on unseen shapes (None: not asked)
    kernel: KernelView | None = None  # TilingData values, leaned-on leaves, range curve

    @property
    def title(self) -> str:
        return f"{self.spec.display_name} on {self.hw.name}"

    @property
    def geomean_speedup(self) -> float | None:
        s = [r.speedup for r in self.shapes if r.speedup is not None]
        return float(np.exp(np.mean(np.log(s)))) if s else None

    @property
    def max_speedup(self) -> float | None:
        s = [r.speedup for r in self.shapes if r.speedup is not None]
        return max(s) if s else None

    @property
    def measured_shapes(self) -> int:
        """Shapes whose winner was measured on a device."""
        return sum(r.measured is not None and r.measured.winner_us is not None
                   for r in self.shapes)

    @property
    def measured_geomean_speedup(self) -> float | None:
        """Geomean of the measured speedups (shapes with winner and baseline measured)."""
        s = [r.measured.speedup for r in self.shapes
             if r.measured is not None and r.measured.speedup is not None]
        return float(np.exp(np.mean(np.log(s)))) if s else None

    @property
    def median_efficiency(self) -> float:
        return float(np.median([r.tuned.efficiency for r in self.shapes]))

    @property
    def bounds(self) -> list[tuple[str, int]]:
        """How many winners each quantity bounds, most common first."""
        return Counter(r.tuned.bound for r in self.shapes).most_common()

    @property
    def stale_count(self) -> int:
        return sum(r.stale for r in self.shapes)


def gather(path: Path, chart_shapes: int, dispatch_shapes: int = 0) -> OperatorResult:
    """Read and re-check ``path``; predict every shape's baseline, winner and neighbours, and
    judge the run-time dispatch on ``dispatch_shapes`` unseen shapes."""
    bundle = load_bundle(results.read_all(path), str(path))
    spec, hw = bundle.spec, bundle.hw
    entries = bundle.doc["shapes"]
    shapes = tuple(_shape_result(spec, hw, i, entry, best, f"{path}: shapes[{i}]")
                   for i, (entry, (_shape, best)) in enumerate(zip(entries, bundle.shapes,
                                                                   strict=True)))
    # Charts for the shapes where the time goes; ties keep file order (deterministic).
    order = sorted(range(len(shapes)), key=lambda i: (-shapes[i].tuned.latency_us, i))
    search = bundle.doc.get("search")
    charted = tuple(sorted(order[:chart_shapes]))
    return OperatorResult(path, spec, hw, dict(search) if isinstance(search, Mapping) else {},
                          shapes, charted, roofline(spec, hw),
                          judge_dispatch(bundle, dispatch_shapes),
                          kernel_view(bundle, [(s.shape, s.tuned.config) for s in shapes],
                                      [s.tuned.latency_us for s in shapes], charted))


def roofline(spec: OperatorSpec, hw: HardwareProfile) -> Roofline:
    """The ceiling drawn (ascend_tune.model.roofline): Cube FLOP/s when the spec counts Cube work,
    else vector bytes/s when it counts vector work, and HBM bytes/s."""
    top = rf.ceilings(spec, hw)
    if top.cube_flops_per_s is not None:
        return Roofline("FLOP", top.cube_flops_per_s, top.gm_bytes_per_s)
    if top.vector_bytes_per_s is not None:
        return Roofline("vector bytes", top.vector_bytes_per_s, top.gm_bytes_per_s)
    return Roofline("GM bytes", None, top.gm_bytes_per_s)


def _work(spec: OperatorSpec, model: ShapeModel) -> tuple[float, float]:
    done = rf.work(spec, model.base_env)
    shown = done.cube_flops if done.cube_flops is not None else done.vector_bytes
    return (done.gm_bytes if shown is None else shown), done.gm_bytes


def neighbours(model: ShapeModel, config: Mapping[str, int]
               ) -> list[tuple[str, int | None, int | None]]:
    """(parameter, next lower, next higher value of its search domain) around ``config``; a
    value outside the domain (a baseline that won) gets the nearest domain values each side."""
    out = []
    for p, grid in zip(model.spec.params, model.grids, strict=True):
        v = config[p]
        lower = grid[grid < v]
        upper = grid[grid > v]
        out.append((p, int(lower.max()) if lower.size else None,
                    int(upper.min()) if upper.size else None))
    return out


def _shape_result(spec: OperatorSpec, hw: HardwareProfile, index: int, entry: Mapping[str, Any],
                  best: dict[str, int], where: str) -> ShapeResult:
    shape = {k: int(v) for k, v in entry["shape"].items()}
    where = f"{where} ({shape_key(shape)})"
    model = ShapeModel(spec, hw, shape)
    base = model.baseline_values()
    steps = neighbours(model, best)
    configs = [best, base]
    for p, lo, hi in steps:
        configs += [{**best, p: v} for v in (lo, hi) if v is not None]
    # One vectorised evaluation for the winner, the baseline and every neighbour.
    ev = model.evaluate(np.array([[c[p] for p in spec.params] for c in configs], dtype=np.int64))
    if not ev.valid[0]:
        raise AscendTuneError(f"{where}: the tuned configuration breaks "
                              f"'{model.constraint_names[int(ev.failed[0])]}'")
    tuned = _prediction(model, ev, 0, best)
    baseline = _prediction(model, ev, 1, base) if ev.valid[1] else None
    violates = None if ev.valid[1] else model.constraint_names[int(ev.failed[1])]
    row = 2
    sens = []
    for p, lo, hi in steps:
        found: list[Neighbour | None] = []
        for v in (lo, hi):
            if v is None:
                found.append(None)
                continue
            ok = bool(ev.valid[row])
            found.append(Neighbour(v, round(float(ev.latency_us[row]), _DIGITS) if ok else None,
                                   None if ok else model.constraint_names[int(ev.failed[row])]))
            row += 1
        sens.append(Sensitivity(p, best[p], found[0], found[1]))
    work, gm_bytes = _work(spec, model)
    history = _history(entry.get("history"), where)
    return ShapeResult(
        index=index, shape=shape, key=shape_key(shape),
        strategy=str(entry.get("strategy", "?"))[:40],
        evaluations=_count(entry.get("evaluations"), history, where),
        space_size=model.space_size, baseline=baseline, baseline_violates=violates,
        tuned=tuned, roofline_us=model.roofline_us, work=work, gm_bytes=gm_bytes,
        history=history, sensitivity=tuple(sens),
        recorded_latency_us=_recorded_latency(entry), measured=_measured(entry, where))


def _prediction(model: ShapeModel, ev: Evaluation, row: int, config: Mapping[str, int]
                ) -> Prediction:
    latency = float(ev.latency_us[row])
    return Prediction(
        config={p: int(config[p]) for p in model.spec.params},
        latency_us=round(latency, _DIGITS),
        pipes_us={c: round(float(ev.pipes_us[c][row]), _DIGITS) for c in PIPE_COLUMNS},
        bound=BOUND_NAMES[int(ev.bound[row])],
        efficiency=round(model.roofline_us / latency, _DIGITS))


def _history(raw: Any, where: str) -> tuple[tuple[int, float], ...]:
    """The recorded convergence: [[evaluations, best latency], ...], evaluations never
    falling, latencies positive and never rising. Absent in files written before it was
    recorded."""
    if raw is None:
        return ()
    problem = "history must be a list of [evaluations, latency_us] pairs"
    if not isinstance(raw, list):
        raise AscendTuneError(f"{where}: {problem}")
    out: list[tuple[int, float]] = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], int)
                and not isinstance(item[0], bool) and item[0] >= 1 and is_finite_number(item[1])
                and item[1] > 0):
            raise AscendTuneError(f"{where}: {problem}, got {item!r:.60}")
        if out and (item[0] < out[-1][0] or item[1] > out[-1][1]):
            raise AscendTuneError(f"{where}: history must improve step by step, got "
                                  f"{item!r:.60} after {list(out[-1])!r:.60}")
        out.append((item[0], float(item[1])))
    return tuple(out)


def _count(raw: Any, history: Sequence[tuple[int, float]], where: str) -> int:
    last = history[-1][0] if history else 0
    if raw is None:
        return last
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < last:
        raise AscendTuneError(f"{where}: evaluations must be an integer of at least {last}, got "
                              f"{raw!r:.40}")
    return raw


def _measured_time(node: Any, what: str, where: str) -> float | None:
    """The ``time_us`` of a recorded measurement (None: none, or a failed run's record)."""
    if not isinstance(node, Mapping) or "time_us" not in node:
        return None
    value = node["time_us"]
    if not (is_finite_number(value) and value > 0):
        raise AscendTuneError(f"{where}: {what}.time_us must be a finite positive number, got "
                              f"{value!r:.40}")
    return float(value)


def _measured(entry: Mapping[str, Any], where: str) -> Measured | None:
    """The device times `measure` recorded for the shape's winner and baseline."""
    base = entry.get("baseline")
    found = Measured(_measured_time(entry.get("measured"), "measured", where),
                     _measured_time(base.get("measured") if isinstance(base, Mapping) else None,
                                    "baseline.measured", where))
    return None if found.winner_us is None and found.baseline_us is None else found


def _recorded_latency(entry: Mapping[str, Any]) -> float | None:
    predicted = entry.get("predicted")
    value = predicted.get("latency_us") if isinstance(predicted, Mapping) else None
    return float(value) if value is not None and is_finite_number(value) else None
