"""The fidelity section: the model's predictions against measured kernel times. Pure.

Rows are loaded as `validate` loads them (manifest, ``--where``, rows the model rejects
skipped with a reason; a results file's measured candidates and baselines as
``--from-results`` reads them) and predicted with ``calibrate.predict``. A sweep is the rows of one
shape: the kernel run with different tilings, where what matters for tuning is whether the
model orders the configurations as the hardware does (Spearman, pairwise order) and how much
slower the model's pick is than the measured best (regret).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ascend_tune.calibrate import fit as calibrate
from ascend_tune.calibrate.fit import split_valid
from ascend_tune.calibrate.from_results import is_results_file, read_measured_rows
from ascend_tune.calibrate.rows import load_rows, require_rows
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key


@dataclass(frozen=True)
class Point:
    origin: str  # file:line
    shape_key: str
    measured_us: float
    predicted_us: float

    @property
    def error(self) -> float:
        """Signed relative error of the prediction (-0.2 = 20 % optimistic)."""
        return self.predicted_us / self.measured_us - 1.0


@dataclass(frozen=True)
class Sweep:
    shape_key: str
    rows: int
    spearman: float | None  # None: undefined (no two measured times differ)
    pairwise: float | None  # share of row pairs the model orders as measured
    regret: float  # measured time of the model's pick / measured best


@dataclass(frozen=True)
class Fidelity:
    spec_name: str
    hw_name: str
    files: tuple[str, ...]
    points: tuple[Point, ...]
    mape: float
    max_error: float
    bias: float  # mean signed error
    spearman: float | None  # over all rows (mixes shapes: sweeps say more); None: one row
    sweeps: tuple[Sweep, ...]
    skipped: tuple[str, ...]


def compare(spec: OperatorSpec, hw: HardwareProfile, files: Sequence[Path],
            manifest: Path | None, where: str | None, results: Sequence[Path] = ()
            ) -> Fidelity:
    """The model (``spec`` on ``hw``) against the rows of measurement ``files`` (a results
    file among them gives its measured candidates and baselines) and the measured candidates
    of results files ``results`` (those of the page)."""
    tables = [f for f in files if not is_results_file(f)]
    from_results = [*(f for f in files if is_results_file(f)), *results]
    report = load_rows(tables, spec, hw, manifest, where)
    if from_results:
        rows, invalid = split_valid(spec, hw, read_measured_rows(from_results, spec))
        report.rows += rows
        report.skipped += invalid
        report.files += [str(p) for p in from_results]
    require_rows(report, [*files, *results])
    rows = report.rows
    predicted = np.asarray(calibrate.predict(spec, hw, rows).time_us, dtype=np.float64)
    measured = np.array([m.time_us for m in rows], dtype=np.float64)
    overall = calibrate.error_stats(predicted, measured)
    points = tuple(Point(m.origin, shape_key(m.shape), float(m.time_us), round(float(p), 6))
                   for m, p in zip(rows, predicted, strict=True))
    groups: dict[str, list[int]] = {}
    for i, m in enumerate(rows):
        groups.setdefault(shape_key(m.shape), []).append(i)
    sweeps = []
    for key, idx in groups.items():
        if len(idx) < 2:
            continue
        sel = np.array(idx)
        stats = calibrate.error_stats(predicted[sel], measured[sel])
        pick = sel[int(np.argmin(predicted[sel]))]
        sweeps.append(Sweep(key, len(idx), stats.spearman, stats.pairwise_agreement,
                            float(measured[pick] / measured[sel].min())))
    signed = predicted / measured - 1.0
    return Fidelity(spec.display_name, hw.name, tuple(report.files), points,
                    float(overall.mape), float(overall.max_error), float(signed.mean()),
                    overall.spearman, tuple(sweeps), tuple(report.skipped))
