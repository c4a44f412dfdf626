"""The run-time dispatch's predicted regret on shapes nobody tuned, for the report.

A results file is tuned for a list of shapes; the emitted ``TilingFunc`` serves every shape.
Here the report draws unseen shapes from the tuned family: a tuned shape (round robin) with
its token-like dimension (the shape variable whose tuned values span the largest max/min
ratio, ties to the first in spec order; LLM operators see a new M or row count every call)
redrawn log-uniformly from 1 to twice its largest tuned value. Each is dispatched as the
emitted code would (:meth:`Bundle.select`) and compared, by the model, with the shape's own
optimum (``tune_shape``, strategy auto) and with the spec's baseline (the fallback).
Deterministic for a given seed; a draw equal to a tuned shape, one the spec refuses and one
with no valid configuration at all are drawn again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ascend_tune.base.errors import AscendTuneError, NoValidConfigError
from ascend_tune.emit.bundle import Bundle
from ascend_tune.emit.selection import derive, runtime_env
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.spec import evaluate_baseline
from ascend_tune.spec.shapes import check_shape, shape_key
from ascend_tune.tune.shape import DEFAULT_BUDGET, TuneSettings, tune_shape

WITHIN = 1.05  # "near-optimal": dispatched within 5 % of the shape's optimum
DRAWS_PER_SHAPE = 20  # attempts per wanted shape before the sample is left short


@dataclass(frozen=True)
class DispatchRow:
    shape: dict[str, int]
    source: str  # what the dispatch chose from: model, baseline, walk, refined, none
    dispatched_us: float  # inf: no configuration although a valid one exists
    optimum_us: float  # the best of the search and the dispatched configuration
    fallback_us: float  # inf where the baseline is invalid on the shape

    @property
    def ratio(self) -> float:
        return self.dispatched_us / self.optimum_us


@dataclass(frozen=True)
class DispatchCheck:
    token: str
    lo: int
    hi: int
    rows: tuple[DispatchRow, ...]

    def _ratios(self) -> list[float]:
        return sorted(r.ratio for r in self.rows if math.isfinite(r.dispatched_us))

    @property
    def mean(self) -> float:
        ratios = self._ratios()
        return float(np.mean(ratios)) if ratios else math.nan

    @property
    def p90(self) -> float:
        ratios = self._ratios()
        return float(np.percentile(ratios, 90)) if ratios else math.nan

    @property
    def worst(self) -> float:
        ratios = self._ratios()
        return ratios[-1] if ratios else math.nan

    @property
    def within(self) -> float:
        """Share of the shapes dispatched within :data:`WITHIN` of their optimum."""
        return sum(r.ratio <= WITHIN for r in self.rows) / len(self.rows) if self.rows else 0.0

    @property
    def slower_than_fallback(self) -> int:
        return sum(r.dispatched_us > r.fallback_us for r in self.rows)

    @property
    def failed(self) -> int:
        return sum(not math.isfinite(r.dispatched_us) for r in self.rows)


def token_dim(shape_vars: Sequence[str], tuned: Sequence[Mapping[str, int]]) -> str:
    """The shape variable whose tuned values span the largest max/min ratio (ties: first)."""
    def spread(v: str) -> float:
        values = [max(1, s[v]) for s in tuned]
        return max(values) / min(values)

    return max(shape_vars, key=lambda v: (spread(v), -shape_vars.index(v)))


def judge(bundle: Bundle, n: int, seed: int = 0, budget: int = DEFAULT_BUDGET
          ) -> DispatchCheck | None:
    """The dispatch of ``bundle`` on ``n`` unseen shapes of its family (None for n = 0)."""
    spec, hw = bundle.spec, bundle.hw
    tuned = [s for s, _ in bundle.shapes]
    if n <= 0 or not tuned:
        return None
    token = token_dim(spec.shape_vars, tuned)
    lo = max(1, spec.shape_min[token])
    hi = 2 * max(s[token] for s in tuned)
    top = spec.shape_max.get(token)
    hi = max(lo, min(hi, top) if top is not None else hi)
    aic, aiv = int(hw["cube_cores"]), int(hw["vector_cores"])
    env = runtime_env(spec, hw, aic, aiv)
    model = dispatch_model(spec, hw)
    rng = np.random.default_rng(seed)
    seen = {shape_key(s) for s in tuned}
    rows: list[DispatchRow] = []
    for attempt in range(n * DRAWS_PER_SHAPE):
        if len(rows) == n:
            break
        value = round(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        step = spec.shape_multiple.get(token, 1)
        value = max(step, (value + step // 2) // step * step)  # a shape the kernel takes
        shape = {**tuned[attempt % len(tuned)], token: value}
        if shape_key(shape) in seen:
            continue
        seen.add(shape_key(shape))
        try:
            shape = check_shape(spec, shape, "unseen shape")
            best = tune_shape(spec, hw, shape, TuneSettings("auto", budget, seed))
        except (AscendTuneError, NoValidConfigError):
            continue  # refused by the spec, or no valid configuration at all
        sel = bundle.selected(shape)

        def latency(config: Mapping[str, int], shape: dict[str, int] = shape) -> float:
            if derive(spec, env, shape, config) is None:
                return math.inf
            return model.latency_us([shape[v] for v in spec.shape_vars],
                                    [config[p] for p in spec.params], aic, aiv)

        dispatched = math.inf if sel.source == "none" else latency(sel.config)
        optimum = min(latency(best["best"]), dispatched)
        rows.append(DispatchRow(shape, sel.source, dispatched, optimum,
                                latency(evaluate_baseline(spec, {**env, **shape}))))
    return DispatchCheck(token, lo, hi, tuple(rows))

