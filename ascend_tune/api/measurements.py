"""The API's measured-rows half: loading measurements, `validate`, `calibrate` and writing
the calibrated profile (scipy is imported only when these run)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ascend_tune.api import database as _database
from ascend_tune.api.paths import PathLike, _list, _path
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.measurements import LoadReport as Measurements
from ascend_tune.db.engine import Database
from ascend_tune.db.records import RowFilter
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as _cands
from ascend_tune.spec import OperatorSpec

if TYPE_CHECKING:
    from ascend_tune.calibrate.fit import FitResult
    from ascend_tune.calibrate.validation import Validation
    from ascend_tune.hil.probe import ProbeDesign


def load_measurements(spec: OperatorSpec, hw: HardwareProfile,
                      files: PathLike | Sequence[PathLike] = (), *,
                      manifest: PathLike | None = None, where: str | None = None,
                      from_results: PathLike | Sequence[PathLike] = (),
                      on_skipped: Callable[[str], None] | None = None,
                      from_db: tuple[Database, RowFilter] | None = None) -> Measurements:
    """Measured rows of ``files``, of results files ``from_results`` and of the tuning
    database (``from_db``: the database and which of its rows, ``database.rows_filter``);
    ``on_skipped`` hears each row left out (and why) before the check that some row is
    usable."""
    from ascend_tune.calibrate.rows import load_rows, require_rows

    files, from_results, manifest = _list(files), _list(from_results), _path(manifest)
    if not files and not from_results and from_db is None:
        raise AscendTuneError("give measurement files, or --from-results RESULTS (measured "
                              "candidates of `ascend-tune measure`)")
    report = load_rows(files, spec, hw, manifest, where)
    if from_results:
        _cands.extend_report(report, from_results, spec, hw)
    if from_db is not None:
        _database.extend_from_db(report, from_db[0], spec, hw, from_db[1])
    if on_skipped is not None:
        for line in report.skipped:
            on_skipped(line)
    require_rows(report, [*files, *from_results,
                          *([Path(from_db[0].shown)] if from_db is not None else [])])
    return report


def _rows(spec: OperatorSpec, hw: HardwareProfile,
          measurements: PathLike | Sequence[PathLike] | Measurements,
          manifest: PathLike | None, where: str | None) -> Measurements:
    if isinstance(measurements, Measurements):
        return measurements
    return load_measurements(spec, hw, measurements, manifest=manifest, where=where)


def check_split(holdout: float | None, kfold: int | None) -> None:
    """Refuse a ``validate`` split that cannot work, before any work."""
    from ascend_tune.calibrate.validation import check_split

    check_split(holdout, kfold)


def validate(spec: OperatorSpec, hw: HardwareProfile,
             measurements: PathLike | Sequence[PathLike] | Measurements, *,
             manifest: PathLike | None = None, where: str | None = None,
             holdout: float | None = None, kfold: int | None = None,
             seed: int = 0, fit_all: bool = False, include: Sequence[str] = (),
             exclude: Sequence[str] = ()) -> Validation:
    """The model against measurements: ``overall`` errors and the ``validate --json``
    ``document``; with ``holdout`` / ``kfold`` the error on rows held out of a calibration."""
    from ascend_tune.calibrate import validation
    from ascend_tune.calibrate.fit import FitOptions

    check_split(holdout, kfold)
    rows = _rows(spec, hw, measurements, manifest, where)
    options = FitOptions(0.0, seed, fit_all, tuple(include), tuple(exclude))
    return validation.validate(spec, hw, rows.rows, len(rows.skipped), holdout, kfold, seed,
                               options)


def calibrate(spec: OperatorSpec, hw: HardwareProfile,
              measurements: PathLike | Sequence[PathLike] | Measurements, *,
              manifest: PathLike | None = None, where: str | None = None,
              holdout: float | None = None, seed: int = 0,
              fit_all: bool = False, include: Sequence[str] = (), exclude: Sequence[str] = ()
              ) -> FitResult:
    """Fit the profile coefficients the measurements determine, judged on ``holdout`` of the
    rows (None: 0.25; 0: none) held out of the fit."""
    from ascend_tune.calibrate.fit import DEFAULT_HOLDOUT, FitOptions, fit

    rows = _rows(spec, hw, measurements, manifest, where)
    share = DEFAULT_HOLDOUT if holdout is None else holdout
    return fit(spec, hw, rows.rows,
               FitOptions(share, seed, fit_all, tuple(include), tuple(exclude)))


def calibration_refusals(fit: FitResult) -> list[str]:
    """Why ``write_profile`` refuses ``fit`` (empty: it writes): a fitted scale at its bound,
    a fitted number beyond a physical limit of the chip. One line each."""
    from ascend_tune.calibrate.guard import refusals

    return refusals(fit)


def write_profile(output: PathLike, fit: FitResult, base: str | Path, name: str,
                  measurements: Measurements, *, force: bool = False) -> Path:
    """Write the calibrated profile ``name``: it inherits ``base`` and records the fit. A fit
    with :func:`calibration_refusals` is refused (nothing written) unless ``force``; a forced
    one records them among its warnings."""
    from ascend_tune.calibrate.fit import write_profile as _write
    from ascend_tune.calibrate.guard import refusal_message, refusals

    problems = refusals(fit)
    if problems and not force:
        raise AscendTuneError(refusal_message(problems))
    fit.warnings.extend(f"written with --force: {p}" for p in problems
                        if f"written with --force: {p}" not in fit.warnings)
    output = Path(output)
    _write(output, fit, str(base), name, measurements.files, len(measurements.rows),
           len(measurements.skipped))
    return output


def probe(results_path: PathLike, count: int = 8, *, hw: HardwareProfile | None = None,
          fit_all: bool = False, include: Sequence[str] = (), exclude: Sequence[str] = (),
          seed: int = 0, shapes: int = 0) -> ProbeDesign:
    """Add ``count`` probe candidates to a ``search --top-k`` results file: configurations
    chosen so that measuring them with the candidates determines the profile's coefficients
    (``ascend_tune.hil.probe``). ``shapes``: where the file's shapes leave a coefficient
    undetermined, also add up to that many new shapes (smaller, or misaligned by one element),
    each tuned and given probes (``ascend_tune.hil.probe_shapes``). ``fit_all`` /
    ``include`` / ``exclude`` as for :func:`calibrate`: the coefficients the design aims
    at. ``hw``: the profile to design at (default: the file's own; after a first
    calibration, the calibrated one, since what a configuration shows of each coefficient
    depends on where the numbers are)."""
    from ascend_tune.calibrate.fit import FitOptions
    from ascend_tune.hil import probe as _probe
    from ascend_tune.hil import run as _hil

    path = Path(results_path)
    bundle = _hil.load(path)
    return _probe.add_probes(path, bundle.spec, bundle.hw, count,
                             FitOptions(0.0, seed, fit_all, tuple(include), tuple(exclude)),
                             seed, design_hw=hw, shapes=shapes)
