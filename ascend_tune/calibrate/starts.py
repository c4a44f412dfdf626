"""Where a fit starts, and which start's fit is kept (docs/model.md "Calibration", rule 5):
the sourced profile, and the best point of a line search along each coefficient alone; each
start fitted on most of the fit rows, the one that predicts the remaining fit rows best wins.
The held-out rows choose nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.coefficients import prior_spread, scaled_profile
from ascend_tune.calibrate.descent import Descent, descend
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.calibrate.row_model import RowModel, RowTimes
from ascend_tune.calibrate.solver import (
    COARSE_TOL,
    LOSS_SCALE,
    SCREEN_STEP,
    Problem,
    log_bounds,
    )

# Starts of the fit besides the profile as it is: a line search along each coefficient alone
# (the others at their sources), at these shares of the log way to each physical bound. A
# coefficient whose line holds a point that explains the rows much better than the source (a
# port a tenth of its source, hidden there behind another limit or bending the fit into a
# compensating basin) starts a fit from that point. Each point costs one model evaluation.
LINE_SHARES = (0.25, 0.5, 0.75, 1.0)
# A line's best point starts a fit when its cost is below this share of the source's.
LINE_GAIN = 0.8
# At most this many line starts (the best), besides the source.
LINE_STARTS = 4
# Fit rows needed before candidate fits are chosen by rows they did not see; below, the start
# at the source is the fit.
SELECTION_MIN_ROWS = 8
# Every SELECTION_STRIDE-th fit row is a selection row (the rest fit each candidate).
SELECTION_STRIDE = 4
# Another start's fit replaces the one from the sourced profile only when it predicts the
# selection rows better by this factor: between fits the rows cannot tell apart, the one
# nearest the sources stays (a near-tie is noise, not evidence).
SELECTION_MARGIN = 0.9


def robust_cost(residuals: np.ndarray) -> float:
    """The solver's objective (soft-L1 at LOSS_SCALE) of a residual vector."""
    z = (residuals / LOSS_SCALE) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


def line_starts(model: RowModel, rows: Sequence[Measurement], fit_rows: np.ndarray,
                 names: list[str], start: RowTimes) -> list[tuple[str, np.ndarray]]:
    """(what, log scales) of each extra start: the best point of each coefficient's line whose
    cost beats the source's by LINE_GAIN, the LINE_STARTS best."""
    spreads = np.array([prior_spread(n, model.hw.data) for n in names])
    probe = Problem(model, rows, fit_rows, names, start, spreads)
    lo, hi = log_bounds(probe)
    zeros = np.zeros(len(names))
    source_cost = robust_cost(probe.with_prior(zeros, probe.residuals_of(start)))
    found = []
    for j, name in enumerate(names):
        best: tuple[float, np.ndarray] | None = None
        for bound in (lo[j], hi[j]):
            for share in LINE_SHARES:
                x = zeros.copy()
                x[j] = share * bound
                if abs(x[j]) < SCREEN_STEP:
                    continue
                cost = robust_cost(probe.residuals(x))
                if best is None or cost < best[0]:
                    best = (cost, x)
        if best is not None and best[0] < LINE_GAIN * source_cost:
            found.append((best[0], f"{name} x{np.exp(best[1][j]):.3g}", best[1]))
    found.sort(key=lambda f: f[0])
    return [(what, x) for _cost, what, x in found[:LINE_STARTS]]


def _check_mape(model: RowModel, descent: Descent, names: list[str], rows: Sequence[Measurement],
                check: np.ndarray) -> float:
    scales = dict(zip(names, np.exp(descent.every).tolist(), strict=True))
    t = model.evaluate(scaled_profile(model.hw, scales), model.groups_of(check))
    measured = np.array([rows[i].time_us for i in check])
    return float(np.mean(np.abs(t.time_us[check] / measured - 1.0)))


def choose_start(model: RowModel, rows: Sequence[Measurement], fit_rows: np.ndarray,
                 names: list[str], start: RowTimes, not_fitted: dict[str, str]
                 ) -> tuple[np.ndarray, dict[str, Any]]:
    """The log scales (over ``names``) the final fit starts from, and what the choice saw
    (``FitResult.selection``; empty when only the source was tried)."""
    zeros = np.zeros(len(names))
    starts = [("the sourced profile", zeros), *line_starts(model, rows, fit_rows, names, start)]
    if len(starts) == 1 or len(fit_rows) < SELECTION_MIN_ROWS:
        return zeros, {}
    check = fit_rows[SELECTION_STRIDE - 1::SELECTION_STRIDE]
    train = np.setdiff1d(fit_rows, check)
    measured = np.array([rows[i].time_us for i in check])
    scores = []
    for what, x0 in starts:
        try:
            trial = descend(model, rows, train, names, x0, start, None, not_fitted, COARSE_TOL)
        except AscendTuneError:
            continue  # nothing determined from there
        scores.append((_check_mape(model, trial, names, rows, check), what, trial.every))
    if not scores:
        return zeros, {}
    best = min(scores, key=lambda s: s[0])
    if scores[0][1] == starts[0][0] and best[0] > SELECTION_MARGIN * scores[0][0]:
        best = scores[0]
    return best[2], {"starts": len(starts), "chosen": best[1], "check_rows": len(check),
                     "check_mape_sourced": float(np.mean(np.abs(
                         start.time_us[check] / measured - 1.0))),
                     "check_mape_chosen": best[0],
                     "candidates": {what: round(score, 6) for score, what, _x in scores}}
