"""`ascend-tune emit`: write (or --check) the AscendC files of a results file."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.api import build
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import console
from ascend_tune.cli.app import ExitWith, app
from ascend_tune.cli.db import db_option, results_for_emit


@app.command()
def emit(
    results_paths: list[Path] | None = typer.Argument(
        None, metavar="RESULTS...", help="Results file of search; several: one per hardware "
                                         "profile of the operator (the platform picks one)."),
    out_dir: Path = typer.Option(..., "-o", "--output",
                                 help="Operator project folder (op_host/, op_kernel/)."),
    style: str = typer.Option("macro", "--style", metavar="STYLE",
                              help="How the TilingData is declared: "
                              + "; ".join(f"{name}: {doc}"
                                          for name, doc in api.emit_styles().items())
                              + "."),
    check_only: bool = typer.Option(False, "--check",
                                    help="Write nothing; exit 1 if files are stale or missing."),
    op_host: bool = typer.Option(False, "--op-host",
                                 help="Also write op_host/<op>.cpp: the complete msOpGen host "
                                      "file (OpDef, InferShape, InferDataType, TilingFunc)."),
    socs: list[str] = typer.Option([], "--soc", metavar="SOC",
                                   help="AddConfig SoC for --op-host (repeatable; default: "
                                        "the profile's, e.g. ascend910b)."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No 'wrote' lines, summary or leftover notes."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print {files, written | stale, leftovers} as JSON."),
    force: bool = typer.Option(False, "--force",
                               help="Emit a spec `check` refuses (its message becomes a "
                                    "warning)."),
    replace: bool = typer.Option(False, "--replace",
                                 help="Overwrite selection code emitted for profiles these "
                                      "results files do not cover."),
    spec_file: Path | None = typer.Option(None, "--spec", metavar="SPEC",
                                          help="Exit 2 unless the results were tuned from this "
                                               "spec file as it reads now."),
    from_db: str | None = typer.Option(None, "--from-db", metavar="SPEC",
                                       help="Render the tuning database's winners of SPEC "
                                            "(with --hw and --shapes / --shape) instead of "
                                            "a results file."),
    hw_ref: str | None = typer.Option(None, "--hw", metavar="PROFILE",
                                      help="With --from-db: the chip."),
    shapes_files: list[Path] = typer.Option([], "--shapes", metavar="FILE",
                                            help="With --from-db: YAML, JSON or CSV shapes."),
    shape: list[str] = typer.Option([], "--shape", metavar="K=V,...",
                                    help="With --from-db: one shape (repeatable)."),
    db_url: str | None = db_option(),
) -> None:
    """Render AscendC tiling headers, host selection code and kernel constants."""
    with tempfile.TemporaryDirectory(prefix="ascend-tune-emit-") as folder:
        if from_db is not None:
            if results_paths:
                raise AscendTuneError("give RESULTS files or --from-db SPEC, not both")
            results_paths = [results_for_emit(from_db, hw_ref, shapes_files, shape, db_url,
                                              Path(folder))]
        elif not results_paths:
            raise AscendTuneError("give RESULTS files (or --from-db SPEC)")
        elif hw_ref is not None or shapes_files or shape:
            raise AscendTuneError("--hw, --shapes and --shape go with --from-db")
        _emit(results_paths, out_dir, style, check_only, op_host, socs, quiet, as_json,
              replace, spec_file, force)


def _emit(results_paths: list[Path], out_dir: Path, style: str, check_only: bool,
          op_host: bool, socs: list[str], quiet: bool, as_json: bool, replace: bool,
          spec_file: Path | None, force: bool) -> None:
    plan = api.prepare_emit(results_paths, out_dir, style=style, op_host=op_host, socs=socs,
                            replace=replace, force=force)
    if spec_file is not None:
        build.check_results_spec(list(results_paths), spec_file)
    for warning in plan.warnings:
        console.warn(warning)
    files = plan.files
    op_host = plan.op_host  # also when an earlier emit wrote it
    extra = plan.leftovers
    if check_only:
        reports = plan.stale()
        if as_json:
            _print_json({"files": sorted(str(out_dir / r) for r in files),
                         "stale": [r.split("\n", 1)[0] for r in reports],
                         "leftovers": [str(out_dir / r) for r in extra]})
            if reports:
                raise ExitWith(1)
            return
        for r in reports:
            console.line(r)
        for rel in extra:
            console.line(f"leftover: {out_dir / rel} (generated earlier, not by these options; "
                         "delete it if the project no longer uses it)")
        if reports:
            fix = ["ascend-tune", "emit", *map(str, results_paths), "-o", str(out_dir)]
            fix += ["--style", style] if style != "macro" else []
            fix += ["--op-host"] if op_host else []
            fix += [a for s in socs for a in ("--soc", s)]
            console.line(f"{len(reports)} of {len(files)} file(s) stale or missing in {out_dir}; "
                         f"fix: {' '.join(fix)}")
            raise ExitWith(1)
        if not quiet:
            console.line(f"{len(files)} file(s) up to date in {out_dir}"
                         + (f", {len(extra)} leftover" if extra else ""))
        return
    removed: list[Path] = []
    written = plan.write(removed)
    for temp in removed:  # data-loss-free housekeeping, but say so even with --quiet
        console.note(f"removed {temp}, a temp file left by an emit that was killed")
    if as_json:
        _print_json({"files": sorted(str(out_dir / r) for r in files), "written": written,
                     "leftovers": [str(out_dir / r) for r in extra]})
        return
    if not quiet:
        for path in written:
            console.line(f"wrote {path}")
        for rel in extra:
            console.warn(f"leftover: {out_dir / rel} was generated earlier and is not written "
                         "by these options; delete it if the project no longer uses it")
        console.line(f"{len(files)} file(s) in {out_dir}, {len(written)} changed")


def _print_json(doc: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")
