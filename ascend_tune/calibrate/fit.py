"""Fit a hardware profile to measurements, and measure the model's error.

The fitted quantities are multiplicative scales on groups of profile numbers (a bandwidth
curve, a latency, the head overhead, Cube and Vector cycle costs:
:mod:`ascend_tune.calibrate.coefficients`). A fit (docs/model.md
"Calibration"):

1. splits the rows into a fit set and a held-out set before anything is fitted
   (:mod:`ascend_tune.calibrate.split`);
2. leaves alone every coefficient that scales a high-confidence profile leaf (a datasheet or
   official-document number), unless the caller includes it;
3. fits only what the fit rows determine: the Jacobian of the predictions decides
   (:mod:`ascend_tune.calibrate.identifiability`), and too few rows for what is left is refused;
4. solves bounded robust least squares on log errors, end-to-end times and measured per-pipe
   busy times together (:mod:`ascend_tune.calibrate.solver`: ``scipy.optimize.least_squares``,
   soft-L1 loss);
5. reports the held-out error first and the in-sample error second.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, did_you_mean
from ascend_tune.base.vocabulary import COLUMN_PIPE, PIPE_COLUMNS
from ascend_tune.calibrate import split as row_split
from ascend_tune.calibrate.coefficients import (
    ALIASES,
    BY_NAME,
    COEFFICIENTS,
    Coefficient,
    apply,
    leaf,
    scale_bounds,
    scaled_profile,
)
from ascend_tune.calibrate.descent import check_counts, descend, together_reasons
from ascend_tune.calibrate.identifiability import identify
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.calibrate.row_model import RowModel, RowTimes
from ascend_tune.calibrate.solver import (
    FINE_TOL,
    Screen,
    screen,
)
from ascend_tune.calibrate.starts import choose_start
from ascend_tune.calibrate.uncertainty import (
    Interval,
    fitted_intervals,
    residual_scatter,
    run_scatter,
)
from ascend_tune.calibrate.written import compress_origins, profile_document, write_profile
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.spec import OperatorSpec

__all__ = [
    "COEFFICIENTS",
    "DEFAULT_HOLDOUT",
    "FitOptions",
    "FitResult",
    "apply",
    "candidates",
    "error_stats",
    "fit",
    "fit_split",
    "load_profile_data",
    "predict",
    "profile_document",
    "scaled_profile",
    "screen",
    "write_profile",
]

DEFAULT_HOLDOUT = 0.25
# Rows per fitted coefficient below which the fit is reported as weak (not refused).
ROWS_PER_COEFFICIENT = 3
# Elasticity below which a row is not counted as one a coefficient was fitted on.
ROW_SENSITIVITY = 1e-3
# A fitted scale whose 95 % interval spans more than this factor either way is reported as
# not pinned (a guess the rows allowed, not a measurement).
LOOSE_FACTOR = 2.0
# The fit leaving more than this many times the rows' run-to-run scatter (and more than
# FORM_FLOOR) says the model's form misses something the rows show.
FORM_FACTOR = 3.0
FORM_FLOOR = 0.01


# ---- predictions and errors -----------------------------------------------------------------


@dataclass
class Prediction:
    time_us: np.ndarray
    pipes_us: list[dict[str, float]]


def _valid_model(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement]
                 ) -> RowModel:
    model = RowModel(spec, hw, rows)
    if model.invalid:
        raise AscendTuneError(model.invalid[0][1])
    return model


def predict(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement]) -> Prediction:
    """The model's time and per-pipe busy times for each row (the best over a row's free
    parameters); a row whose configuration the model rejects raises."""
    times = _valid_model(spec, hw, rows).evaluate()
    pipes = [dict(zip(PIPE_COLUMNS, (float(v) for v in row), strict=True))
             for row in times.pipes_us]
    return Prediction(times.time_us, pipes)


def split_valid(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement]
                ) -> tuple[list[Measurement], list[str]]:
    """Rows whose configuration the model accepts on ``hw``, and a reason for each other."""
    model = RowModel(spec, hw, rows)
    bad = {i for i, _ in model.invalid}
    return [m for i, m in enumerate(rows) if i not in bad], [r for _, r in model.invalid]


@dataclass(frozen=True)
class Errors:
    n: int
    mape: float
    max_error: float
    # Rank statistics: None where undefined (fewer than 2 rows; no pair of distinct measured
    # times to order), never a flattering 1.0.
    spearman: float | None
    pairwise_agreement: float | None
    bias: float = 0.0  # mean signed relative error: > 0 the model predicts slower than measured

    def as_dict(self) -> dict[str, float | int | None]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        return {"n": self.n, "mape": round(self.mape, 6), "max_error": round(self.max_error, 6),
                "bias": round(self.bias, 6), "spearman": r(self.spearman),
                "pairwise_agreement": r(self.pairwise_agreement)}


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):  # average ranks over ties
        tie = x == value
        ranks[tie] = ranks[tie].mean()
    return ranks


def error_stats(predicted: np.ndarray, measured: np.ndarray) -> Errors:
    signed = (predicted - measured) / measured
    rel = np.abs(signed)
    n = len(measured)
    spearman: float | None = None
    agree: float | None = None
    if n >= 2:  # one row cannot be ranked: both stay undefined
        rp, rm = _ranks(predicted), _ranks(measured)
        sd = rp.std() * rm.std()
        spearman = float(((rp - rp.mean()) * (rm - rm.mean())).mean() / sd) if sd > 0 else 0.0
        i, j = np.triu_indices(n, k=1)
        dm = np.sign(measured[i] - measured[j])
        dp = np.sign(predicted[i] - predicted[j])
        keep = dm != 0
        agree = float(np.mean(dm[keep] == dp[keep])) if keep.any() else None
    return Errors(n, float(rel.mean()), float(rel.max()), spearman, agree, float(signed.mean()))


# ---- the fit --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitOptions:
    holdout: float = DEFAULT_HOLDOUT  # share of rows held out (0: fit on every row)
    seed: int = 0  # of the held-out split
    fit_all: bool = False  # fit high-confidence leaves too
    include: tuple[str, ...] = ()  # coefficients or leaf paths to fit even if high confidence
    exclude: tuple[str, ...] = ()  # coefficients or leaf paths never to fit


@dataclass
class FitResult:
    scales: dict[str, float]  # fitted coefficients only
    fitted: list[str]
    not_fitted: dict[str, str]  # coefficient -> why it was left at 1
    before: Errors  # in-sample: on the fit rows, with the starting profile
    after: Errors  # in-sample: on the fit rows, with the calibrated profile
    held_out_before: Errors | None  # on the held-out rows (None: nothing held out)
    held_out_after: Errors | None
    split: row_split.Split
    warnings: list[str]
    rows_by_coefficient: dict[str, list[str]]  # fitted coefficient -> origins of its rows
    data: dict[str, Any]  # the calibrated merged profile
    base_data: dict[str, Any] = field(default_factory=dict)  # the starting profile
    # fitted coefficient -> its 95 % interval (empty: no more residuals than coefficients)
    intervals: dict[str, Interval] = field(default_factory=dict)
    # Log-error per fit row the fit could not explain, and the rows' run-to-run scatter
    # (None: no degrees of freedom left / no row kept 2+ runs).
    scatter_left: float | None = None
    scatter_runs: float | None = None
    # How the fit was chosen among its starts (empty: one start): the starts tried, the chosen
    # one, and the MAPE of the selection rows (fit rows each candidate was not fitted on)
    # under the sourced profile and the chosen candidate.
    selection: dict[str, Any] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The fit as JSON-ready data: held-out errors first, in-sample second."""
        held = None
        if self.held_out_before is not None and self.held_out_after is not None:
            held = {"rows": self.held_out_before.n, "before": self.held_out_before.as_dict(),
                    "after": self.held_out_after.as_dict()}
        return {
            "split": self.split.as_dict(),
            "held_out": held,
            "in_sample": {"rows": self.before.n, "before": self.before.as_dict(),
                          "after": self.after.as_dict(),
                          "caveat": "in-sample: these rows were fitted, the error flatters"},
            "fitted": {name: {"scale": self.scales[name],
                              "interval95": (self.intervals[name].as_dict()
                                             if name in self.intervals else None),
                              "leaves": [".".join(p) for p in BY_NAME[name].leaves],
                              "rows": compress_origins(self.rows_by_coefficient[name])}
                       for name in self.fitted},
            "not_fitted": dict(self.not_fitted),
            "scatter": {"left_by_fit": _rounded(self.scatter_left),
                        "between_runs": _rounded(self.scatter_runs)},
            "warnings": list(self.warnings),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _resolve(names: Sequence[str], option: str) -> set[str]:
    """Coefficient names or leaf paths (``cube.cycles_per_fractal``) -> coefficient names."""
    by_leaf = {".".join(p): c.name for c in COEFFICIENTS for p in c.leaves}
    out: set[str] = set()
    for name in names:
        if name in ALIASES:
            out.update(ALIASES[name])
        elif name in BY_NAME:
            out.add(name)
        elif name in by_leaf:
            out.add(by_leaf[name])
        else:
            choices = [*BY_NAME, *by_leaf]
            raise AscendTuneError(f"{option} {name}: not a calibrated coefficient or leaf"
                                  f"{did_you_mean(name, choices)}; coefficients: "
                                  f"{', '.join(BY_NAME)}")
    return out


def _protected(hw: HardwareProfile, coef: Coefficient) -> str | None:
    """Why ``coef`` is left alone by default: the first high-confidence leaf it scales."""
    for path in coef.leaves:
        node = leaf(hw.data, path)
        if str(node.get("confidence", "")) == "high":
            source = str(node.get("source", "")).strip()
            source = source if len(source) <= 70 else source[:67] + "..."
            return (f"high-confidence profile value {'.'.join(path)} ({source}); "
                    f"--include {coef.name} or --fit-all to fit it")
    return None


def _unseen_reason(coef: Coefficient, moves_any: bool, rows: Sequence[Measurement],
                   fit_rows: np.ndarray, predicted_pipes_us: np.ndarray) -> str:
    if not moves_any:
        used = any(predicted_pipes_us[i, PIPE_COLUMNS.index(c)] > 0
                   for c in coef.pipes for i in fit_rows)
        if coef.pipes and not used:
            return f"nothing in these rows uses it (no {coef.bound_by} work in the spec's stages)"
        if coef.regime:
            return (f"it changes no prediction in these rows ({coef.regime}; or what it costs "
                    "is limited by something else there)")
        return ("it changes no prediction in these rows (what it costs is limited by something "
                "else there, e.g. the cores' share of GM bandwidth)")
    measured = [c for c in coef.pipes if any(rows[i].pipes_us.get(c, 0.0) > 0
                                             for i in fit_rows)]
    if coef.pipes and not measured:
        pipes = sorted({COLUMN_PIPE[c] for c in coef.pipes})
        return (f"no row is bound by {'/'.join(pipes)} and none measures its busy time "
                f"({' or '.join(coef.pipes)})")
    return f"no row is bound by {coef.bound_by}"


def fit(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement],
        options: FitOptions | None = None) -> FitResult:
    """Split ``rows``, fit what the fit rows determine, judge it on the held-out rows."""
    options = options or FitOptions()
    if not rows:
        raise AscendTuneError("no usable measurement rows to fit")
    split = row_split.holdout(rows, options.holdout, options.seed)
    return fit_split(_valid_model(spec, hw, rows), rows, split, options)


def candidates(hw: HardwareProfile, options: FitOptions) -> tuple[list[str], dict[str, str]]:
    """The coefficients a fit may move, and why each other one is left alone (its profile
    value is high-confidence and not included, or it is excluded)."""
    include = _resolve(options.include, "--include")
    exclude = _resolve(options.exclude, "--exclude")
    names: list[str] = []
    not_fitted: dict[str, str] = {}
    for coef in COEFFICIENTS:
        reason = None if options.fit_all or coef.name in include else _protected(hw, coef)
        if reason is None and not coef.default and not (options.fit_all
                                                        or coef.name in include):
            reason = (f"a constant of the model's form ({coef.doc}), not a device number; "
                      f"--include {coef.name} to fit it")
        if coef.name in exclude:
            reason = "excluded (--exclude)"
        if reason:
            not_fitted[coef.name] = reason
        else:
            names.append(coef.name)
    return names, not_fitted


def fit_split(model: RowModel, rows: Sequence[Measurement], split: row_split.Split,
              options: FitOptions, screened: Screen | None = None) -> FitResult:
    """The fit on ``split.fit`` of a model built over every row (``model.hw`` is the start).
    ``screened``: a :func:`screen` over a superset of the fit rows, to reuse.

    Several starts (the profile as it is, and one per limit hidden there), each fitted on most
    of the fit rows; the one that predicts the remaining fit rows best is refitted on all of
    them. The held-out rows choose nothing."""
    hw = model.hw
    names, not_fitted = candidates(hw, options)
    warnings: list[str] = []
    if not split.held_out.size:
        warnings.append(f"nothing held out {split.method.removeprefix('none ')}: every error "
                        "reported is in-sample")
    start = model.evaluate(hw)
    if screened is None or list(screened.names) != names:
        screened = screen(model, rows, split.fit, names, start)
    jac, _owners, moves_any = screened.subset(split.fit)
    found = identify(jac, names)
    for name in found.unseen:
        not_fitted[name] = _unseen_reason(BY_NAME[name], bool(moves_any[names.index(name)]),
                                          rows, split.fit, start.pipes_us)
    together_reasons(found.together, not_fitted)
    candidate_names = names
    # Raises (nothing to calibrate) when the rows determine nothing at the source.
    check_counts(list(found.kept), len(split.fit), found.sensitivity, dict(not_fitted))
    chosen, selection = choose_start(model, rows, split.fit, candidate_names, start,
                                     not_fitted)
    source = (screened, dict(not_fitted)) if not chosen.any() else None
    descent = descend(model, rows, split.fit, candidate_names, chosen, start, source,
                       not_fitted, FINE_TOL)
    names, solution, jac_end = descent.names, descent.solution, descent.jac
    not_fitted.clear()
    not_fitted.update(descent.not_fitted)
    x = descent.every[[candidate_names.index(n) for n in names]]
    if len(split.fit) < ROWS_PER_COEFFICIENT * len(names):
        warnings.append(f"{len(split.fit)} fit row(s) for {len(names)} coefficients: fewer "
                        f"than {ROWS_PER_COEFFICIENT} rows per coefficient, the fit is weak")
    scales = {n: round(float(np.exp(v)), 6) for n, v in zip(names, x, strict=True)}
    # The last screen's Jacobian was taken where the coarse solve ended, within its ~0.1 %
    # of this solution: close enough for an interval, and no new model evaluations.
    left = residual_scatter(np.asarray(solution.fun, dtype=np.float64), len(names))
    intervals = fitted_intervals(jac_end, left, x, names)
    between = run_scatter([rows[i].runs_us for i in split.fit])
    if left is not None and between is not None and left > max(FORM_FACTOR * between,
                                                                FORM_FLOOR):
        warnings.append(f"the fit leaves {left:.1%} of scatter per measured time where "
                        f"repeated runs of a row scatter {between:.1%}: the model's form "
                        "misses something these rows show (the intervals are wide by as much)")
    for n, v in scales.items():
        if n in intervals:
            intervals[n] = Interval(v, intervals[n].factor)
            if intervals[n].factor > LOOSE_FACTOR:
                low, high = intervals[n].low, intervals[n].high
                warnings.append(
                    f"{n} x{v:.3g} is not pinned by these rows (95 % interval x{low:.2g}.."
                    f"x{high:.2g}): its value is a guess; measure shapes where it matters, "
                    f"add `ascend-tune probe` rows, or --exclude {n}")
    for n, v in scales.items():
        lo, hi = scale_bounds(n, hw.data)
        if v <= lo * 1.001 or v >= hi * 0.999:
            warnings.append(f"{n} stopped at its bound (x{v:.3g}): the rows want more than a "
                            "scale of this number can give; the model's form is the suspect")
    # Rows each fitted coefficient came from: those whose residuals it moves where it ended.
    rows_by: dict[str, list[str]] = {}
    for n in names:
        col = jac_end[:, names.index(n)]
        seen = sorted({int(descent.owners[r])
                       for r in np.flatnonzero(np.abs(col) > ROW_SENSITIVITY)})
        rows_by[n] = [rows[i].origin for i in seen]
    calibrated = apply(hw.data, scales)
    tuned = load_profile_data(calibrated, "calibrated")  # the numbers as written (rounded)
    end = model.evaluate(tuned)
    measured = np.array([m.time_us for m in rows])

    def errors(times: RowTimes, idx: np.ndarray) -> Errors:
        return error_stats(times.time_us[idx], measured[idx])

    held = split.held_out
    return FitResult(
        scales=scales, fitted=names, not_fitted=not_fitted,
        before=errors(start, split.fit), after=errors(end, split.fit),
        held_out_before=errors(start, held) if held.size else None,
        held_out_after=errors(end, held) if held.size else None,
        split=split, warnings=warnings, rows_by_coefficient=rows_by, data=calibrated,
        base_data=copy.deepcopy(dict(hw.data)), intervals=intervals, scatter_left=left,
        scatter_runs=between, selection=selection)
