"""The options of `ascend-tune search`, one Annotated alias each (the command's signature
names them; the help text lives here)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ascend_tune import api

Spec = Annotated[str, typer.Argument(metavar="SPEC", help="Spec file or built-in name.")]
Chip = Annotated[str, typer.Option("--hw", metavar="CHIP",
                                   help="Hardware profile file or built-in name.")]

# What to tune: shape files, single shapes, ranges the tuner samples itself.
ShapeFiles = Annotated[list[Path] | None, typer.Option(
    "--shapes", help="YAML, JSON or CSV shapes; an entry may be a range (M: \"1:8192\" or "
                     "M: {min: 1, max: 8192}).")]
Shapes = Annotated[list[str] | None, typer.Option(
    "--shape", metavar="K=V,...", help="One shape as K=V,... (repeatable).")]
ShapeRanges = Annotated[list[str] | None, typer.Option(
    "--shape-range", metavar="RANGE",
    help="Shapes the tuner picks itself, e.g. M=1:8192,N=4096,K=4096 (repeatable): a log grid, "
         "then rounds of unseen shapes until the dispatch's held-out mean regret is within "
         "--target.")]
Target = Annotated[float, typer.Option(
    "--target", help="With --shape-range: held-out mean dispatched / optimum latency to reach.")]
MaxShapes = Annotated[int, typer.Option(
    "--max-shapes", help="With --shape-range: shapes to tune at most per run.")]

# How each shape is searched.
Strategy = Annotated[str, typer.Option(
    "--strategy", metavar="STRATEGY",
    help="ga | ils | exhaustive | random | auto (exhaustive where the exact search is cheaper "
         "than the heuristic, else the memetic ga).")]
Budget = Annotated[int, typer.Option(
    "--budget", help="Configurations looked at per shape (scored or ruled out).")]
Seed = Annotated[int, typer.Option("--seed", help="Random seed (0 .. 2**63-1).")]
Jobs = Annotated[int, typer.Option("--jobs", help="Processes (results do not depend on it).")]
TopK = Annotated[int, typer.Option(
    "--top-k", metavar="K", help="Keep the K best distinct configurations per shape as "
                                 "'candidates' (for `measure`); 1 keeps the winner only.")]
Executor = Annotated[str, typer.Option(
    "--executor", metavar="EXECUTOR",
    help="local (--jobs processes) | ray (spread the shapes over a Ray cluster).")]
Address = Annotated[str | None, typer.Option(
    "--address", metavar="ADDRESS",
    help="Ray cluster address for --executor ray (default: start a local one).")]

# The results file.
Output = Annotated[Path | None, typer.Option(
    "-o", "--output",
    help="Results file (also the cache); without it the results are printed, not saved.")]
Fresh = Annotated[bool, typer.Option("--fresh",
                                     help="Retune every shape, reusing nothing from -o.")]
Prune = Annotated[bool, typer.Option(
    "--prune", help="Drop entries of -o whose shape is not in this run's list (by default "
                    "they are kept: the run-time dispatch uses every tuned shape).")]
Locked = Annotated[bool, typer.Option(
    "--locked", help="CI: exit 1 if any shape would be tuned (or pruned, with --prune); write "
                     "nothing.")]

# What is printed.
AsJson = Annotated[bool, typer.Option("--json", help="Print the results as JSON.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q",
                                     help="No progress lines, notes or summary table.")]
ProgressBar = Annotated[bool, typer.Option(
    "--progress", help="The progress bar (shapes done, time left) on stderr even where it is "
                       "no terminal, instead of a line per shape.")]
DryRun = Annotated[bool, typer.Option("--dry-run",
                                      help="Print search spaces and baselines; tune nothing.")]

# The spec's attributes, and a spec `check` refuses.
Attrs = Annotated[list[str] | None, typer.Option(
    "--attr", metavar="ATTR=VALUE",
    help="An operator attribute's value (repeatable; the others keep their default): checked "
         "and recorded.")]
Force = Annotated[bool, typer.Option(
    "--force", help="Tune a spec `check` refuses (its message becomes a warning).")]

DEFAULT_BUDGET = api.DEFAULT_BUDGET
DEFAULT_SEED = api.DEFAULT_SEED
