"""`ascend-tune calibrate` and `ascend-tune validate`: the model against measured times."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ascend_tune import api
from ascend_tune.api import database as dbapi
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import console
from ascend_tune.cli.app import app
from ascend_tune.cli.db import (
    database,
    db_host_option,
    db_option,
    db_shape_option,
    from_db_option,
    required,
    since_option,
    until_option,
)

_MANIFEST_HELP = "YAML: config, free, files, shapes, where."
_WHERE_HELP = "Use rows with COLUMN=VALUE,..."
_FROM_RESULTS_HELP = ("Results file of `ascend-tune measure`: its measured candidates are rows "
                      "too. Repeatable.")


def _load(files: list[Path], spec: api.OperatorSpec, hw: api.HardwareProfile,
          manifest: Path | None, where: str | None, quiet: bool,
          from_results: list[Path] | None = None,
          from_db: tuple[api.Database, Any] | None = None) -> api.Measurements:
    def skipped(line: str) -> None:
        console.warn(f"skipped {line}")

    report = api.load_measurements(spec, hw, files, manifest=manifest, where=where,
                                   from_results=from_results or [],
                                   on_skipped=None if quiet else skipped, from_db=from_db)
    if report.skipped and not quiet:
        total = len(report.rows) + len(report.skipped)
        console.warn(f"used {len(report.rows)} of {total} row(s), skipped {len(report.skipped)}")
    return report


def _rank(value: float | None, fmt: str) -> str:
    """A rank statistic, or n/a where it is undefined (one row; no two measured times differ)."""
    return "n/a" if value is None else format(value, fmt)


def _error_cells(e: Any) -> list[str]:
    return [f"{e.mape:.1%}", f"{e.max_error:.1%}", f"{e.bias:+.1%}", _rank(e.spearman, ".3f"),
            _rank(e.pairwise_agreement, ".0%")]


def _pooled_cells(e: dict[str, Any]) -> list[str]:
    return [f"{e['mape']:.1%}", f"{e['max_error']:.1%}", f"{e['bias']:+.1%}",
            _rank(e["spearman"], ".3f"), _rank(e["pairwise_agreement"], ".0%")]


_ERROR_COLUMNS = ["MAPE", "max error", "bias", "Spearman", "pair order"]
_FILES_HELP = ("Measured times: msprof op_summary, msprof op PipeUtilization, torch_npu or "
               "plain CSV.")
_FIT_ALL_HELP = "Also fit coefficients that scale high-confidence profile values."
_INCLUDE_HELP = ("Fit this coefficient (or the one scaling this leaf, e.g. "
                 "cube.cycles_per_fractal) even if it is high-confidence. Repeatable.")
_EXCLUDE_HELP = "Never fit this coefficient (or leaf). Repeatable."


_SPEC_HELP = ("Spec file or built-in name (default: the spec the first --from-results "
              "file embeds).")
_HW_DEFAULT = "(default: the profile the first --from-results file embeds)."

# The inputs calibrate and validate share, defined once: the measurements (files, results of
# `measure`, a manifest and a row filter), the spec, and which coefficients to fit.
Files = Annotated[list[Path] | None, typer.Argument(metavar="MEASUREMENTS...", help=_FILES_HELP)]
FromResults = Annotated[list[Path] | None, typer.Option("--from-results", metavar="RESULTS",
                                                        help=_FROM_RESULTS_HELP)]
SpecRef = Annotated[str | None, typer.Option("--spec", metavar="SPEC", help=_SPEC_HELP)]
Manifest = Annotated[Path | None, typer.Option("--manifest", help=_MANIFEST_HELP)]
Where = Annotated[str | None, typer.Option("--where", metavar="COL=VAL,..", help=_WHERE_HELP)]
FitAll = Annotated[bool, typer.Option("--fit-all", help=_FIT_ALL_HELP)]
Include = Annotated[list[str] | None, typer.Option("--include", metavar="COEFFICIENT",
                                                   help=_INCLUDE_HELP)]
Exclude = Annotated[list[str] | None, typer.Option("--exclude", metavar="COEFFICIENT",
                                                   help=_EXCLUDE_HELP)]


def _inputs(spec_ref: str | None, hw_ref: str | None, from_results: list[Path] | None
            ) -> tuple[api.OperatorSpec, api.HardwareProfile]:
    """--spec and --hw, or what the first results file was tuned with."""
    if (spec_ref is None or hw_ref is None) and not from_results:
        missing = " and ".join(n for n, v in (("--spec", spec_ref), ("--hw", hw_ref))
                               if v is None)
        raise AscendTuneError(f"give {missing} (or --from-results RESULTS, which holds both)")
    embedded = api.results_inputs(from_results[0]) if from_results else None
    spec = api.load_spec(spec_ref) if spec_ref is not None else embedded[0]  # type: ignore[index]
    hw = api.load_profile(hw_ref) if hw_ref is not None else embedded[1]  # type: ignore[index]
    return spec, hw


def _builtin_base(hw: api.HardwareProfile, from_results: list[Path] | None) -> str:
    """The calibrated profile inherits a profile by name: the built-in the results file was
    tuned on, if it is one unchanged."""
    try:
        if api.load_profile(hw.name).sha256 == hw.sha256:
            return hw.name
    except AscendTuneError:
        pass
    origin = from_results[0] if from_results else "the results file"
    raise AscendTuneError(f"{origin}: its profile {hw.name} is not a built-in one; give --hw "
                          "with the profile file to calibrate")


@app.command()
def calibrate(
    files: Files = None,
    from_results: FromResults = None,
    spec_ref: SpecRef = None,
    hw_ref: str | None = typer.Option(None, "--hw", metavar="CHIP",
                                      help="Hardware profile to start from " + _HW_DEFAULT),
    output: Path = typer.Option(..., "-o", "--output", help="Calibrated profile YAML."),
    manifest: Manifest = None,
    where: Where = None,
    name: str | None = typer.Option(None, "--name", metavar="PROFILE",
                                    help="Name of the calibrated profile (default: the base "
                                         "profile's name + _calibrated)."),
    holdout: float = typer.Option(0.25, "--holdout", metavar="SHARE",
                                  help="Share of rows (whole shape sweeps when there are "
                                       "enough) held out of the fit to judge it; 0 fits every "
                                       "row."),
    seed: int = typer.Option(0, "--seed", help="Seed of the held-out split."),
    fit_all: FitAll = False,
    include: Include = None,
    exclude: Exclude = None,
    force: bool = typer.Option(False, "--force",
                               help="Write the profile even with a fitted scale at its bound "
                                    "or a number beyond a physical limit (refused otherwise)."),
    from_db: bool = from_db_option(),
    db_shape: list[str] | None = db_shape_option(),
    db_host: str | None = db_host_option(),
    since: str | None = since_option(),
    until: str | None = until_option(),
    db_url: str | None = db_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print the split, held-out and in-sample errors, what "
                                      "was fitted and what not (with why) as JSON."),
) -> None:
    """Fit profile coefficients to measured times; write a profile that records the fit.

    Only coefficients the rows determine are fitted; high-confidence profile values are left
    alone unless included. The held-out error (rows the fit did not see) is reported first. A
    scale at its bound or a number beyond a physical limit is refused unless --force."""
    spec, hw = _inputs(spec_ref, hw_ref, from_results)
    base = hw_ref if hw_ref is not None else _builtin_base(hw, from_results)
    api.check_writable(output)
    rows_db = _from_db(from_db, db_url, spec, hw, db_shape, db_host, since, until)
    report = _load(files or [], spec, hw, manifest, where, quiet or as_json, from_results,
                   rows_db)
    fit = api.calibrate(spec, hw, report, holdout=holdout, seed=seed, fit_all=fit_all,
                        include=include or (), exclude=exclude or ())
    api.write_profile(output, fit, base, name or f"{hw.name}_calibrated", report,
                      force=force)
    recorded = rows_db[0] if rows_db is not None else database(db_url, False, True)
    if recorded is not None:
        dbapi.record_calibration(recorded, spec, hw, len(report.rows),
                                 name or f"{hw.name}_calibrated", output, fit.scales,
                                 fit.document())
    if as_json:
        sys.stdout.write(json.dumps({
            "spec": spec.display_name, "hw": hw.name, "output": str(output),
            "rows": len(report.rows), "skipped": len(report.skipped), **fit.document(),
            "scales": fit.scales}, indent=1) + "\n")
        return
    if not quiet:
        _print_calibration(spec, hw, fit, output)


def _print_calibration(spec: api.OperatorSpec, hw: api.HardwareProfile, fit: api.FitResult,
                       output: Path) -> None:
    """calibrate's report: warnings, the held-out and in-sample errors before and after,
    what was fitted (with its interval) and what not."""
    for warning in fit.warnings:
        console.warn(warning)
    title = spec.display_name
    if fit.held_out_before is not None and fit.held_out_after is not None:
        console.table(f"{title}: held-out error on {fit.held_out_before.n} row(s) the fit did "
                      f"not see (split {fit.split.method})", ["profile", *_ERROR_COLUMNS],
                      [[f"before ({hw.name})", *_error_cells(fit.held_out_before)],
                       [f"after ({output.name})", *_error_cells(fit.held_out_after)]],
                      right=(1, 2, 3, 4, 5))
    console.table(f"{title}: in-sample error on the {fit.before.n} fit row(s) (in-sample: the "
                  "fit has seen these rows, so this flatters it)", ["profile", *_ERROR_COLUMNS],
                  [[f"before ({hw.name})", *_error_cells(fit.before)],
                   [f"after ({output.name})", *_error_cells(fit.after)]], right=(1, 2, 3, 4, 5))
    console.line("fitted (scale, 95 % interval, rows): " + ", ".join(
        f"{k} x{fit.scales[k]:.3g}{_within(fit, k)} ({len(fit.rows_by_coefficient[k])} rows)"
        for k in fit.fitted))
    for k, reason in fit.not_fitted.items():
        console.line(f"not fitted: {k}: {reason}")
    if fit.scatter_left is not None:
        runs = ("" if fit.scatter_runs is None
                else f" (repeated runs of a row: {fit.scatter_runs:.1%})")
        console.line(f"scatter the fit left: {fit.scatter_left:.1%} per measured time{runs}")
    console.line(f"wrote {output}")


def _from_db(wanted: bool, url: str | None, spec: api.OperatorSpec, hw: api.HardwareProfile,
             shapes: list[str] | None, host: str | None, since: str | None,
             until: str | None) -> tuple[api.Database, Any] | None:
    """--from-db: the database and which of its rows (the filters need --from-db)."""
    if not wanted:
        used = [n for n, v in (("--db-shape", shapes), ("--db-host", host), ("--since", since),
                               ("--until", until)) if v]
        if used:
            raise AscendTuneError(f"{used[0]} filters the tuning database's rows: it needs "
                                  "--from-db")
        return None
    found = required(url, "--from-db")
    parsed = [api.parse_shape(s, spec, "--db-shape") for s in shapes or []]
    return found, dbapi.rows_filter(spec, hw, parsed, host, since, until)


def _within(fit: api.FitResult, name: str) -> str:
    """`` ±3.1 %``: the 95 % interval of a fitted scale, as a ratio either way."""
    interval = fit.intervals.get(name)
    if interval is None:
        return ""
    return f" ±{console.percent_text(interval.percent)}"


@app.command()
def validate(
    files: Files = None,
    from_results: FromResults = None,
    spec_ref: SpecRef = None,
    hw_ref: str | None = typer.Option(None, "--hw", metavar="CHIP",
                                      help="Hardware profile file or built-in name " +
                                           _HW_DEFAULT),
    manifest: Manifest = None,
    where: Where = None,
    holdout: float | None = typer.Option(None, "--holdout", metavar="SHARE",
                                         help="Calibrate on the rest, report on this share. "
                                              "(default: no calibration, every row)"),
    kfold: int | None = typer.Option(None, "--kfold", metavar="K",
                                     help="K-fold cross-validation of the calibration."),
    seed: int = typer.Option(0, "--seed", help="Seed of the row shuffle for --holdout/--kfold."),
    fit_all: FitAll = False,
    include: Include = None,
    exclude: Exclude = None,
    as_json: bool = typer.Option(False, "--json", help="Print errors and every row as JSON."),
    from_db: bool = from_db_option(),
    db_shape: list[str] | None = db_shape_option(),
    db_host: str | None = db_host_option(),
    since: str | None = since_option(),
    until: str | None = until_option(),
    db_url: str | None = db_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No notes about skipped rows."),
) -> None:
    """Model error against measurements: MAPE, max error, bias, Spearman, pairwise ordering;
    with --holdout or --kfold, the error on rows held out of a calibration on the rest."""
    api.check_split(holdout, kfold)
    spec, hw = _inputs(spec_ref, hw_ref, from_results)
    rows_db = _from_db(from_db, db_url, spec, hw, db_shape, db_host, since, until)
    report = _load(files or [], spec, hw, manifest, where, quiet or as_json, from_results,
                   rows_db)
    result = api.validate(spec, hw, report, holdout=holdout, kfold=kfold, seed=seed,
                          fit_all=fit_all, include=include or (), exclude=exclude or ())
    if as_json:
        sys.stdout.write(json.dumps(result.document, indent=1) + "\n")
        return
    _print_validation(spec, hw, result, quiet)


def _print_validation(spec: api.OperatorSpec, hw: api.HardwareProfile, result: api.Validation,
                      quiet: bool) -> None:
    """validate's report: every row's error, with a split the held-out and in-sample errors
    of the calibrations and what they fitted, then the uncalibrated error on every row."""
    out = result.document
    table_rows = [[p["row"], api.shape_key(p["shape"]), f"{p['measured_us']:.2f}",
                   f"{p['predicted_us']:.2f}",
                   f"{(p['predicted_us'] - p['measured_us']) / p['measured_us']:+.1%}"]
                  for p in out["points"]]
    console.table(f"{spec.display_name} on {hw.name}", ["row", "shape", "measured us",
                                                        "predicted us", "error"], table_rows,
                  right=(2, 3, 4))
    if "held_out" in out:
        h, ins = out["held_out"], out["in_sample"]
        if not quiet:
            for warning in out["warnings"]:
                console.warn(warning)
        ranked = h["after"]["ranked_folds"]
        ranks = ("Spearman and pair order: no fold can rank (each needs 2+ rows)" if not ranked
                 else f"Spearman and pair order: mean over the {ranked} fold(s) of 2+ rows"
                 if ranked < h["folds"] else "Spearman and pair order: mean over the folds")
        console.table(f"held-out error: {h['rows']} row(s) in {h['folds']} fold(s), each "
                      f"unseen by its fold's calibration (split {h['method']}); MAPE and bias "
                      f"over every held-out row, max error the largest of them; {ranks}",
                      ["profile", *_ERROR_COLUMNS],
                      [[hw.name, *_pooled_cells(h["before"])],
                       ["calibrated on the rest", *_pooled_cells(h["after"])]],
                      right=(1, 2, 3, 4, 5))
        console.table("in-sample error of the same calibrations (their own fit rows: this "
                      "flatters them)", ["profile", *_ERROR_COLUMNS],
                      [[hw.name, *_pooled_cells(ins["before"])],
                       ["calibrated", *_pooled_cells(ins["after"])]], right=(1, 2, 3, 4, 5))
        fitted = ", ".join(f"{k} x{min(s):.3g}..{max(s):.3g}" if len(set(s)) > 1
                           else f"{k} x{s[0]:.3g}"
                           for k, v in out["fitted"].items()
                           for s in [[x for x in v["scales"] if x is not None]])
        console.line(f"fitted per fold: {fitted}")
        for k, reason in out["not_fitted"].items():
            console.line(f"not fitted: {k}: {reason}")
    console.table(f"model error of {hw.name} on all {len(out['points'])} row(s) (uncalibrated)",
                  ["set", *_ERROR_COLUMNS], [["all rows", *_error_cells(result.overall)]],
                  right=(1, 2, 3, 4, 5))
