"""The calibration fit's numerics: residuals of measured rows under trial scales, the
identifiability screen (a central-difference Jacobian) and the bounded robust least-squares
solve (scipy). :mod:`ascend_tune.calibrate.fit` decides what to fit and reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.calibrate.coefficients import scale_bounds, scaled_profile
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.calibrate.row_model import RowModel, RowTimes

# Log-error scale of the soft-L1 loss: residuals beyond ~5 % count linearly, not squared, so
# one odd measurement cannot drag every coefficient.
LOSS_SCALE = 0.05
# Log step of the identifiability screen (both ways): about 5 %.
SCREEN_STEP = 0.05
# Tolerances of the solve: a first pass to within ~0.1 % (a fresh Jacobian follows), then the
# final one (scales are written to 4-6 significant digits).
COARSE_TOL = 1e-3
FINE_TOL = 1e-6
# Weight of the prior on a sourced value: a leaf one prior deviation (its confidence's log
# spread, coefficients.prior_spread) from its source costs what one row 1 % off costs (about
# the run-to-run scatter of a kernel's time), as a Gaussian prior against rows of that noise
# would. Rows that determine a leaf outweigh it at once; a leaf they barely see stays near its
# source instead of absorbing another leaf's error (issue 45: the HBM rate -50 % for a port
# x0.1).
PRIOR_WEIGHT = 0.01


class Problem:
    """Residuals of the fit rows under trial scales: log(predicted / measured) of each row's
    time and of each measured per-pipe busy time the model also predicts. Only the shape
    groups holding fit rows are evaluated."""

    def __init__(self, model: RowModel, rows: Sequence[Measurement], fit_rows: np.ndarray,
                 names: Sequence[str], base: RowTimes,
                 prior_spread: Sequence[float] | np.ndarray | None = None) -> None:
        self.model, self.hw, self.names = model, model.hw, list(names)
        # Residual weight per coefficient of its log distance from the source (None: no prior).
        self.prior = (None if prior_spread is None
                      else PRIOR_WEIGHT / np.asarray(prior_spread, dtype=np.float64))
        self.fit_rows = fit_rows
        self.groups = model.groups_of(fit_rows)
        self.measured = np.array([rows[i].time_us for i in fit_rows])
        pairs = [(i, j) for i in fit_rows for j, c in enumerate(PIPE_COLUMNS)
                 if rows[i].pipes_us.get(c, 0.0) > 0 and base.pipes_us[i, j] > 0]
        self.pair_rows = np.array([i for i, _j in pairs], dtype=np.int64)
        self.pair_cols = np.array([j for _i, j in pairs], dtype=np.int64)
        self.pair_measured = np.array([rows[i].pipes_us[PIPE_COLUMNS[j]] for i, j in pairs])

    def times(self, x: np.ndarray) -> RowTimes:
        return self.model.evaluate(scaled_profile(
            self.hw, dict(zip(self.names, np.exp(x).tolist(), strict=True))), self.groups)

    def residuals(self, x: np.ndarray) -> np.ndarray:
        """What the solver minimises: the rows' residuals, then the prior's."""
        return self.with_prior(x, self.residuals_of(self.times(x)))

    def with_prior(self, x: np.ndarray, data: np.ndarray) -> np.ndarray:
        return data if self.prior is None else np.concatenate([data, self.prior * x])

    def jacobian_with_prior(self, jac: np.ndarray) -> np.ndarray:
        return jac if self.prior is None else np.vstack([jac, np.diag(self.prior)])

    def data_part(self, residuals: np.ndarray) -> np.ndarray:
        """The rows' residuals of a vector :meth:`residuals` returned."""
        return residuals if self.prior is None else residuals[:len(residuals) - len(self.prior)]

    def residuals_of(self, t: RowTimes) -> np.ndarray:
        pipes = t.pipes_us[self.pair_rows, self.pair_cols]
        return np.concatenate([np.log(t.time_us[self.fit_rows] / self.measured),
                               np.log(np.maximum(pipes, 1e-12) / self.pair_measured)])

    def owners(self) -> np.ndarray:
        """The row (index into all rows) of each residual."""
        return np.concatenate([self.fit_rows, self.pair_rows])


@dataclass(frozen=True)
class Screen:
    """How the predictions of some rows move with each candidate coefficient at scale 1: the
    residual Jacobian, the row of each residual, and per row whether anything it predicts
    moves at all. Computed once, it serves every subset of those rows (each fold of
    ``validate --kfold``), since residuals are per row."""

    names: tuple[str, ...]
    jacobian: np.ndarray
    owners: np.ndarray
    moved: np.ndarray  # (rows, names) bool, over all of the model's rows

    def subset(self, fit_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Jacobian, owners, moves-anything per coefficient) restricted to ``fit_rows``."""
        keep = np.isin(self.owners, fit_rows)
        return self.jacobian[keep], self.owners[keep], self.moved[fit_rows].any(axis=0)


def screen(model: RowModel, rows: Sequence[Measurement], fit_rows: np.ndarray,
           names: Sequence[str], base: RowTimes, at: np.ndarray | None = None,
           step: float = SCREEN_STEP) -> Screen:
    """Central-difference Jacobian at log scales ``at`` (default 0: the profile as it is),
    whose predictions are ``base``; log steps of ``step`` both ways, since a bandwidth exactly
    at a min() kink shows on one side only."""
    problem = Problem(model, rows, fit_rows, names, base)
    k = len(names)
    x0 = np.zeros(k) if at is None else np.asarray(at, dtype=np.float64)
    r0 = problem.residuals_of(base)
    jac = np.empty((len(r0), k))
    moved = np.zeros((model.n_rows, k), dtype=bool)
    for j in range(k):
        sides = []
        for sign in (1.0, -1.0):
            x = x0.copy()
            x[j] += sign * step
            t = problem.times(x)
            sides.append(problem.residuals_of(t))
            pipes = np.abs(t.pipes_us[fit_rows] - base.pipes_us[fit_rows])
            row_moved = ((pipes > 1e-9 * base.pipes_us[fit_rows]).any(axis=1)
                         | (t.time_us[fit_rows] != base.time_us[fit_rows]))
            moved[fit_rows, j] |= row_moved
        jac[:, j] = (sides[0] - sides[1]) / (2.0 * step)
    return Screen(tuple(names), jac, problem.owners(), moved)


class _Secant:
    """The residuals and a Jacobian for ``least_squares``: a finite-difference Jacobian to
    start (the screen's, computed anyway), then Broyden rank-one updates from the residuals the
    solver evaluates anyway. Each model evaluation is one call per distinct shape; a
    finite-difference Jacobian per iteration would cost one per coefficient more."""

    def __init__(self, problem: Problem, x0: np.ndarray, r0: np.ndarray,
                 jac0: np.ndarray) -> None:
        self.problem = problem
        self.x, self.r = x0.copy(), r0
        self.jac: np.ndarray = np.array(jac0, dtype=np.float64)
        self.seen: dict[bytes, np.ndarray] = {x0.tobytes(): r0}

    def residuals(self, x: np.ndarray) -> np.ndarray:
        r = self.seen.get(x.tobytes())
        if r is None:
            r = self.seen[x.tobytes()] = self.problem.residuals(x)
        return r

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        r = self.residuals(x)
        dx = x - self.x
        step = float(dx @ dx)
        if step > 0:
            update: np.ndarray = np.outer((r - self.r) - self.jac @ dx, dx) / step
            self.jac = self.jac + update
        self.x, self.r = x.copy(), r
        return self.jac


def log_bounds(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """The log scales each of ``problem``'s coefficients may take."""
    bounds = [scale_bounds(n, problem.hw.data) for n in problem.names]
    return np.log([b[0] for b in bounds]), np.log([b[1] for b in bounds])


def solve(problem: Problem, x0: np.ndarray, r0: np.ndarray, jac0: np.ndarray,
          tol: float = 1e-6) -> Any:
    """Bounded robust least squares (scipy's trust-region reflective, soft-L1 loss) from
    ``x0``, whose rows' residuals are ``r0`` and their Jacobian about ``jac0`` (the prior's
    are added here); ``tol`` relative on the cost and the step."""
    lo, hi = log_bounds(problem)
    clipped = np.clip(x0, lo, hi)  # a start the narrowed bound excludes (a refit) moves inside
    if not np.array_equal(clipped, x0):
        x0 = clipped
        r0 = problem.residuals_of(problem.times(x0))
    secant = _Secant(problem, x0, problem.with_prior(x0, r0),
                     problem.jacobian_with_prior(jac0))
    return least_squares(secant.residuals, x0, jac=secant.jacobian, bounds=(lo, hi),
                         loss="soft_l1", f_scale=LOSS_SCALE, method="trf", ftol=tol,
                         xtol=tol, gtol=1e-8, max_nfev=60 * len(x0))
