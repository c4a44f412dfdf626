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
from ascend_tune.calibrate.result import (
    DEFAULT_HOLDOUT,
    Errors,
    FitOptions,
    FitResult,
    Prediction,
    compress_origins,
    error_stats,
)
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
from ascend_tune.calibrate.written import profile_document, write_profile
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.spec import OperatorSpec

__all__ = [
    "COEFFICIENTS",
    "DEFAULT_HOLDOUT",
    "Errors",
    "FitOptions",
    "FitResult",
    "Prediction",
    "apply",
    "candidates",
    "compress_origins",
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


def _quality_warnings(scales: dict[str, float], intervals: dict[str, Interval],
                      hw: HardwareProfile, left: float | None, between: float | None
                      ) -> list[str]:
    """What a user should know of the fit's own quality: a form that misses what the rows
    show, scales the rows do not pin, scales stopped at their bounds. ``intervals`` are
    re-centred on the rounded scales in place."""
    warnings: list[str] = []
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
    return warnings


def _rows_by_coefficient(names: Sequence[str], jac: np.ndarray, owners: np.ndarray,
                         rows: Sequence[Measurement]) -> dict[str, list[str]]:
    """Rows each fitted coefficient came from: those whose residuals it moves where the fit
    ended."""
    rows_by: dict[str, list[str]] = {}
    for n in names:
        col = jac[:, names.index(n)]
        seen = sorted({int(owners[r]) for r in np.flatnonzero(np.abs(col) > ROW_SENSITIVITY)})
        rows_by[n] = [rows[i].origin for i in seen]
    return rows_by


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
    warnings += _quality_warnings(scales, intervals, hw, left, between)
    rows_by = _rows_by_coefficient(names, jac_end, descent.owners, rows)
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
