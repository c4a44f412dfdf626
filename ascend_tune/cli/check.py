"""`ascend-tune check`: validate specs and hardware profiles."""

from __future__ import annotations

from pathlib import Path

import typer

from ascend_tune import console
from ascend_tune.cli import ExitWith, app


@app.command()
def check(files: list[Path] = typer.Argument(..., metavar="FILE...",
                                             help="Spec and profile YAML files.")) -> None:
    """Validate specs and hardware profiles: one line per problem, exit 2 if any."""
    from ascend_tune.checking import check_files

    problems = check_files(files)
    for p in problems:
        console.error(p)
    if problems:
        raise ExitWith(2)
    console.line(f"{len(files)} file(s) valid")
