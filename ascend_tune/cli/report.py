"""`ascend-tune report`: one self-contained HTML page about results files."""

from __future__ import annotations

from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.cli import console
from ascend_tune.cli.app import app
from ascend_tune.cli.db import database, db_option, no_db_option


@app.command()
def report(
    results_paths: list[Path] = typer.Argument(..., metavar="RESULTS...",
                                               help="Results files of search (one section "
                                                    "each)."),
    output: Path = typer.Option(..., "-o", "--output", help="The HTML file to write."),
    measurements: list[Path] = typer.Option([], "--measurements",
                                            help="Measured times (as for validate; "
                                                 "repeatable): adds a fidelity section for "
                                                 "the first RESULTS file's spec and profile."),
    manifest: Path | None = typer.Option(None, "--manifest",
                                         help="YAML: config, free, files, shapes, where."),
    where: str | None = typer.Option(None, "--where", metavar="COL=VAL,..",
                                     help="Use rows with COLUMN=VALUE,..."),
    chart_shapes: int = typer.Option(api.DEFAULT_CHART_SHAPES, "--charts",
                                     help="Per-shape charts for the N shapes with the longest "
                                          "tuned latency per operator; the table lists all."),
    dispatch_shapes: int = typer.Option(16, "--dispatch-shapes",
                                        help="Unseen shapes per operator the run-time dispatch "
                                             "is judged on (each tuned once); 0: none."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line."),
    db_url: str | None = db_option(),
    no_db: bool = no_db_option(),
) -> None:
    """Write a self-contained HTML report: shapes, pipes, roofline, search history,
    sensitivity, the run-time dispatch on unseen shapes, the model against measurements, and
    what the tuning database holds of these operators."""
    built = api.report(results_paths, output, measurements=measurements, manifest=manifest,
                       where=where, chart_shapes=chart_shapes,
                       dispatch_shapes=dispatch_shapes,
                       db=database(db_url, no_db, quiet))
    if not quiet:
        if built.skipped_rows:
            console.warn(f"fidelity: skipped {len(built.skipped_rows)} measurement row(s); "
                         "the page lists why")
        console.line(f"wrote {output}: {built.operators} operator(s), {built.shapes} shape(s), "
                     f"{built.charts} chart(s)")
