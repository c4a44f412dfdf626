"""What a calibration fit returns: its errors before and after, its options and its result.

Kept apart from :mod:`ascend_tune.calibrate.fit` (which computes them) so the modules that
only read a fit (``written``: the profile it writes; ``guard``: whether to refuse it) need not
import the fit itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.calibrate import split as row_split
from ascend_tune.calibrate.coefficients import BY_NAME
from ascend_tune.calibrate.uncertainty import Interval

DEFAULT_HOLDOUT = 0.25


@dataclass
class Prediction:
    time_us: np.ndarray
    pipes_us: list[dict[str, float]]


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


# ---- the fit's options and result ----------------------------------------------------------------


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



def compress_origins(origins: Sequence[str]) -> list[str]:
    """``file:2, file:3, file:4, file:9`` -> ``file:2-4,9`` (one entry per file, in order)."""
    lines: dict[str, list[int]] = {}
    other: list[str] = []
    for origin in origins:
        path, _, line = origin.rpartition(":")
        if path and line.isdigit():
            lines.setdefault(path, []).append(int(line))
        else:
            other.append(origin)
    out = []
    for path, numbers in lines.items():
        numbers = sorted(set(numbers))
        spans: list[str] = []
        start = prev = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            spans.append(str(start) if start == prev else f"{start}-{prev}")
            if n is not None:
                start = prev = n
        out.append(f"{path}:{','.join(spans)}")
    return out + other
