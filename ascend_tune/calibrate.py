"""Fit a hardware profile to measurements, and measure the model's error.

The fitted quantities are multiplicative scales on groups of profile numbers (a bandwidth
curve, a latency, the head overhead, Cube and Vector cycle costs). Fitting is bounded least
squares on log errors, done in two steps as the reference protocol recommends
(performance_model.md §5.5): per-pipe busy times first (each pipe's own coefficients), then
end-to-end latency for what only the total shows (head overhead, shared bandwidth).
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ascend_tune import results
from ascend_tune.engine import ShapeModel
from ascend_tune.errors import AscendTuneError
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.vocabulary import PIPE_COLUMNS

__all__ = ["COEFFICIENTS", "apply", "error_stats", "fit", "load_profile_data", "predict",
           "profile_document", "write_profile"]
from ascend_tune.measurements import Measurement
from ascend_tune.spec import OperatorSpec

SCALE_BOUNDS = (0.2, 5.0)


@dataclass(frozen=True)
class Coefficient:
    name: str
    doc: str
    leaves: tuple[tuple[str, ...], ...]  # key paths of profile leaves it scales
    pipes: tuple[str, ...]  # measured pipe columns it explains (empty: end-to-end only)


COEFFICIENTS = (
    Coefficient("gm_read_bandwidth", "GM->L1 and GM->UB bandwidth curves",
                (("transfers", "gm_to_l1", "bandwidth_curve"),
                 ("transfers", "gm_to_ub", "bandwidth_curve")),
                ("aic_mte2_time_us", "aiv_mte2_time_us")),
    Coefficient("gm_read_latency", "GM->L1 and GM->UB fixed latency",
                (("transfers", "gm_to_l1", "latency_cycles"),
                 ("transfers", "gm_to_ub", "latency_cycles")),
                ("aic_mte2_time_us", "aiv_mte2_time_us")),
    Coefficient("ub_write_bandwidth", "UB->GM bandwidth curve",
                (("transfers", "ub_to_gm", "bandwidth_curve"),), ("aiv_mte3_time_us",)),
    Coefficient("fixpipe_bandwidth", "L0C->GM bandwidth curve",
                (("transfers", "l0c_to_gm", "bandwidth_curve"),), ("aic_fixpipe_time_us",)),
    Coefficient("mte1_bandwidth", "L1->L0A/L0B bandwidth curves",
                (("transfers", "l1_to_l0a", "bandwidth_curve"),
                 ("transfers", "l1_to_l0b", "bandwidth_curve")), ("aic_mte1_time_us",)),
    Coefficient("cube_time", "Cube cycles per fractal and per-Mmad overhead",
                (("cube", "cycles_per_fractal"), ("cube", "mmad_overhead_cycles")),
                ("aic_mac_time_us",)),
    Coefficient("vector_time", "Vector cycles per repeat and issue overhead",
                (("vector", "cycles_per_repeat"), ("vector", "issue_cycles")),
                ("aiv_vec_time_us",)),
    Coefficient("hbm_bandwidth", "aggregate GM (HBM) bandwidth",
                (("memory", "hbm_bandwidth_gbps"),), ()),
    Coefficient("head_overhead", "kernel head (launch) overhead",
                (("launch", "head_base_us"), ("launch", "head_full_chip_us")), ()),
)
# Bandwidths scale values up (faster); everything else scales times up (slower).
_BANDWIDTH = {"gm_read_bandwidth", "ub_write_bandwidth", "fixpipe_bandwidth", "mte1_bandwidth",
              "hbm_bandwidth"}


def _scale_value(value: Any, factor: float, curve: bool) -> Any:
    if curve:  # [[bytes, bytes_per_cycle], ...]: scale the bandwidth column only
        return [[point[0], round(point[1] * factor, 6)] for point in value]
    if isinstance(value, dict):
        return {k: _scale_value(v, factor, False) for k, v in value.items()}
    return round(float(value) * factor, 9)


def apply(data: Mapping[str, Any], scales: Mapping[str, float]) -> dict[str, Any]:
    """A copy of merged profile data with each coefficient's leaves scaled."""
    out = copy.deepcopy(dict(data))
    for coef in COEFFICIENTS:
        factor = scales.get(coef.name, 1.0)
        if factor == 1.0:
            continue
        for path in coef.leaves:
            node = out
            for key in path:
                node = node[key]
            node["value"] = _scale_value(node["value"], factor, path[-1] == "bandwidth_curve")
    return out


@dataclass
class Prediction:
    time_us: np.ndarray
    pipes_us: list[dict[str, float]]


def predict(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement]) -> Prediction:
    times = np.empty(len(rows))
    pipes = []
    for i, m in enumerate(rows):
        model = ShapeModel(spec, hw, m.shape)
        base = model.baseline_values()
        config = {**base, **m.config}
        free = [p for p in m.free if p in spec.params and p not in m.config]
        if free:
            grids = [model.grids[spec.params.index(p)] for p in free]
            candidates = [{**config, **dict(zip(free, (int(v) for v in combo), strict=True))}
                          for combo in itertools.product(*grids)]
        else:
            candidates = [config]
        values = np.array([[c[p] for p in spec.params] for c in candidates], dtype=np.int64)
        ev = model.evaluate(values)
        if not ev.valid.any():
            name = model.constraint_names[int(ev.failed[0])]
            raise AscendTuneError(f"{m.origin}: the measured configuration breaks constraint "
                                  f"'{name}' ({', '.join(f'{k}={v}' for k, v in config.items())})")
        j = int(np.argmin(ev.latency_us))
        times[i] = ev.latency_us[j]
        pipes.append({c: float(ev.pipes_us[c][j]) for c in PIPE_COLUMNS})
    return Prediction(times, pipes)


def split_valid(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement]
                ) -> tuple[list[Measurement], list[str]]:
    """Rows whose configuration the model accepts on ``hw``, and a reason for each other."""
    ok, bad = [], []
    for m in rows:
        try:
            predict(spec, hw, [m])
        except AscendTuneError as exc:
            bad.append(str(exc))
            continue
        ok.append(m)
    return ok, bad


@dataclass(frozen=True)
class Errors:
    n: int
    mape: float
    max_error: float
    spearman: float
    pairwise_agreement: float

    def as_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mape": round(self.mape, 6), "max_error": round(self.max_error, 6),
                "spearman": round(self.spearman, 6),
                "pairwise_agreement": round(self.pairwise_agreement, 6)}


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):  # average ranks over ties
        tie = x == value
        ranks[tie] = ranks[tie].mean()
    return ranks


def error_stats(predicted: np.ndarray, measured: np.ndarray) -> Errors:
    rel = np.abs(predicted - measured) / measured
    n = len(measured)
    if n >= 2:
        rp, rm = _ranks(predicted), _ranks(measured)
        sd = rp.std() * rm.std()
        spearman = float(((rp - rp.mean()) * (rm - rm.mean())).mean() / sd) if sd > 0 else 0.0
        i, j = np.triu_indices(n, k=1)
        dm = np.sign(measured[i] - measured[j])
        dp = np.sign(predicted[i] - predicted[j])
        keep = dm != 0
        agree = float(np.mean(dm[keep] == dp[keep])) if keep.any() else 1.0
    else:
        spearman, agree = 1.0, 1.0
    return Errors(n, float(rel.mean()), float(rel.max()), spearman, agree)


def _least_squares(residuals: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
                   lo: float, hi: float, iterations: int = 40) -> np.ndarray:
    """Bounded Levenberg-Marquardt with a forward-difference Jacobian (few parameters)."""
    x = np.clip(x0, lo, hi)
    r = residuals(x)
    cost = float(r @ r)
    mu = 1e-2
    for _ in range(iterations):
        jac = np.empty((len(r), len(x)))
        for k in range(len(x)):
            step = np.zeros_like(x)
            step[k] = 1e-4
            jac[:, k] = (residuals(x + step) - r) / 1e-4
        jtj = jac.T @ jac
        g = jac.T @ r
        improved = False
        for _ in range(8):
            delta = np.linalg.solve(jtj + mu * (np.diag(np.diag(jtj)) + 1e-9 * np.eye(len(x))),
                                    -g)
            trial = np.clip(x + delta, lo, hi)
            rt = residuals(trial)
            ct = float(rt @ rt)
            if ct < cost:
                improved = cost - ct > 1e-10 * max(cost, 1e-12)
                x, r, cost = trial, rt, ct
                mu = max(mu / 3, 1e-7)
                break
            mu *= 10
        if not improved:
            break
    return np.asarray(x, dtype=np.float64)


@dataclass
class FitResult:
    scales: dict[str, float]
    fitted: list[str]
    before: Errors
    after: Errors
    data: dict[str, Any]  # the calibrated merged profile


def fit(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement],
        prior_weight: float = 0.05) -> FitResult:
    """Per-pipe coefficients from per-pipe times, then the rest from end-to-end times."""
    if not rows:
        raise AscendTuneError("no usable measurement rows to fit")
    measured = np.array([m.time_us for m in rows])
    base_data = dict(hw.data)
    before = error_stats(predict(spec, hw, rows).time_us, measured)
    scales: dict[str, float] = {}
    fitted: list[str] = []
    lo, hi = np.log(SCALE_BOUNDS[0]), np.log(SCALE_BOUNDS[1])

    def profile_for(trial: Mapping[str, float]) -> HardwareProfile:
        return load_profile_data(apply(base_data, trial), f"{hw.name} (calibrating)")

    # Step 1: each pipe's coefficients against that pipe's measured busy time.
    for coefs in _pipe_groups(rows):
        names = [c.name for c in coefs]
        pipes = sorted({p for c in coefs for p in c.pipes})
        pairs = [(i, p) for i, m in enumerate(rows) for p in pipes
                 if m.pipes_us.get(p, 0.0) > 0]
        if not pairs:
            continue

        def pipe_residuals(x: np.ndarray, names: list[str] = names,
                           pairs: list[tuple[int, str]] = pairs) -> np.ndarray:
            trial = {**scales, **dict(zip(names, np.exp(x).tolist(), strict=True))}
            pred = predict(spec, profile_for(trial), rows)
            res = [np.log(max(pred.pipes_us[i][p], 1e-9) / rows[i].pipes_us[p])
                   for i, p in pairs]
            return np.array(res + list(prior_weight * x))

        x = _least_squares(pipe_residuals, np.zeros(len(names)), lo, hi)
        scales.update(dict(zip(names, np.exp(x).tolist(), strict=True)))
        fitted += names

    # Step 2: what only the end-to-end time shows; if no pipe data at all, fit everything.
    end_names = [c.name for c in COEFFICIENTS if not c.pipes]
    if not fitted:
        end_names = [c.name for c in COEFFICIENTS]

    def time_residuals(x: np.ndarray) -> np.ndarray:
        trial = {**scales, **dict(zip(end_names, np.exp(x).tolist(), strict=True))}
        pred = predict(spec, profile_for(trial), rows).time_us
        return np.concatenate([np.log(pred / measured), prior_weight * x])

    x = _least_squares(time_residuals, np.zeros(len(end_names)), lo, hi)
    scales.update(dict(zip(end_names, np.exp(x).tolist(), strict=True)))
    fitted += end_names
    calibrated = apply(base_data, scales)
    after = error_stats(predict(spec, load_profile_data(calibrated, "calibrated"), rows).time_us,
                   measured)
    return FitResult({k: round(v, 6) for k, v in scales.items()}, fitted, before, after,
                     calibrated)


def _pipe_groups(rows: Sequence[Measurement]) -> list[list[Coefficient]]:
    """Coefficients grouped by the measured pipes they explain, only where data exists."""
    have = {p for m in rows for p, v in m.pipes_us.items() if v > 0}
    groups: dict[tuple[str, ...], list[Coefficient]] = {}
    for c in COEFFICIENTS:
        if c.pipes and have & set(c.pipes):
            groups.setdefault(c.pipes, []).append(c)
    return list(groups.values())


def profile_document(result: FitResult, base_ref: str, name: str, files: Sequence[str],
                     rows_used: int, rows_skipped: int) -> dict[str, Any]:
    """The calibrated profile as YAML-ready data: the base plus sourced overrides."""
    doc: dict[str, Any] = {"name": name, "base": base_ref,
                           "description": f"{base_ref} calibrated by ascend-tune"}
    for coef in COEFFICIENTS:
        factor = result.scales.get(coef.name)
        if factor is None or coef.name not in result.fitted or abs(factor - 1.0) < 1e-6:
            continue
        for path in coef.leaves:
            node = result.data
            for key in path:
                node = node[key]
            target = doc
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = {
                "value": node["value"],
                "source": f"calibrated: {coef.doc} x{factor:.4g} of {base_ref}, fitted on "
                          f"{rows_used} measurement(s)",
                "confidence": "med",
            }
    doc["calibration"] = {
        "files": list(files),
        "rows_used": rows_used,
        "rows_skipped": rows_skipped,
        "fitted": {k: result.scales[k] for k in result.fitted},
        "error_before": result.before.as_dict(),
        "error_after": result.after.as_dict(),
    }
    return doc


def write_profile(output: Path, result: FitResult, hw_ref: str, name: str, files: Sequence[str],
                  rows_used: int, rows_skipped: int) -> None:
    """Write the calibrated profile to ``output``. Its base is ``hw_ref``: a built-in name as
    given, a profile file as a path relative to the output's folder."""
    hw_path = Path(hw_ref)
    base_ref = (os.path.relpath(hw_path.resolve(), output.resolve().parent)
                if hw_path.is_file() else hw_ref)
    doc = profile_document(result, base_ref, name, files, rows_used, rows_skipped)
    results.write_atomic(output, yaml.safe_dump(doc, sort_keys=False, width=100))
