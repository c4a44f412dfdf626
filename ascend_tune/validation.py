"""`validate`: the model's error against measurements, on every row and, with a holdout share
or k folds, on rows held out of a calibration fitted on the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune import calibrate as cal
from ascend_tune.errors import AscendTuneError
from ascend_tune.hardware import HardwareProfile
from ascend_tune.measurements import Measurement
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
    without ``holdout`` or ``kfold``)."""
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


def mean_errors(items: Sequence[cal.Errors]) -> dict[str, float]:
    keys = ("mape", "max_error", "spearman", "pairwise_agreement")
    return {k: round(float(np.mean([getattr(e, k) for e in items])), 6) for k in keys}


@dataclass(frozen=True)
class Validation:
    overall: cal.Errors  # on every row
    document: dict[str, Any]  # the `validate --json` output


def validate(spec: OperatorSpec, hw: HardwareProfile, rows: Sequence[Measurement], skipped: int,
             holdout: float | None = None, kfold: int | None = None, seed: int = 0
             ) -> Validation:
    """Errors on all rows, each row's measured and predicted time, and with ``holdout`` or
    ``kfold`` the mean errors on held-out rows before and after calibrating on the rest."""
    measured = np.array([m.time_us for m in rows])
    pred = cal.predict(spec, hw, rows)
    overall = cal.error_stats(pred.time_us, measured)
    out: dict[str, Any] = {"spec": spec.display_name, "hw": hw.name, "rows": len(rows),
                           "skipped": skipped, "errors": overall.as_dict(),
                           "points": [{"row": m.origin, "shape": m.shape,
                                       "measured_us": m.time_us,
                                       "predicted_us": round(float(p), 6)}
                                      for m, p in zip(rows, pred.time_us, strict=True)]}
    order, tests = folds(len(rows), holdout, kfold, seed)
    if tests:
        before, after = [], []
        for test in tests:
            train = np.setdiff1d(order, test)
            fit = cal.fit(spec, hw, [rows[i] for i in train])
            tuned = cal.load_profile_data(cal.apply(hw.data, fit.scales), "fold")
            test_rows = [rows[i] for i in test]
            test_measured = measured[test]
            before.append(cal.error_stats(cal.predict(spec, hw, test_rows).time_us, test_measured))
            after.append(cal.error_stats(cal.predict(spec, tuned, test_rows).time_us,
                                    test_measured))
        out["held_out"] = {"folds": len(tests),
                           "before": mean_errors(before), "after": mean_errors(after)}
    return Validation(overall, out)
