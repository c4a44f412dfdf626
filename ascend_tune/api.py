"""The Python API: what the command line does, for build scripts and notebooks.

Everything here is a thin, typed entry to the core modules; the CLI calls the same functions.
Errors are :class:`ascend_tune.base.errors.AscendTuneError` with the same one-line messages the CLI
prints. A worked example (``tests/test_api.py`` runs it as written)::

    from pathlib import Path
    from ascend_tune import api

    spec = api.load_spec("add")                     # built-in name, file, or NAME:VARIANT
    hw = api.load_profile("ascend910b3")            # built-in name or a profile file
    entries = api.tune(spec, hw, [{"totalLength": 4096}, {"totalLength": 1 << 20}],
                       output=Path("add.results.json"))
    best = entries[0]["best"]                       # {"blockDim": ..., "tileLength": ..., ...}
    why = api.explain(spec, hw, {"totalLength": 1 << 20}, overrides=best)
    print(why.bound, why.predicted["latency_us"], why.diagnosis)
    written = api.emit(Path("add.results.json"), Path("AddCustom"), op_host=True)

``tune`` with ``output`` uses the results file as a cache exactly as ``ascend-tune search -o``
does (one writer at a time, each shape saved as it finishes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import validation
from ascend_tune.calibrate.fit import DEFAULT_HOLDOUT, FitOptions, FitResult, fit
from ascend_tune.calibrate.rows import load_rows, require_rows
from ascend_tune.emit import render as _emit
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hardware import load_profile as _load_profile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec import load_spec as _load_spec
from ascend_tune.spec.shapes import check_shape
from ascend_tune.tune import run as search_run
from ascend_tune.tune.explain import Explanation
from ascend_tune.tune.explain import explain as _explain
from ascend_tune.tune.shape import DEFAULT_BUDGET, DEFAULT_SEED, TuneSettings

__all__ = ["AscendTuneError", "Explanation", "FitResult", "HardwareProfile", "OperatorSpec",
           "calibrate", "check", "emit", "explain", "load_profile", "load_spec",
           "profile_document", "profiles", "render", "report", "tune", "validate"]


def load_spec(ref: str | Path) -> OperatorSpec:
    """A built-in spec by name (``"matmul"``), a spec file, either with ``:VARIANT``."""
    return _load_spec(ref)


def load_profile(ref: str | Path) -> HardwareProfile:
    """A built-in hardware profile by name (``"ascend910b3"``) or a profile file."""
    return _load_profile(str(ref))


def tune(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Mapping[str, int]], *,
         strategy: str = "auto", budget: int = DEFAULT_BUDGET, seed: int = DEFAULT_SEED,
         output: Path | None = None, fresh: bool = False, jobs: int = 1, top_k: int = 1
         ) -> list[dict[str, Any]]:
    """Tune every shape; return the results entries in the order of ``shapes`` (a shape with
    no valid configuration raises, after the others are saved). ``top_k`` > 1 keeps that many
    distinct configurations per shape in ``candidates`` (for ``ascend-tune measure``)."""
    checked = [check_shape(spec, s, "shape") for s in shapes]
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, strategy, seed, budget, spec.variant, top_k=top_k)
    outcome = search_run.run_search(spec, hw, checked,
                                    TuneSettings(strategy, budget, seed, top_k),
                                    head, jobs=jobs, output=output, fresh=fresh)
    if outcome.interrupted:
        raise KeyboardInterrupt
    if outcome.failures:
        raise AscendTuneError(outcome.failures[0])
    return search_run.in_shape_order(outcome.entries(), checked)


def explain(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
            overrides: Mapping[str, int] | None = None, *, shape_label: str = "shape",
            overrides_label: str = "overrides") -> Explanation:
    """The model's breakdown of the baseline configuration, or of ``overrides`` applied to it
    (pass a tuned entry's ``best`` to explain the winner). The labels name the two inputs in
    error messages."""
    return _explain(spec, hw, check_shape(spec, shape, shape_label), overrides,
                    overrides_label)


def check(files: Sequence[Path]) -> list[str]:
    """Problems in spec and hardware profile files, one line each (empty: all valid),
    including TilingData class names two specs would both define in one project."""
    from ascend_tune.spec.checking import check_files

    return check_files(files)


def profiles() -> list[dict[str, Any]]:
    """The headline numbers of every built-in hardware profile (``hw list``)."""
    from ascend_tune.hardware import builtin_summaries

    return builtin_summaries()


def profile_document(hw: HardwareProfile) -> dict[str, Any]:
    """Every number of a profile with its source and confidence (``hw show --json``)."""
    from ascend_tune.hardware import show_document

    return show_document(hw)


def render(results_doc: Mapping[str, Any], *, style: str = "macro", op_host: bool = False,
           socs: Sequence[str] = ()) -> dict[str, str]:
    """The files ``emit`` would write (relative path -> text), after re-checking every tuned
    configuration in ``results_doc`` against its embedded spec."""
    bundle = _emit.load_bundle(results_doc, "results")
    return _emit.render(bundle, style, op_host=op_host, socs=tuple(socs))


def emit(results_path: Path, out_dir: Path, *, style: str = "macro", op_host: bool = False,
         socs: Sequence[str] = ()) -> list[str]:
    """Write the tiling headers (and with ``op_host`` the msOpGen host file) into an operator
    project; returns the paths written (unchanged files are left alone)."""
    _bundle, files = _emit.prepare(results_path, out_dir, style, op_host, tuple(socs))
    return _emit.write(out_dir, files)


def validate(spec: OperatorSpec, hw: HardwareProfile, files: Sequence[Path], *,
             manifest: Path | None = None, where: str | None = None,
             holdout: float | None = None, kfold: int | None = None, seed: int = 0,
             fit_all: bool = False, include: Sequence[str] = (), exclude: Sequence[str] = ()
             ) -> dict[str, Any]:
    """Model against measurements: the ``validate --json`` document (errors on every row,
    and with ``holdout`` / ``kfold`` the held-out errors before and after calibrating on the
    rest, those fits' in-sample errors, what they fitted and what not, and warnings).
    ``fit_all`` / ``include`` / ``exclude`` are as for :func:`calibrate`."""
    validation.check_split(holdout, kfold)
    report = load_rows(files, spec, hw, manifest, where)
    require_rows(report, files)
    options = FitOptions(0.0, seed, fit_all, tuple(include), tuple(exclude))
    return validation.validate(spec, hw, report.rows, len(report.skipped), holdout, kfold,
                               seed, options).document


def calibrate(spec: OperatorSpec, hw: HardwareProfile, files: Sequence[Path], *,
              manifest: Path | None = None, where: str | None = None,
              holdout: float = DEFAULT_HOLDOUT, seed: int = 0, fit_all: bool = False,
              include: Sequence[str] = (), exclude: Sequence[str] = ()) -> FitResult:
    """Fit the profile coefficients the measurements determine (see ``FitResult``).

    ``holdout`` of the rows (whole shape sweeps when there are enough; 0 for none) is set
    aside before fitting and judged in ``held_out_before`` / ``held_out_after``; ``before`` /
    ``after`` are in-sample. Coefficients that scale a high-confidence profile value are left
    alone unless ``fit_all`` or named in ``include`` (a coefficient or a leaf path such as
    ``"cube.cycles_per_fractal"``); ``exclude`` names ones never to fit. Fewer fit rows than
    determinable coefficients raise; ``FitResult.warnings`` says when the fit is weak."""
    report = load_rows(files, spec, hw, manifest, where)
    require_rows(report, files)
    return fit(spec, hw, report.rows,
               FitOptions(holdout, seed, fit_all, tuple(include), tuple(exclude)))


def report(results_paths: Sequence[Path], output: Path, *, measurements: Sequence[Path] = (),
           manifest: Path | None = None, where: str | None = None,
           chart_shapes: int | None = None) -> Path:
    """Write the self-contained HTML report of ``results_paths`` to ``output`` (with
    ``measurements``, a fidelity section); needs the ``report`` extra (matplotlib)."""
    from ascend_tune import report as _report

    _report.check_output(output)
    built = _report.build(results_paths, measurements, manifest, where,
                          _report.DEFAULT_CHART_SHAPES if chart_shapes is None else chart_shapes)
    results.write_atomic(output, built.html)
    return output
