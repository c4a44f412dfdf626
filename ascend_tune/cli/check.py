"""`ascend-tune check`: validate specs and hardware profiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.cli import console
from ascend_tune.cli.app import ExitWith, app


@app.command()
def check(files: list[Path] = typer.Argument(..., metavar="FILE...",
                                             help="Spec and profile YAML files."),
          as_json: bool = typer.Option(False, "--json",
                                       help="Print {files, problems} as JSON (exit codes as "
                                            "without it).")) -> None:
    """Validate specs and hardware profiles: one line per problem, exit 2 if any."""
    notes: list[str] = []
    problems = api.check(files, notes)
    if as_json:
        sys.stdout.write(json.dumps({"files": [str(f) for f in files], "problems": problems,
                                     "notes": notes}, indent=1) + "\n")
        if problems:
            raise ExitWith(2)
        return
    for p in problems:
        console.error(p)
    if problems:
        raise ExitWith(2)
    for note in notes:  # information only; with problems the error lines stand alone
        console.note(note)
    console.line(f"{len(files)} file(s) valid")
