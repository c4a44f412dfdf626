"""How precisely rows determine the fitted coefficients: 95 % intervals of the fitted scales,
and the precision a planned set of rows would give at a stated run-to-run noise.

The fit solves for log scales ``x`` (``calibrate.solver``); near the solution the residuals are
about linear in ``x``, ``r(x) ~ r + J dx``, so the least-squares estimate has covariance
``s^2 (J^T J)^-1``, where ``s^2`` is the residuals' variance per degree of freedom (the scatter
the fit could not explain: run-to-run noise and whatever the model's form misses, so a model
that fits badly reports wide intervals, as it should). A coefficient the rows see only in
combination with another gets a wide interval from the near-singular ``J^T J``.

The soft-L1 loss of the fit damps outliers that this estimate counts in full, so the interval
is, if anything, wide. It is the standard linearised interval, with Student's t quantile for
the residuals' degrees of freedom (the scatter is itself estimated from them: with 15 degrees
of freedom the quantile is 2.13, not the normal's 1.96); on the log scale, so it is symmetric
in ratio: ``scale / f .. scale * f``. A planned precision, at a stated noise, uses the
normal quantile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

Z95 = 1.959963984540054  # two-sided 95 % quantile of the normal distribution


@dataclass(frozen=True)
class Interval:
    """A fitted scale's 95 % interval: ``scale / factor .. scale * factor``."""

    scale: float
    factor: float  # exp(1.96 standard errors of log(scale)); 1.10 reads "within 10 %"

    @property
    def low(self) -> float:
        return self.scale / self.factor

    @property
    def high(self) -> float:
        return self.scale * self.factor

    @property
    def percent(self) -> float:
        """The half-width as a percentage (``factor - 1``)."""
        return 100.0 * (self.factor - 1.0)

    def as_dict(self) -> dict[str, float]:
        return {"low": round(self.low, 6), "high": round(self.high, 6),
                "percent": round(self.percent, 3)}


def log_standard_errors(jacobian: np.ndarray, sigma: float) -> np.ndarray:
    """Standard errors of the log scales for residuals of standard deviation ``sigma`` and
    Jacobian ``jacobian`` (residuals x coefficients). A direction the rows do not see (a zero
    eigenvalue of ``J^T J``) gives infinity for every coefficient that moves along it."""
    jtj = jacobian.T @ jacobian
    values, vectors = np.linalg.eigh(jtj)
    scale = max(float(values.max(initial=0.0)), 1e-300)
    seen = values > 1e-10 * scale
    variance = (vectors[:, seen] ** 2) @ (1.0 / values[seen])
    blind = (np.abs(vectors[:, ~seen]) > 1e-6).any(axis=1)
    out: np.ndarray = sigma * np.sqrt(variance)
    out[blind] = math.inf
    return out


def fitted_intervals(jacobian: np.ndarray, scatter: float | None, x: np.ndarray,
                     names: Sequence[str]) -> dict[str, Interval]:
    """The 95 % interval of each fitted scale ``exp(x)``, from the Jacobian of the residuals
    at the solution and the scatter they left there (:func:`residual_scatter`). Empty when
    there is no scatter to estimate from (no more residuals than coefficients)."""
    m, k = jacobian.shape
    if scatter is None or not k:
        return {}
    errors = log_standard_errors(jacobian, scatter)
    quantile = float(stdtrit(m - k, 0.975))
    return {name: Interval(float(math.exp(xi)), _factor(se, quantile))
            for name, xi, se in zip(names, x.tolist(), errors.tolist(), strict=True)}


def planned_percent(jacobian: np.ndarray, names: Sequence[str],
                    noise: float) -> dict[str, float]:
    """The 95 % half-width, in percent, each coefficient would be determined to by rows with
    this Jacobian (elasticities of log time) measured with log-normal noise ``noise`` per
    row (0.01: 1 % run-to-run). Infinity for a coefficient the rows cannot separate."""
    errors = log_standard_errors(jacobian, noise)
    return {name: 100.0 * (_factor(se) - 1.0)
            for name, se in zip(names, errors.tolist(), strict=True)}


def _factor(log_error: float, quantile: float = Z95) -> float:
    # An interval wider than e^700 either way is no interval at all (and would overflow).
    if not math.isfinite(log_error) or quantile * log_error > 700.0:
        return math.inf
    return math.exp(quantile * log_error)


def run_scatter(runs: Sequence[Sequence[float]]) -> float | None:
    """The run-to-run scatter of measured rows' times, as the log-error of one row: the
    pooled standard deviation of log(run time) within each row that kept 2+ runs, over the
    square root of its runs (a row's time is their median, about as precise as their mean
    for a handful of runs). None when no row kept 2 runs."""
    variances, counts = [], []
    for times in runs:
        if len(times) >= 2:
            logs = np.log(np.asarray(times, dtype=np.float64))
            variances.append(float(np.var(logs, ddof=1)))
            counts.append(len(times))
    if not variances:
        return None
    pooled = float(np.average(variances, weights=np.asarray(counts) - 1.0))
    return math.sqrt(pooled / float(np.mean(counts)))


def residual_scatter(residuals: np.ndarray, coefficients: int) -> float | None:
    """The log-error per residual the fit left, per degree of freedom (None: none left)."""
    dof = len(residuals) - coefficients
    return math.sqrt(float(residuals @ residuals) / dof) if dof > 0 else None
