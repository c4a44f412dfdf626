"""One fit from one start (docs/model.md "Calibration", rules 3-5): screen where the fit
stands, fit what the rows determine there, solve, and screen again where the solve ended until
the set of fitted coefficients stops changing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.coefficients import prior_spread
from ascend_tune.calibrate.identifiability import identify
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.calibrate.row_model import RowModel, RowTimes
from ascend_tune.calibrate.solver import COARSE_TOL, SCREEN_STEP, Problem, Screen, screen, solve

# Times the fit re-screens every coefficient where its solve ended and solves again.
REFIT_ROUNDS = 3


def together_reasons(together: Mapping[str, list[str]], not_fitted: dict[str, str]) -> None:
    for name, partners in together.items():
        not_fitted[name] = (f"{name} and {' and '.join(partners)} scale together in these rows "
                            f"(only their combination is determined; {partners[0]} is fitted)")


def pull(jac: np.ndarray, residuals: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """How much of the rows' residuals each coefficient alone could remove where the screen
    was taken: the residuals' projection on its Jacobian column. When the rows are too few for
    every coefficient they see, those they pull on most are fitted: a coefficient they see but
    are content with (a sync cost that would move 1 %) gives way to one they want moved."""
    norms = np.linalg.norm(jac, axis=0)
    proj = np.abs(jac.T @ residuals) / np.maximum(norms, 1e-300)
    return {n: float(p) if norms[j] > 0 else 0.0 for j, (n, p) in enumerate(zip(names, proj,
                                                                              strict=True))}


def check_counts(names: list[str], n_fit: int, sensitivity: Mapping[str, float],
                  not_fitted: dict[str, str]) -> list[str]:
    """Refuse a fit with nothing to fit; keep at most one coefficient per fit row (measured
    pipe times let more be independent, but one kernel's pipes cannot pin down several
    device numbers), those ranked first by ``sensitivity``."""
    if not names:
        first = next(iter(not_fitted.items()), ("", "no coefficient"))
        raise AscendTuneError(f"nothing to calibrate: no coefficient is determined by the "
                              f"{n_fit} fit row(s) (e.g. {first[0]}: {first[1]})")
    if n_fit < len(names):
        ranked = sorted(names, key=lambda n: -sensitivity.get(n, 0.0))
        for name in ranked[n_fit:]:
            not_fitted[name] = (f"{len(names)} coefficients are determined but only {n_fit} "
                                "fit row(s) were measured: those the rows pull on least are "
                                "left at 1 (measure more shapes or `ascend-tune probe` "
                                "configurations)")
        names = [n for n in names if n in ranked[:n_fit]]
    return names


@dataclass
class Descent:
    """One fit from one start: the coefficients it fitted, where it ended (log scales over
    every candidate), the last screen's Jacobian of the fitted ones, the solve, and why the
    others were left alone."""

    names: list[str]
    every: np.ndarray
    jac: np.ndarray
    owners: np.ndarray  # the row of each of jac's residuals
    solution: Any
    not_fitted: dict[str, str]


def descend(model: RowModel, rows: Sequence[Measurement], fit_rows: np.ndarray,
             candidate_names: list[str], every: np.ndarray, start: RowTimes,
             source: tuple[Screen, dict[str, str]] | None, not_fitted: dict[str, str],
             tol: float) -> Descent:
    """Fit from log scales ``every`` (over ``candidate_names``): screen there, fit what the
    rows determine there, and where the solve ended screen again, until the set of fitted
    coefficients stops changing (a bandwidth no longer the bound drops out; a port rate or a
    head the start hid behind another limit may bound rows now). ``source``: the screen at
    the profile as it is (``every`` all zero) and the reasons found there, to reuse."""
    spreads = np.array([prior_spread(n, model.hw.data) for n in candidate_names])
    names: list[str] | None = None
    reasons = dict(not_fitted)
    solution: Any = None
    jac_kept = np.zeros((0, 0))
    owners = np.zeros(0, dtype=np.int64)
    # Every candidate over the fit rows, built once: the residuals where each round stands.
    whole = Problem(model, rows, fit_rows, candidate_names, start)
    for _round in range(REFIT_ROUNDS + 1):
        if _round == 0 and source is not None:
            at, reasons = source[0], dict(source[1])
            jac_all, owners = at.subset(fit_rows)[:2]
            here = whole.residuals_of(start)
            found = identify(jac_all, candidate_names)
        else:
            t = whole.times(every)
            here = whole.residuals_of(t)
            at = screen(model, rows, fit_rows, candidate_names, t, at=every)
            jac_all, owners = at.jacobian, at.owners
            found = identify(jac_all, candidate_names)
            for name in found.kept:
                reasons.pop(name, None)
            for name in found.unseen:
                if name not in reasons:
                    scale = np.exp(every[candidate_names.index(name)])
                    reasons[name] = (f"undetermined at the fitted point: scaled to "
                                     f"x{scale:.3g} it no longer bounds any row (left at 1)")
            together_reasons(found.together, reasons)
        kept = check_counts(found.kept, len(fit_rows), pull(jac_all, here, candidate_names),
                             reasons)
        cols = [candidate_names.index(n) for n in kept]
        jac_kept = jac_all[:, cols]
        if kept == names:
            break
        names = kept
        sub = Problem(model, rows, fit_rows, names, start, spreads[cols])
        x0 = every[cols]
        every = np.zeros(len(candidate_names))
        every[cols] = x0
        r0 = sub.residuals_of(start) if not x0.any() else sub.residuals_of(sub.times(x0))
        solution = solve(sub, x0, r0, jac_kept, COARSE_TOL)
        every[cols] = np.asarray(solution.x, dtype=np.float64)
        # A fit that stayed within the screening step of the source was already probed there.
        if _round == 0 and source is not None and np.abs(every).max() <= SCREEN_STEP:
            break
    assert names is not None
    cols = [candidate_names.index(n) for n in names]
    sub = Problem(model, rows, fit_rows, names, start, spreads[cols])
    x = every[cols]
    solution = solve(sub, x, sub.residuals_of(sub.times(x)), jac_kept, tol)
    every = np.zeros(len(candidate_names))
    every[cols] = np.asarray(solution.x, dtype=np.float64)
    solution.fun = sub.data_part(np.asarray(solution.fun, dtype=np.float64))
    return Descent(names, every, jac_kept, owners, solution, reasons)
