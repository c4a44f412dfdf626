"""`ascend-tune calibrate` and `ascend-tune validate`: the model against measured times."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ascend_tune import console, results
from ascend_tune.cli import app
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.shapes import shape_key
from ascend_tune.spec import OperatorSpec, load_spec

if TYPE_CHECKING:
    from ascend_tune.measurements import LoadReport

_MANIFEST_HELP = "YAML: config, free, files, shapes, where."
_WHERE_HELP = "Use rows with COLUMN=VALUE,..."


def _load(files: list[Path], spec: OperatorSpec, hw: HardwareProfile, manifest: Path | None,
          where: str | None, quiet: bool) -> LoadReport:
    from ascend_tune.measurement_rows import load_rows, require_rows

    report = load_rows(files, spec, hw, manifest, where)
    if not quiet:
        for line in report.skipped:
            console.warn(f"skipped {line}")
    require_rows(report, files)
    if report.skipped and not quiet:
        total = len(report.rows) + len(report.skipped)
        console.warn(f"used {len(report.rows)} of {total} row(s), skipped {len(report.skipped)}")
    return report


def _error_cells(e: Any) -> list[str]:
    return [f"{e.mape:.1%}", f"{e.max_error:.1%}", f"{e.spearman:.3f}",
            f"{e.pairwise_agreement:.0%}"]


@app.command()
def calibrate(
    files: list[Path] = typer.Argument(..., metavar="MEASUREMENTS...",
                                       help="Measured times: msprof op_summary, msprof "
                                            "op PipeUtilization, torch_npu or plain CSV."),
    spec_ref: str = typer.Option(..., "--spec", help="Spec file or built-in name."),
    hw_ref: str = typer.Option(..., "--hw", help="Hardware profile to start from."),
    output: Path = typer.Option(..., "-o", "--output", help="Calibrated profile YAML."),
    manifest: Path | None = typer.Option(None, "--manifest", help=_MANIFEST_HELP),
    where: str | None = typer.Option(None, "--where", help=_WHERE_HELP),
    name: str | None = typer.Option(None, "--name", help="Name of the calibrated profile."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No notes about skipped rows."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print errors before/after and the fitted scales as JSON."),
) -> None:
    """Fit profile coefficients to measured times; write a profile that records the fit."""
    from ascend_tune import calibrate as cal

    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    results.check_writable(output)
    report = _load(files, spec, hw, manifest, where, quiet or as_json)
    fit = cal.fit(spec, hw, report.rows)
    cal.write_profile(output, fit, hw_ref, name or f"{hw.name}_calibrated", report.files,
                      len(report.rows), len(report.skipped))
    if as_json:
        sys.stdout.write(json.dumps({
            "spec": spec.display_name, "hw": hw.name, "output": str(output),
            "rows": len(report.rows), "skipped": len(report.skipped),
            "before": fit.before.as_dict(), "after": fit.after.as_dict(),
            "scales": fit.scales}, indent=1) + "\n")
        return
    rows = [["before (" + hw.name + ")", *_error_cells(fit.before)],
            ["after (" + output.name + ")", *_error_cells(fit.after)]]
    console.table(f"{spec.display_name}: model error on {len(report.rows)} measurement(s)",
                  ["profile", "MAPE", "max error", "Spearman", "pair order"], rows,
                  right=(1, 2, 3, 4))
    console.line("fitted: " + ", ".join(f"{k} x{v:.3g}" for k, v in fit.scales.items()))
    console.line(f"wrote {output}")


@app.command()
def validate(
    files: list[Path] = typer.Argument(..., metavar="MEASUREMENTS...",
                                       help="Measured times: msprof op_summary, msprof "
                                            "op PipeUtilization, torch_npu or plain CSV."),
    spec_ref: str = typer.Option(..., "--spec", help="Spec file or built-in name."),
    hw_ref: str = typer.Option(..., "--hw", help="Hardware profile file or built-in name."),
    manifest: Path | None = typer.Option(None, "--manifest", help=_MANIFEST_HELP),
    where: str | None = typer.Option(None, "--where", help=_WHERE_HELP),
    holdout: float | None = typer.Option(None, "--holdout",
                                         help="Calibrate on the rest, report on this share."),
    kfold: int | None = typer.Option(None, "--kfold", help="K-fold cross-validation."),
    seed: int = typer.Option(0, "--seed", help="Seed of the row shuffle for --holdout/--kfold."),
    as_json: bool = typer.Option(False, "--json", help="Print errors and every row as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No notes about skipped rows."),
) -> None:
    """Model error against measurements: MAPE, max error, Spearman, pairwise ordering."""
    from ascend_tune import validation

    validation.check_split(holdout, kfold)
    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    report = _load(files, spec, hw, manifest, where, quiet or as_json)
    result = validation.validate(spec, hw, report.rows, len(report.skipped), holdout, kfold,
                                 seed)
    out = result.document
    if as_json:
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
        return
    table_rows = [[p["row"], shape_key(p["shape"]), f"{p['measured_us']:.2f}",
                   f"{p['predicted_us']:.2f}",
                   f"{(p['predicted_us'] - p['measured_us']) / p['measured_us']:+.1%}"]
                  for p in out["points"]]
    console.table(f"{spec.display_name} on {hw.name}", ["row", "shape", "measured us",
                                                        "predicted us", "error"], table_rows,
                  right=(2, 3, 4))
    console.table("model error", ["set", "MAPE", "max error", "Spearman", "pair order"],
                  [["all rows", *_error_cells(result.overall)]], right=(1, 2, 3, 4))
    if "held_out" in out:
        h = out["held_out"]
        console.line(f"held out ({h['folds']} fold(s)): MAPE {h['before']['mape']:.1%} with "
                     f"{hw.name}, {h['after']['mape']:.1%} after calibrating on the rest; "
                     f"Spearman {h['before']['spearman']:.3f} -> {h['after']['spearman']:.3f}")
