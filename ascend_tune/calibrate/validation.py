"""`validate`: the model's error against measurements, on every row and, with a holdout share
or k folds, on rows held out of a calibration fitted on the rest.

One :class:`RowModel` over every row serves all folds: each fold's fit evaluates the batched
model and reads its own rows, so k folds cost k fits, not k model rebuilds per residual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import fit as cal
from ascend_tune.calibrate import split as row_split
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.calibrate.row_model import RowModel
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec


def check_split(holdout: float | None, kfold: int | None) -> None:
    """The option checks that need no data (run them before loading anything)."""
    if holdout is not None and kfold is not None:
        raise AscendTuneError("give --holdout or --kfold, not both")
    if holdout is not None and not 0 < holdout < 1:
        raise AscendTuneError(f"--holdout must be between 0 and 1, got {holdout}")


def folds(n: int, holdout: float | None, kfold: int | None, seed: int
          ) -> tuple[np.ndarray, list[np.ndarray]]:
    """A seeded permutation of the ``n`` rows and the test index sets cut from it (none
    without ``holdout`` or ``kfold``): the split by row, used when the rows have too few
    groups (source and shape) to split by group."""
    check_split(holdout, kfold)
    order = np.random.default_rng(seed).permutation(n)
    if holdout is not None:
        n_test = max(1, round(holdout * n))
        if n_test >= n:
            raise AscendTuneError("--holdout leaves no row to calibrate on")
        return order, [order[:n_test]]
    if kfold is not None:
        if not 2 <= kfold <= n:
            raise AscendTuneError(f"--kfold must be between 2 and the {n} rows")
        return order, list(np.array_split(order, kfold))
    return order, []


def pooled_errors(items: Sequence[cal.Errors]) -> dict[str, float | int | None]:
    """The errors of several folds' rows taken together, each row once: MAPE and bias over
    every row (the folds' means weighted by their rows), the maximum over every row (not a
    mean of per-fold maxima). Rank statistics compare rows of one fold (one calibration) only:
    their mean over the folds that can rank (2+ rows, two distinct measured times), None when
    none can; ``ranked_folds`` says how many did."""
    n = sum(e.n for e in items)
    spearman = [e.spearman for e in items if e.spearman is not None]
    pairs = [e.pairwise_agreement for e in items if e.pairwise_agreement is not None]

    def mean(values: Sequence[float]) -> float | None:
        return round(float(np.mean(values)), 6) if values else None

    return {"n": n,
            "mape": round(sum(e.mape * e.n for e in items) / n, 6),
            "max_error": round(max(e.max_error for e in items), 6),
            "bias": round(sum(e.bias * e.n for e in items) / n, 6),
            "spearman": mean(spearman), "pairwise_agreement": mean(pairs),
            "ranked_folds": len(spearman)}


@dataclass(frozen=True)
class Validation:
    overall: cal.Errors  # on every row
    document: dict[str, Any]  # the `validate --json` output


def _test_sets(rows: Sequence[Measurement], holdout: float | None, kfold: int | None,
               seed: int) -> tuple[str, list[np.ndarray]]:
    check_split(holdout, kfold)
    n = len(rows)
    if holdout is not None:
        split = row_split.holdout(rows, holdout, seed)
        if not split.held_out.size:  # too few rows for the default rule: hold out one share
            _order, tests = folds(n, holdout, None, seed)
            return f"by row: {len(tests[0])} of {n}, seed {seed}", [np.sort(tests[0])]
        return split.method, [split.held_out]
    if kfold is not None:
        return row_split.kfold(rows, kfold, seed)
    return "", []


def validate(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement], skipped: int,
             holdout: float | None = None, kfold: int | None = None, seed: int = 0,
             options: cal.FitOptions | None = None) -> Validation:
    """Errors on all rows, each row's measured and predicted time, and with ``holdout`` or
    ``kfold`` the errors on held-out rows before and after calibrating on the rest, pooled
    over the folds (:func:`pooled_errors`), each fold's too, and the in-sample errors of those
    fits, for contrast."""
    options = options or cal.FitOptions()
    model = RowModel(spec, hw, rows)
    if model.invalid:
        raise AscendTuneError(model.invalid[0][1])
    measured = np.array([m.time_us for m in rows])
    pred = model.evaluate()
    overall = cal.error_stats(pred.time_us, measured)
    out: dict[str, Any] = {"spec": spec.display_name, "hw": hw.name, "rows": len(rows),
                           "skipped": skipped, "errors": overall.as_dict(),
                           "points": [{"row": m.origin, "shape": m.shape,
                                       "measured_us": m.time_us,
                                       "predicted_us": round(float(p), 6)}
                                      for m, p in zip(rows, pred.time_us, strict=True)]}
    method, tests = _test_sets(rows, holdout, kfold, seed)
    if not tests:
        return Validation(overall, out)
    every = np.arange(len(rows), dtype=np.int64)
    # One screen of every row at scale 1 serves all folds (each takes its rows' part).
    names, _ = cal.candidates(hw, options)
    screened = cal.screen(model, rows, every, names, pred)
    held_before, held_after, in_before, in_after = [], [], [], []
    fitted: dict[str, list[float | None]] = {}
    not_fitted: dict[str, str] = {}
    warnings: list[str] = []
    for f, test in enumerate(tests):
        split = row_split.Split(np.setdiff1d(every, test), test, method)
        try:
            result = cal.fit_split(model, rows, split, options, screened)
        except AscendTuneError as exc:
            where = f"fold {f + 1} of {len(tests)}" if len(tests) > 1 else "held-out split"
            raise AscendTuneError(f"{where}: {exc}") from None
        assert result.held_out_before is not None and result.held_out_after is not None
        held_before.append(result.held_out_before)
        held_after.append(result.held_out_after)
        in_before.append(result.before)
        in_after.append(result.after)
        for name in result.fitted:
            fitted.setdefault(name, [None] * len(tests))[f] = result.scales[name]
        for name, reason in result.not_fitted.items():
            not_fitted.setdefault(name, reason)
        warnings += [w for w in result.warnings if w not in warnings]
    # Fitted in some folds only: say so rather than report a reason from one fold as if final.
    for name in fitted:
        not_fitted.pop(name, None)
    out["held_out"] = {"method": method, "folds": len(tests),
                       "rows": int(sum(len(t) for t in tests)),
                       "before": pooled_errors(held_before), "after": pooled_errors(held_after),
                       "per_fold": [{"before": b.as_dict(), "after": a.as_dict()}
                                    for b, a in zip(held_before, held_after, strict=True)]}
    out["in_sample"] = {"before": pooled_errors(in_before), "after": pooled_errors(in_after),
                        "caveat": "in-sample: each fold's fit rows, the error flatters"}
    out["fitted"] = {name: {"scales": scales} for name, scales in fitted.items()}
    out["not_fitted"] = not_fitted
    out["warnings"] = warnings
    return Validation(overall, out)
